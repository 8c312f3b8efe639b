#include "client/output.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "client/json_writer.h"

namespace gpubench::client {
namespace {

bool LooksNumeric(const std::string& cell) {
  if (cell.empty() || cell == "-") return false;
  const char c = cell[0];
  return absl::ascii_isdigit(static_cast<unsigned char>(c)) ||
         ((c == '-' || c == '+' || c == '.') && cell.size() > 1 &&
          absl::ascii_isdigit(static_cast<unsigned char>(cell[1])));
}

// A decimal number as a spreadsheet reads one: [+-]digits[.digits][e[+-]digits].
bool IsPlainNumber(std::string_view s) {
  size_t i = 0;
  auto digits = [&] {
    const size_t from = i;
    while (i < s.size() && absl::ascii_isdigit(static_cast<unsigned char>(s[i]))) ++i;
    return i - from;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  size_t mantissa = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// A spreadsheet opening the file runs a cell that starts with one of these
// as a formula (OWASP's CSV injection), so such a cell gets a leading quote,
// as OWASP advises, unless it is a plain number (-1.5) or the tables' "-".
std::string CsvCell(const std::string& cell) {
  const bool formula = !cell.empty() && std::string_view("=+-@\t\r").find(cell[0]) !=
                                            std::string_view::npos &&
                       cell != "-" && !IsPlainNumber(cell);
  if (!formula && cell.find_first_of(",\"\n\r") == std::string::npos) return cell;
  return absl::StrCat("\"", formula ? "'" : "", absl::StrReplaceAll(cell, {{"\"", "\"\""}}),
                      "\"");
}

// A Markdown cell as text: HTML and Markdown's own syntax (links, images,
// code, escapes) are escaped, and so is '|', which would end the cell.
std::string MarkdownCell(const std::string& cell) {
  std::string out;
  out.reserve(cell.size());
  for (char c : cell) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '\\': case '|': case '`': case '[': case ']':
        out += '\\';
        out += c;
        break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Format> ParseFormat(const std::string& name) {
  if (name == "table" || name.empty()) return Format::kTable;
  if (name == "json") return Format::kJson;
  if (name == "csv") return Format::kCsv;
  if (name == "markdown" || name == "md") return Format::kMarkdown;
  if (name == "gbench") return Format::kGbench;
  if (name == "spec") return Format::kSpec;
  return absl::InvalidArgumentError(absl::StrCat(
      "--output: \"", name, "\" is not one of table, json, csv, markdown, gbench, spec"));
}

namespace {

const std::string& CellOf(const std::vector<std::string>& row, size_t i) {
  static const std::string kEmpty;
  return i < row.size() ? row[i] : kEmpty;
}

// CSV and Markdown: a line per row, each cell escaped, between open and
// close and joined by separator; Markdown's rule under the header.
void PrintDelimited(const Table& table, std::string (*escape)(const std::string&),
                    const char* open, const char* separator, const char* close, bool rule,
                    std::ostream& out) {
  const size_t columns = table.header.size();
  auto line = [&](const std::vector<std::string>& row) {
    std::vector<std::string> cells;
    for (size_t i = 0; i < columns; ++i) cells.push_back(escape(CellOf(row, i)));
    out << open << absl::StrJoin(cells, separator) << close << "\n";
  };
  line(table.header);
  if (rule) {
    out << "|";
    for (size_t i = 0; i < columns; ++i) out << " --- |";
    out << "\n";
  }
  for (const auto& row : table.rows) line(row);
}

void PrintJson(const Table& table, std::ostream& out) {
  JsonWriter json(out);
  json.Array();
  for (const auto& row : table.rows) {
    json.Object();
    for (size_t i = 0; i < table.header.size(); ++i) {
      json.Key(table.header[i]).String(CellOf(row, i));
    }
    json.End();
  }
  json.End();
}

// Columns padded to their widest cell; numeric ones right-aligned.
void PrintAligned(const Table& table, std::ostream& out) {
  const size_t columns = table.header.size();
  std::vector<size_t> width(columns, 0);
  std::vector<bool> numeric(columns, true);
  for (size_t i = 0; i < columns; ++i) width[i] = table.header[i].size();
  for (const auto& row : table.rows) {
    for (size_t i = 0; i < columns; ++i) {
      const std::string& c = CellOf(row, i);
      width[i] = std::max(width[i], c.size());
      if (!c.empty() && c != "-" && !LooksNumeric(c)) numeric[i] = false;
    }
  }
  auto line = [&](const std::vector<std::string>& row) {
    std::string text;
    for (size_t i = 0; i < columns; ++i) {
      const std::string& c = CellOf(row, i);
      const std::string pad(width[i] - std::min(width[i], c.size()), ' ');
      const bool last = i + 1 == columns;
      text += numeric[i] ? pad + c : (last ? c : c + pad);
      if (!last) text += "  ";
    }
    out << text << "\n";
  };
  line(table.header);
  for (const auto& row : table.rows) line(row);
}

}  // namespace

std::string Interval(double low, double high, int decimals) {
  if (!(high > 0) || !std::isfinite(high) || !std::isfinite(low)) return "-";
  return absl::StrFormat("%.*f-%.*f", decimals, low, decimals, high);
}

void PrintTable(const Table& raw, Format format, std::ostream& out) {
  // JSON escapes on its own; the other formats print cells as they are.
  if (format == Format::kJson) return PrintJson(raw, out);
  Table table;
  table.header = raw.header;
  for (const auto& row : raw.rows) {
    std::vector<std::string>& cells = table.rows.emplace_back();
    for (const std::string& c : row) cells.push_back(Printable(c));
  }
  switch (format) {
    case Format::kCsv:
      return PrintDelimited(table, CsvCell, "", ",", "", /*rule=*/false, out);
    case Format::kMarkdown:
      return PrintDelimited(table, MarkdownCell, "| ", " | ", " |", /*rule=*/true, out);
    default:  // kTable; kGbench is not a table: the commands that take it print runs
      return PrintAligned(table, out);
  }
}

}  // namespace gpubench::client
