#include "placement_lab/lab_membership.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>

using shardkv::lab::LabMembership;
using shardkv::lab::MembershipSpec;

TEST_CASE("membership: the seeds' cache-00..cache-09, adding cache-10", "[lab][nodes]") {
  auto m = LabMembership::Build(MembershipSpec{});
  REQUIRE(m.ok());
  REQUIRE(m->nodes.size() == 10);
  CHECK(m->nodes.front().name == "cache-00");
  CHECK(m->nodes.back().name == "cache-09");
  CHECK(m->added.name == "cache-10");
  CHECK(m->added.weight == 1.0);
  CHECK_FALSE(m->weighted);
}

TEST_CASE("membership: weights, one per node", "[lab][nodes]") {
  MembershipSpec spec;
  spec.count = 3;
  spec.weights = {4, 2, 1};
  auto m = LabMembership::Build(spec);
  REQUIRE(m.ok());
  CHECK(m->nodes[0].weight == 4);
  CHECK(m->nodes[2].weight == 1);
  CHECK(m->weighted);

  spec.weights = {4, 2};
  auto short_list = LabMembership::Build(spec);
  REQUIRE_FALSE(short_list.ok());
  CHECK(short_list.status().message().find("--weights has 2 values for 3 nodes") !=
        std::string::npos);

  spec.weights = {1, 0, 1};
  CHECK_FALSE(LabMembership::Build(spec).ok());
  spec.weights = {1, -2, 1};
  CHECK_FALSE(LabMembership::Build(spec).ok());
}

TEST_CASE("membership: bad counts and patterns", "[lab][nodes]") {
  MembershipSpec spec;
  spec.count = 0;
  auto zero = LabMembership::Build(spec);
  REQUIRE_FALSE(zero.ok());
  CHECK(zero.status().message().find("--nodes") != std::string::npos);
  spec.count = MembershipSpec::kMaxNodes + 1;
  CHECK_FALSE(LabMembership::Build(spec).ok());
  spec.count = 3;
  spec.names = "cache-%s";
  CHECK_FALSE(LabMembership::Build(spec).ok());
  spec.names = "/nonexistent/names.txt";
  auto missing = LabMembership::Build(spec);
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().message().find("/nonexistent/names.txt") != std::string::npos);
}

TEST_CASE("membership: names from a file", "[lab][nodes]") {
  std::string path = "/tmp/shardkv_names_XXXXXX";
  int fd = mkstemp(path.data());
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << "10.0.0.1:11211\n10.0.0.2:11211\n\n10.0.0.3:11211\n";

  MembershipSpec spec;
  spec.names = path;
  auto all = LabMembership::Build(spec);
  REQUIRE(all.ok());
  CHECK(all->nodes.size() == 3);
  CHECK(all->added.name == "new-node");  // the file has no fourth name

  spec.count = 2;
  auto two = LabMembership::Build(spec);
  REQUIRE(two.ok());
  CHECK(two->nodes.size() == 2);
  CHECK(two->added.name == "10.0.0.3:11211");  // the next line joins

  spec.count = 5;
  CHECK_FALSE(LabMembership::Build(spec).ok());  // more nodes than names
  std::remove(path.c_str());
}

TEST_CASE("membership: weights above the maximum are refused before anything is built",
          "[lab][nodes]") {
  MembershipSpec spec;
  spec.count = 3;
  spec.weights = {1, MembershipSpec::kMaxWeight, 1};
  CHECK(LabMembership::Build(spec).ok());
  spec.weights = {1, MembershipSpec::kMaxWeight + 1, 1};
  auto heavy = LabMembership::Build(spec);
  REQUIRE_FALSE(heavy.ok());
  CHECK(heavy.status().message().find("at most 1000") != std::string::npos);
  spec.weights.clear();
  spec.added_weight = 1e9;
  auto added = LabMembership::Build(spec);
  REQUIRE_FALSE(added.ok());
  CHECK(added.status().message().find("--add-weight") != std::string::npos);
}
