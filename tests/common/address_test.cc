// Which listen and fleet addresses count as loopback: the daemon refuses
// plaintext with tokens, and the CLI refuses to send a token in plaintext,
// anywhere else.
#include "common/address.h"

#include <gtest/gtest.h>

namespace gpubench {
namespace {

TEST(Address, LoopbackIsDecidedByTheAddressNotTheName) {
  for (const char* address : {"127.0.0.1:50051", "127.255.255.254:1", "[::1]:50051",
                              "[::ffff:127.0.0.1]:80", "unix:/run/gpubench.sock",
                              "unix-abstract:gpubench"}) {
    EXPECT_TRUE(IsLoopbackAddress(address)) << address;
  }
  // Names that only look like loopback resolve wherever their owner likes:
  // the HTTP port once served tokens in plaintext on another address so.
  for (const char* address :
       {"127.evil.example:8080", "127.0.0.1.nip.io:8080", "localhost.evil.example:80",
        "127.0.0.1.:80", "0.0.0.0:50051", "[::]:50051", "128.0.0.1:80", "10.0.0.1:50051",
        "[::2]:80", "[::ffff:10.0.0.1]:80", "gpu-host:50051"}) {
    EXPECT_FALSE(IsLoopbackAddress(address)) << address;
  }
}

// "localhost" is a name too: it counts because this host's resolver
// (/etc/hosts) maps it to loopback addresses only.
TEST(Address, LocalhostCountsWhereItResolvesToLoopback) {
  EXPECT_TRUE(IsLoopbackAddress("localhost:50051"));
  EXPECT_TRUE(IsLoopbackAddress("LocalHost:50051"));
}

}  // namespace
}  // namespace gpubench
