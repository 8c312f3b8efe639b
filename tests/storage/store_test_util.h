// What the store's tests share: a fresh file path and a parsed predicate.
#ifndef GPUBENCH_TESTS_STORAGE_STORE_TEST_UTIL_H_
#define GPUBENCH_TESTS_STORAGE_STORE_TEST_UTIL_H_

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "common/filter.h"

namespace gpubench::storage {

inline ConfigPredicate Predicate(const std::string& text) {
  auto p = ParseConfigPredicate(text, "config_equals");
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : ConfigPredicate{};
}

// A path in the test's temporary folder with no database (nor WAL) at it.
inline std::string TempPath(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::remove(path.c_str());
  std::remove((path + "-wal").c_str());
  std::remove((path + "-shm").c_str());
  return path;
}

}  // namespace gpubench::storage

#endif  // GPUBENCH_TESTS_STORAGE_STORE_TEST_UTIL_H_
