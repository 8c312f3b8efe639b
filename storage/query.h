// Listings: pages with keyset tokens, and WHERE clauses built from filters
// with their bound parameters.
#ifndef GPUBENCH_STORAGE_QUERY_H_
#define GPUBENCH_STORAGE_QUERY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/filter.h"
#include "storage/sqlite.h"

namespace gpubench::storage {

// One page of a listing. next_page_token is empty on the last page.
template <typename T>
struct Page {
  std::vector<T> items;
  std::string next_page_token;
};

// page_size 0 is default_size; more than 1000 is 1000; negative is
// InvalidArgument naming "page_size".
absl::StatusOr<int> PageSize(int requested, int default_size);

// Keyset page tokens: "<ns>:<id>" of the last item returned. A token this
// store did not issue is InvalidArgument naming "page_token".
std::string PageToken(int64_t ns, const std::string& id);

// Conditions joined with AND, and the values bound to their '?'s in order.
class Conditions {
 public:
  void Add(std::string condition) { where_.push_back(std::move(condition)); }
  void Text(std::string condition, std::string value);
  void Int(std::string condition, int64_t value);
  // "column IN (?,...)" over enum values; nothing when the list is empty.
  template <typename E>
  void In(const std::string& column, const std::vector<E>& values) {
    if (values.empty()) return;
    std::string marks;
    for (E v : values) {
      marks += marks.empty() ? "?" : ",?";
      params_.push_back({Param::kInt, "", static_cast<int64_t>(v), 0});
    }
    Add(column + " IN (" + marks + ")");
  }
  // Rows after the page token's (ns, id) in (ns_column DESC, id_column
  // DESC) order; nothing for an empty token. InvalidArgument naming
  // "page_token" for a token this store did not issue.
  absl::Status After(const std::string& page_token, const std::string& ns_column,
                     const std::string& id_column);
  // json_extract(<json_column>, '$.path') = the predicate's value.
  void Config(const std::string& json_column, const ConfigPredicate& p);

  // " WHERE a AND b", or "" when there are none.
  std::string Where() const;
  // Binds the values from parameter 1 on; returns the next free index.
  int Bind(Statement& s) const;

 private:
  struct Param {
    enum Kind { kText, kInt, kReal } kind;
    std::string text;
    int64_t i = 0;
    double d = 0;
  };
  std::vector<std::string> where_;
  std::vector<Param> params_;
};

// Reads a listing's rows into *page: the statement selects up to limit + 1
// rows; read(&item, &ns, &id) reads one with its keyset position. A row
// beyond limit sets next_page_token to the last item's position.
template <typename T, typename ReadRow>
absl::Status ReadPage(Statement& s, int limit, ReadRow read, Page<T>* page) {
  std::string last;
  return s.ForEach([&]() -> absl::Status {
    if (static_cast<int>(page->items.size()) == limit) {
      page->next_page_token = last;
      return absl::OkStatus();
    }
    T item;
    int64_t ns = 0;
    std::string id;
    if (auto status = read(&item, &ns, &id); !status.ok()) return status;
    last = PageToken(ns, id);
    page->items.push_back(std::move(item));
    return absl::OkStatus();
  });
}

}  // namespace gpubench::storage

#endif  // GPUBENCH_STORAGE_QUERY_H_
