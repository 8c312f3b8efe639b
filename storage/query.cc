#include "storage/query.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace gpubench::storage {

absl::StatusOr<int> PageSize(int requested, int default_size) {
  if (requested < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_size: must be >= 0, got ", requested));
  }
  return requested == 0 ? default_size : std::min(requested, 1000);
}

std::string PageToken(int64_t ns, const std::string& id) { return absl::StrCat(ns, ":", id); }


void Conditions::Text(std::string condition, std::string value) {
  Add(std::move(condition));
  params_.push_back({Param::kText, std::move(value), 0, 0});
}

void Conditions::Int(std::string condition, int64_t value) {
  Add(std::move(condition));
  params_.push_back({Param::kInt, "", value, 0});
}

absl::Status Conditions::After(const std::string& token, const std::string& ns_column,
                               const std::string& id_column) {
  if (token.empty()) return absl::OkStatus();
  const size_t colon = token.find(':');
  int64_t ns;
  if (colon == std::string::npos || !absl::SimpleAtoi(token.substr(0, colon), &ns) ||
      colon + 1 >= token.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("page_token: \"", token, "\" is not a token this daemon issued"));
  }
  Add(absl::StrCat("(", ns_column, ", ", id_column, ") < (?, ?)"));
  params_.push_back({Param::kInt, "", ns, 0});
  params_.push_back({Param::kText, token.substr(colon + 1), 0, 0});
  return absl::OkStatus();
}

void Conditions::Config(const std::string& json_column, const ConfigPredicate& p) {
  Add(absl::StrCat("json_extract(", json_column, ", '$.", p.path, "') = ?"));
  using Kind = ConfigPredicate::Kind;
  switch (p.kind) {
    case Kind::kInt:
    case Kind::kBool:
      params_.push_back({Param::kInt, "", p.int_value, 0});
      break;
    case Kind::kReal:
      params_.push_back({Param::kReal, "", 0, p.real_value});
      break;
    case Kind::kInt64:  // the JSON mapping writes 64-bit integers as strings
    case Kind::kEnum:   // and enums by name
    case Kind::kText:
      params_.push_back({Param::kText, p.text, 0, 0});
      break;
  }
}

std::string Conditions::Where() const {
  return where_.empty() ? "" : absl::StrCat(" WHERE ", absl::StrJoin(where_, " AND "));
}

int Conditions::Bind(Statement& s) const {
  int i = 1;
  for (const Param& p : params_) {
    if (p.kind == Param::kText) s.Text(i, p.text);
    if (p.kind == Param::kInt) s.Int(i, p.i);
    if (p.kind == Param::kReal) s.Real(i, p.d);
    ++i;
  }
  return i;
}

}  // namespace gpubench::storage
