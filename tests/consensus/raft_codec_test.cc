#include "consensus/raft_codec.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>

namespace shardkv::consensus {
namespace {

raft_message RoundTrip(const raft_message& in, std::string* address) {
  std::string bytes;
  REQUIRE(EncodeRaftMessage(in, 7, "10.0.0.7:7000", &bytes).ok());
  raft_message out;
  Status s = DecodeRaftMessage(bytes, &out, address);
  INFO(s.ToString());
  REQUIRE(s.ok());
  CHECK(out.type == in.type);
  CHECK(out.server_id == 7);
  CHECK(std::string(out.server_address) == "10.0.0.7:7000");
  return out;
}

}  // namespace

TEST_CASE("raft codec: every message type round-trips", "[consensus]") {
  std::string address;
  {
    raft_message m{};
    m.type = RAFT_IO_REQUEST_VOTE;
    m.request_vote = {5, 2, 40, 4, true, true};
    raft_message out = RoundTrip(m, &address);
    CHECK(out.request_vote.term == 5);
    CHECK(out.request_vote.candidate_id == 2);
    CHECK(out.request_vote.last_log_index == 40);
    CHECK(out.request_vote.last_log_term == 4);
    CHECK(out.request_vote.disrupt_leader);
    CHECK(out.request_vote.pre_vote);
  }
  {
    raft_message m{};
    m.type = RAFT_IO_REQUEST_VOTE_RESULT;
    m.request_vote_result = {9, true, raft_tribool_false};
    raft_message out = RoundTrip(m, &address);
    CHECK(out.request_vote_result.term == 9);
    CHECK(out.request_vote_result.vote_granted);
    CHECK(out.request_vote_result.pre_vote == raft_tribool_false);
  }
  {
    char a[] = "first", b[] = "";
    raft_entry entries[2] = {{3, RAFT_COMMAND, {a, 5}, nullptr},
                             {3, RAFT_BARRIER, {b, 0}, nullptr}};
    raft_message m{};
    m.type = RAFT_IO_APPEND_ENTRIES;
    m.append_entries = {3, 10, 2, 9, entries, 2};
    raft_message out = RoundTrip(m, &address);
    const raft_append_entries& r = out.append_entries;
    CHECK(r.term == 3);
    CHECK(r.prev_log_index == 10);
    CHECK(r.prev_log_term == 2);
    CHECK(r.leader_commit == 9);
    REQUIRE(r.n_entries == 2);
    CHECK(std::string(static_cast<char*>(r.entries[0].buf.base), r.entries[0].buf.len) == "first");
    CHECK(r.entries[0].type == RAFT_COMMAND);
    CHECK(r.entries[1].buf.len == 0);
    CHECK(r.entries[1].type == RAFT_BARRIER);
    CHECK(r.entries[0].batch == r.entries[1].batch);  // one batch, as libraft frees it
    ReleaseRaftMessage(&out);
  }
  {
    raft_message m{};
    m.type = RAFT_IO_APPEND_ENTRIES_RESULT;
    m.append_entries_result = {4, 12, 11};
    raft_message out = RoundTrip(m, &address);
    CHECK(out.append_entries_result.term == 4);
    CHECK(out.append_entries_result.rejected == 12);
    CHECK(out.append_entries_result.last_log_index == 11);
  }
  {
    raft_message m{};
    m.type = RAFT_IO_INSTALL_SNAPSHOT;
    raft_configuration_init(&m.install_snapshot.conf);
    REQUIRE(raft_configuration_add(&m.install_snapshot.conf, 1, "a:1", RAFT_VOTER) == 0);
    REQUIRE(raft_configuration_add(&m.install_snapshot.conf, 4, "d:4", RAFT_STANDBY) == 0);
    char data[] = "state";
    m.install_snapshot.term = 6;
    m.install_snapshot.last_index = 100;
    m.install_snapshot.last_term = 5;
    m.install_snapshot.conf_index = 90;
    m.install_snapshot.data = {data, 5};
    raft_message out = RoundTrip(m, &address);
    const raft_install_snapshot& r = out.install_snapshot;
    CHECK(r.term == 6);
    CHECK(r.last_index == 100);
    CHECK(r.last_term == 5);
    CHECK(r.conf_index == 90);
    REQUIRE(r.conf.n == 2);
    CHECK(r.conf.servers[1].id == 4);
    CHECK(std::string(r.conf.servers[1].address) == "d:4");
    CHECK(r.conf.servers[1].role == RAFT_STANDBY);
    CHECK(std::string(static_cast<char*>(r.data.base), r.data.len) == "state");
    ReleaseRaftMessage(&out);
    raft_configuration_close(&m.install_snapshot.conf);
  }
  {
    raft_message m{};
    m.type = RAFT_IO_TIMEOUT_NOW;
    m.timeout_now = {8, 30, 7};
    raft_message out = RoundTrip(m, &address);
    CHECK(out.timeout_now.term == 8);
    CHECK(out.timeout_now.last_log_index == 30);
    CHECK(out.timeout_now.last_log_term == 7);
  }
}

TEST_CASE("raft codec: truncations, garbage and bad counts are refused", "[consensus]") {
  char a[] = "payload";
  raft_entry entries[1] = {{3, RAFT_COMMAND, {a, 7}, nullptr}};
  raft_message m{};
  m.type = RAFT_IO_APPEND_ENTRIES;
  m.append_entries = {3, 10, 2, 9, entries, 1};
  std::string bytes;
  REQUIRE(EncodeRaftMessage(m, 2, "h:1", &bytes).ok());
  std::string address;
  // Every proper prefix is refused, as is a trailing byte.
  for (size_t n = 0; n < bytes.size(); ++n) {
    raft_message out;
    CHECK_FALSE(DecodeRaftMessage(std::string_view(bytes).substr(0, n), &out, &address).ok());
  }
  raft_message out;
  CHECK(DecodeRaftMessage(bytes + "x", &out, &address).code() == Status::Code::kCorruption);
  // A huge entry count is refused before anything is allocated.
  std::string huge = bytes;
  const size_t count_at = 2 + 8 + 2 + 3 + 4 * 8;
  huge[count_at] = huge[count_at + 1] = huge[count_at + 2] = huge[count_at + 3] = '\xff';
  CHECK(DecodeRaftMessage(huge, &out, &address).code() == Status::Code::kCorruption);
  // An unknown format byte is NotSupported; an unknown type Corruption; sender id 0 too.
  std::string future = bytes;
  future[0] = 2;
  CHECK(DecodeRaftMessage(future, &out, &address).code() == Status::Code::kNotSupported);
  std::string unknown = bytes;
  unknown[1] = 42;
  CHECK(DecodeRaftMessage(unknown, &out, &address).code() == Status::Code::kCorruption);
  // Random bytes never crash (ASan watches), and a fixed seed keeps it reproducible.
  std::mt19937 rng(12345);
  for (int i = 0; i < 2000; ++i) {
    std::string junk = bytes;
    junk[rng() % junk.size()] = static_cast<char>(rng());
    if (i % 3 == 0) junk.resize(rng() % junk.size());
    if (DecodeRaftMessage(junk, &out, &address).ok()) ReleaseRaftMessage(&out);
  }
}

}  // namespace shardkv::consensus
