// What the spec tests share.
#ifndef GPUBENCH_TESTS_COMMON_SPEC_TEST_UTIL_H_
#define GPUBENCH_TESTS_COMMON_SPEC_TEST_UTIL_H_

#include <string>

#include "common/spec.h"

namespace gpubench::spec_test {

// The first error of a JSON spec, parsed and then validated; "" if none.
inline std::string ErrorOf(const std::string& json) {
  auto spec = ParseJobSpecJson(json);
  if (!spec.ok()) return std::string(spec.status().message());
  auto runs = ExpandSweep(*spec);
  return runs.ok() ? "" : std::string(runs.status().message());
}

}  // namespace gpubench::spec_test

#endif  // GPUBENCH_TESTS_COMMON_SPEC_TEST_UTIL_H_
