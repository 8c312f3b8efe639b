// SHA-256 (FIPS 180-4), for model uploads and stored traces, and its HMAC
// for the proof of a pair across hosts.
#ifndef GPUBENCH_COMMON_SHA256_H_
#define GPUBENCH_COMMON_SHA256_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace gpubench {

// A streaming digest: Update with the data in pieces, then HexDigest once.
// Not thread-safe.
class Sha256 {
 public:
  Sha256();
  void Update(absl::string_view data);
  // 64 lower-case hex digits. Call once; the object is spent afterwards.
  std::string HexDigest();

 private:
  uint32_t h_[8];
  unsigned char buffer_[64];
  size_t buffered_ = 0;
  uint64_t total_bytes_ = 0;
};

// The digest of data as 64 lower-case hex digits.
std::string Sha256Hex(absl::string_view data);

// HMAC-SHA256 (RFC 2104) of data with key, as 64 lower-case hex digits.
std::string HmacSha256Hex(absl::string_view key, absl::string_view data);

}  // namespace gpubench

#endif  // GPUBENCH_COMMON_SHA256_H_
