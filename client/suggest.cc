#include "client/suggest.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace gpubench::client {
namespace {

// Levenshtein distance, one row at a time.
size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1])});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string DidYouMean(const std::string& word, const std::vector<std::string>& known) {
  const std::string* best = nullptr;
  size_t best_distance = 0;
  for (const std::string& k : known) {
    const size_t d = EditDistance(word, k);
    if (best == nullptr || d < best_distance) {
      best = &k;
      best_distance = d;
    }
  }
  if (best == nullptr || best_distance == 0 || best_distance > 2 ||
      2 * best_distance >= word.size()) {
    return "";
  }
  return absl::StrCat("; did you mean \"", *best, "\"?");
}

}  // namespace gpubench::client
