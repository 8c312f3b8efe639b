// One side of a pair across hosts: the rank a RunHostPair request gets, and
// what a request from outside may not make the daemon do (listen without
// --pair-address, connect to a name rather than an address, join with a
// secret of the wrong size), each refused naming its field.
#include "server/host_pairs.h"

#include <gtest/gtest.h>

#include <string>

namespace gpubench::server {
namespace {

v1::RunHostPairRequest Open() {
  v1::RunHostPairRequest r;
  r.set_side(v1::RunHostPairRequest::SIDE_OPEN);
  r.set_peer("b");
  return r;
}

TEST(HostPairsTest, AnOpenListensOnThePairAddressWithAFreshSecret) {
  auto first = PairRankOf(Open(), "10.0.0.1:29500", "cpu");
  auto second = PairRankOf(Open(), "10.0.0.1:29500", "cpu");
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(first->rank(), 0);
  EXPECT_EQ(first->world_size(), 2);
  EXPECT_EQ(first->devices_size(), 2);
  EXPECT_EQ(first->host_pair().store_address(), "10.0.0.1:29500");
  EXPECT_EQ(first->host_pair().local_address(), "10.0.0.1");
  EXPECT_EQ(first->host_pair().secret().size(), 32u);
  EXPECT_NE(first->host_pair().secret(), second->host_pair().secret());
}

TEST(HostPairsTest, AJoinConnectsToTheOpenersStore) {
  v1::RunHostPairRequest join;
  join.set_side(v1::RunHostPairRequest::SIDE_JOIN);
  join.set_peer("a");
  join.set_store_address("10.0.0.1:29500");
  join.set_secret(std::string(32, 's'));
  auto rank = PairRankOf(join, "10.0.0.2:29500", "cpu");
  ASSERT_TRUE(rank.ok()) << rank.status();
  EXPECT_EQ(rank->rank(), 1);
  EXPECT_EQ(rank->host_pair().store_address(), "10.0.0.1:29500");
  EXPECT_EQ(rank->host_pair().local_address(), "10.0.0.2");
  EXPECT_EQ(rank->host_pair().secret(), std::string(32, 's'));
}

TEST(HostPairsTest, WhatARequestMayNotMakeTheDaemonDoIsRefusedNamingTheField) {
  auto off = PairRankOf(Open(), "", "cpu");
  EXPECT_EQ(off.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(off.status().message().find("--pair-address"), std::string::npos);
  v1::RunHostPairRequest join;
  join.set_side(v1::RunHostPairRequest::SIDE_JOIN);
  join.set_peer("a");
  join.set_secret(std::string(32, 's'));
  for (const char* store : {"", "example.com:29500", "10.0.0.1", "10.0.0.1:0", "10.0.0.1:70000"}) {
    join.set_store_address(store);
    auto refused = PairRankOf(join, "10.0.0.2:29500", "cpu");
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << store;
    EXPECT_EQ(refused.status().message().rfind("store_address:", 0), 0u) << refused.status();
  }
  join.set_store_address("10.0.0.1:29500");
  join.set_secret("short");
  EXPECT_EQ(PairRankOf(join, "10.0.0.2:29500", "cpu").status().message().rfind("secret:", 0), 0u);
  v1::RunHostPairRequest open = Open();
  open.set_secret(std::string(32, 's'));  // an opener draws its own
  EXPECT_EQ(PairRankOf(open, "10.0.0.1:29500", "cpu").status().code(),
            absl::StatusCode::kInvalidArgument);
  open = Open();
  open.set_peer("b\nINJECTED");
  EXPECT_EQ(PairRankOf(open, "10.0.0.1:29500", "cpu").status().message().rfind("peer:", 0), 0u);
  open.set_side(v1::RunHostPairRequest::SIDE_UNSPECIFIED);
  open.set_peer("b");
  EXPECT_EQ(PairRankOf(open, "10.0.0.1:29500", "cpu").status().message().rfind("side:", 0), 0u);
}

TEST(HostPairsTest, ThePairAddressFlagIsAnIpv4AddressAndPort) {
  EXPECT_TRUE(CheckPairAddress("").ok());
  EXPECT_TRUE(CheckPairAddress("192.168.1.7:29500").ok());
  for (const char* bad : {"host:29500", "[::1]:29500", "10.0.0.1", "10.0.0.1:0", "10.0.0.1:x",
                          "0.0.0.0:29500"}) {
    EXPECT_FALSE(CheckPairAddress(bad).ok()) << bad;
  }
}

TEST(HostPairsTest, ARankIsKnownUntilItsJobEnds) {
  HostPairs pairs;
  EXPECT_FALSE(pairs.Find("j1").has_value());
  v1::RankAssignment rank;
  rank.set_rank(1);
  pairs.Add("j1", rank);
  ASSERT_TRUE(pairs.Find("j1").has_value());
  EXPECT_EQ(pairs.Find("j1")->rank(), 1);
  pairs.Remove("j1");
  EXPECT_FALSE(pairs.Find("j1").has_value());
}

}  // namespace
}  // namespace gpubench::server
