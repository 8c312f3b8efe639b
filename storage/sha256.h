// SHA-256 (FIPS 180-4), for model uploads and stored traces.
#ifndef GPUBENCH_STORAGE_SHA256_H_
#define GPUBENCH_STORAGE_SHA256_H_

#include <string>

#include "absl/strings/string_view.h"

namespace gpubench::storage {

// The digest of data as 64 lower-case hex digits.
std::string Sha256Hex(absl::string_view data);

}  // namespace gpubench::storage

#endif  // GPUBENCH_STORAGE_SHA256_H_
