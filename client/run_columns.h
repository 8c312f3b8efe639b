// A run as flat, typed columns: the CSV's (show and runs --output csv) and
// the export's (JSON Lines, PostgreSQL), one definition for both.
#ifndef GPUBENCH_CLIENT_RUN_COLUMNS_H_
#define GPUBENCH_CLIENT_RUN_COLUMNS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "gpubench/v1/result.pb.h"
#include "report/figures.h"

namespace gpubench::client {

enum class ColumnType { kText, kNumber, kInteger, kBool, kTime };

// One column's value in one run. Absent where the run has no such figure
// (a failed run's throughput, a CPU run's GPU power): empty in CSV, null in
// JSON and SQL, never a made-up zero.
struct Cell {
  std::string name;
  ColumnType type = ColumnType::kText;
  bool present = false;
  std::string text;    // kText; kTime as RFC 3339
  double number = 0;   // kNumber, kBool (0 or 1)
  int64_t integer = 0; // kInteger
};

// Whether the run has figures (it succeeded, or was stopped after some).
using report::HasFigures;

// What else a reader of the run should know, in words ("412.3 GB/s;
// compiled in 3.1 s; regressed x0.912 vs history").
std::string RunNotes(const v1::Run& r);

// The CSV's columns of r, in order: index, run_id, config, device, state,
// every figure of report/figures.h's table, notes. The same names and
// types for every run.
std::vector<Cell> RunColumns(const v1::Run& r);

// What the export writes of r measured on `host` (as the CLI named it):
// host, host_id, job_id, workload, mode, precision, batch_size, start and
// end time, the CSV's columns, then the fingerprint's fields as fp_NAME
// (fp_driver_version, fp_power_limit_w, ...). host_id falls back to host
// where the run has none, so that (host_id, run_id) is always a key.
std::vector<Cell> ExportColumns(const v1::Run& r, const std::string& host);

// A cell as CSV text: numbers in the fewest digits that read back, empty
// where absent.
std::string CsvText(const Cell& c);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_RUN_COLUMNS_H_
