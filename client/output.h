// Tabular output for the CLI: one Table printed as an aligned text table,
// CSV (RFC 4180) or Markdown. JSON output uses the protobuf JSON mapping
// instead (MessageToJson), so scripts get the API's own field names.
#ifndef GPUBENCH_CLIENT_OUTPUT_H_
#define GPUBENCH_CLIENT_OUTPUT_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace gpubench::client {

enum class Format { kTable, kJson, kCsv, kMarkdown };

// "table", "json", "csv" or "markdown"; InvalidArgument naming --output.
absl::StatusOr<Format> ParseFormat(const std::string& name);

// Rows of cells under a header. Cells that look numeric are right-aligned in
// the text table.
struct Table {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
};

// Prints table in format (kJson is not a table format: it prints CSV's
// cells as an array of objects keyed by the header).
void PrintTable(const Table& table, Format format, std::ostream& out);

}  // namespace gpubench::client

#endif  // GPUBENCH_CLIENT_OUTPUT_H_
