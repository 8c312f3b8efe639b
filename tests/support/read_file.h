// A whole file's bytes, for the tests that read what was written.
#ifndef GPUBENCH_TESTS_SUPPORT_READ_FILE_H_
#define GPUBENCH_TESTS_SUPPORT_READ_FILE_H_

#include <fstream>
#include <iterator>
#include <string>

namespace gpubench::testing_support {

// The file's bytes; "" where it cannot be read.
inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace gpubench::testing_support

#endif  // GPUBENCH_TESTS_SUPPORT_READ_FILE_H_
