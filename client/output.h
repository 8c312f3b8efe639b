// Tabular output for the CLI: one Table printed as an aligned text table,
// CSV (RFC 4180) or Markdown. JSON output uses the protobuf JSON mapping
// instead (MessageToJson), so scripts get the API's own field names.
#ifndef GPUBENCH_CLIENT_OUTPUT_H_
#define GPUBENCH_CLIENT_OUTPUT_H_

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/printable.h"  // Printable: every cell and message goes through it

namespace gpubench::client {

// kGbench is Google Benchmark's JSON (client/gbench.h), for commands that
// print runs; kSpec is a job's spec file, for show alone.
enum class Format { kTable, kJson, kCsv, kMarkdown, kGbench, kSpec };

// "table", "json", "csv", "markdown", "gbench" or "spec"; InvalidArgument
// naming --output.
absl::StatusOr<Format> ParseFormat(const std::string& name);

// Rows of cells under a header. Cells that look numeric are right-aligned in
// the text table.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// Prints table in format; text, CSV and Markdown cells are Printable (kJson
// is not a table format: it prints the cells as an array of objects keyed by
// the header). A CSV cell that a spreadsheet would run as a formula (it starts
// with =, +, -, @, tab or CR and is not a number) starts with a quote; a
// Markdown cell has HTML, '|' and link syntax escaped.
void PrintTable(const Table& table, Format format, std::ostream& out);

// A 95% interval as a cell: "low-high" with `decimals` decimals, or "-"
// where there is no finite interval.
std::string Interval(double low, double high, int decimals);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_OUTPUT_H_
