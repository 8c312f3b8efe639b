// Loads exported runs into a PostgreSQL table through libpq. The table is
// made, and given the columns a newer gpubench exports, where missing; each
// batch goes through COPY into a temporary table and one INSERT ... ON
// CONFLICT (host_id, run_id) that rewrites only the rows that differ, so
// that exporting the same runs again adds nothing.
#ifndef GPUBENCH_CLIENT_POSTGRES_SINK_H_
#define GPUBENCH_CLIENT_POSTGRES_SINK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "client/run_columns.h"

struct pg_conn;  // libpq's PGconn

namespace gpubench::client {

// What the loads did, row by row.
struct LoadCounts {
  int64_t inserted = 0;   // runs the table did not have
  int64_t updated = 0;    // runs it had with other values (a run that ended since)
  int64_t unchanged = 0;  // runs it had as they are
};

class PostgresSink {
 public:
  // Connects to url (postgresql://USER@HOST:PORT/DB; a password is better
  // in PGPASSWORD or ~/.pgpass than in the URL, which other users see in
  // the process list; errors print it as ***) and makes `table` with the
  // columns of
  // `columns` (ExportColumns of any run). The table name is letters, digits
  // and '_' (InvalidArgument naming --table otherwise); a failed connection
  // is Unavailable with libpq's message. Unimplemented where this gpubench
  // was built without libpq.
  static absl::StatusOr<std::unique_ptr<PostgresSink>> Open(const std::string& url,
                                                           const std::string& table,
                                                           const std::vector<Cell>& columns);
  ~PostgresSink();
  PostgresSink(const PostgresSink&) = delete;
  PostgresSink& operator=(const PostgresSink&) = delete;

  // Adds a row (ExportColumns of a run, in the same column order as
  // Open's) to the next Flush.
  void AddRow(const std::vector<Cell>& row);
  // Loads the rows added since the last Flush in one transaction, and adds
  // to counts().
  absl::Status Flush();
  const LoadCounts& counts() const { return counts_; }

 private:
  PostgresSink(pg_conn* conn, std::string table, std::vector<std::string> names)
      : conn_(conn), table_(std::move(table)), names_(std::move(names)) {}

  pg_conn* conn_;
  const std::string table_;
  const std::vector<std::string> names_;
  std::string copy_;  // the rows added, in COPY's text format
  int64_t rows_ = 0;
  LoadCounts counts_;
};

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_POSTGRES_SINK_H_
