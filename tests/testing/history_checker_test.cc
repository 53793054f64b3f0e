// Tests of the history checker: its invariants on hand-built histories, a clean run against a
// real in-process node, and proof that it fails when the store loses, reverts or resurrects data.
#include "testing/history_checker.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "shardkv/client.h"
#include "shardkv/cluster_map.h"
#include "shardkv/node.h"
#include "storage/storage.h"
#include "testing/standalone_node.h"
#include "testing/temp_dir.h"

using namespace std::chrono_literals;
using namespace shardkv;
using namespace shardkv::testing;

namespace {

WriteRecord Write(uint64_t version, OpKind kind, Micros issued, Micros completed,
                  OpOutcome outcome = OpOutcome::kAcked) {
  return {version, kind, issued, completed, outcome, outcome == OpOutcome::kFailed ? "boom" : ""};
}
WriteRecord Put(uint64_t version, Micros issued, Micros completed,
                OpOutcome outcome = OpOutcome::kAcked) {
  return Write(version, OpKind::kPut, issued, completed, outcome);
}
WriteRecord Del(uint64_t version, Micros issued, Micros completed,
                OpOutcome outcome = OpOutcome::kAcked) {
  return Write(version, OpKind::kDelete, issued, completed, outcome);
}

// Violations of one read against `writes`.
std::vector<std::string> ReadViolations(std::vector<WriteRecord> writes, Micros start, Micros end,
                                        std::optional<uint64_t> version) {
  return CheckReads({"k", std::move(writes), {{start, end, version}}});
}

bool AnyContains(const std::vector<std::string>& lines, const std::string& a,
                 const std::string& b = "") {
  for (const std::string& line : lines) {
    if (line.find(a) != std::string::npos && line.find(b) != std::string::npos) return true;
  }
  return false;
}

// A node of a cluster of one: formed on a fresh directory, restarted on one that has its map.
std::unique_ptr<Node> StartNode(const std::string& dir) {
  NodeOptions o;
  o.id = 1;
  o.data_dir = dir;
  if (!std::filesystem::exists(dir + "/db")) return shardkv::testing::MustStartFormed(o);
  return shardkv::testing::MustStart(o);
}

ClientOptions ClientFor(const Node& node) {
  ClientOptions o;
  o.seeds = {node.address()};
  o.timeout_ms = 2000;
  return o;
}

// The last acknowledged write of `h`, or null.
const WriteRecord* LastAcked(const KeyHistory& h) {
  const WriteRecord* last = nullptr;
  for (const WriteRecord& w : h.writes) {
    if (w.outcome == OpOutcome::kAcked && (last == nullptr || w.version > last->version)) {
      last = &w;
    }
  }
  return last;
}

}  // namespace

TEST_CASE("history: values carry their key and version", "[history]") {
  const std::string v = EncodeValue("user/7", 42, 64);
  CHECK(v.size() == 64);
  CHECK(v.rfind("v=42;key=user/7;", 0) == 0);
  auto decoded = DecodeValue("user/7", v);
  REQUIRE(decoded.ok());
  CHECK(*decoded == 42);
  CHECK(*DecodeValue("k", EncodeValue("k", 1)) == 1);
  // A value served for the wrong key, or not written by the checker at all, is corruption.
  CHECK(DecodeValue("user/8", v).status().code() == Status::Code::kCorruption);
  CHECK(DecodeValue("user/7", "hello").status().code() == Status::Code::kCorruption);
  CHECK(DecodeValue("user/7", "v=;key=user/7;").status().code() == Status::Code::kCorruption);
  CHECK(DecodeValue("user/7", "v=3;key=user/7;x").status().code() == Status::Code::kCorruption);
}

TEST_CASE("history: reads must not go back past an acknowledged write", "[history]") {
  // v1 acked at 20, v2 acked at 40.
  const std::vector<WriteRecord> puts = {Put(1, 10, 20), Put(2, 30, 40)};
  CHECK(ReadViolations(puts, 50, 60, 2).empty());
  CHECK(ReadViolations(puts, 0, 5, std::nullopt).empty());  // nothing acked yet
  CHECK(ReadViolations(puts, 35, 45, 1).empty());           // v2 not yet acked when the read began
  CHECK(ReadViolations(puts, 40, 45, 1).empty());  // acked at the same microsecond: not before
  CHECK(ReadViolations(puts, 35, 45, 2).empty());  // v2 in flight during the read

  auto stale = ReadViolations(puts, 50, 60, 1);
  REQUIRE(stale.size() == 1);
  CHECK(AnyContains(stale, "key 'k': stale read", "returned v=1, older than v=2 put acked"));

  // A version issued only after the read ended cannot have been seen.
  CHECK(AnyContains(ReadViolations(puts, 12, 15, 2), "v=2 was only issued at t=0.030ms"));
  CHECK(AnyContains(ReadViolations(puts, 50, 60, 9), "v=9 was never issued"));

  auto lost = ReadViolations(puts, 50, 60, std::nullopt);
  REQUIRE(lost.size() == 1);
  CHECK(AnyContains(lost, "lost write", "returned absent"));

  // Deletes: absent is right after an acked delete or while a newer delete is in flight.
  const std::vector<WriteRecord> with_delete = {Put(1, 10, 20), Del(2, 30, 40), Put(3, 50, 60)};
  CHECK(ReadViolations(with_delete, 45, 48, std::nullopt).empty());
  CHECK(ReadViolations(with_delete, 25, 35, std::nullopt).empty());
  CHECK_FALSE(ReadViolations(with_delete, 25, 28, std::nullopt).empty());  // delete not issued
  CHECK(ReadViolations(with_delete, 55, 58, std::nullopt).empty());        // v3 not acked yet
  CHECK_FALSE(ReadViolations(with_delete, 65, 68, std::nullopt).empty());
  CHECK(AnyContains(ReadViolations(with_delete, 45, 48, 2), "v=2 was a delete"));
  CHECK_FALSE(ReadViolations(with_delete, 45, 48, 1).empty());  // read past the delete

  // A failed write may have been applied: seeing it is fine, and it does not raise the floor.
  const std::vector<WriteRecord> failed = {Put(1, 10, 20), Put(2, 30, 40, OpOutcome::kFailed),
                                           Del(3, 50, 60, OpOutcome::kFailed)};
  CHECK(ReadViolations(failed, 70, 80, 2).empty());
  CHECK(ReadViolations(failed, 70, 80, 1).empty());
  CHECK(ReadViolations(failed, 70, 80, std::nullopt).empty());
}

TEST_CASE("history: the final state is the last acknowledged write or a later failed one",
          "[history]") {
  const KeyHistory put_last{"k", {Put(1, 10, 20), Del(2, 30, 40), Put(3, 50, 60)}, {}};
  CHECK(CheckFinal(put_last, 3).empty());
  CHECK(AnyContains(CheckFinal(put_last, 1), "key 'k': final read returned v=1", "stale value"));
  CHECK(AnyContains(CheckFinal(put_last, std::nullopt), "acknowledged write lost"));
  CHECK(AnyContains(CheckFinal(put_last, 4), "v=4 was never issued"));

  const KeyHistory delete_last{"k", {Put(1, 10, 20), Del(2, 30, 40)}, {}};
  CHECK(CheckFinal(delete_last, std::nullopt).empty());
  CHECK(AnyContains(CheckFinal(delete_last, 1), "deleted key resurrected", "v=2 delete acked"));

  const KeyHistory failed_after{
      "k",
      {Put(1, 10, 20), Del(2, 30, 40, OpOutcome::kFailed), Put(3, 50, 60, OpOutcome::kFailed)},
      {}};
  CHECK(CheckFinal(failed_after, 1).empty());
  CHECK(CheckFinal(failed_after, std::nullopt).empty());
  CHECK(CheckFinal(failed_after, 3).empty());

  const KeyHistory none_acked{"k", {Put(1, 10, 20, OpOutcome::kFailed)}, {}};
  CHECK(CheckFinal(none_acked, std::nullopt).empty());
  CHECK(CheckFinal(none_acked, 1).empty());
  CHECK(CheckFinal({"k", {}, {}}, std::nullopt).empty());
}

TEST_CASE("history checker: rejects bad options", "[history]") {
  HistoryChecker checker(ClientOptions{}, {.keys = 0});
  CHECK(checker.Start().IsInvalidArgument());
}

TEST_CASE("history checker: a healthy node keeps a clean history", "[history][node]") {
  TempDir dir;
  auto node = StartNode(dir.path());
  HistoryChecker checker(ClientFor(*node), {.keys = 50, .duration = 1500ms, .seed = 7});
  REQUIRE(checker.Start().ok());
  checker.Wait();
  Status final_check = checker.FinalCheck();
  INFO(final_check.ToString());
  CHECK(final_check.ok());
  CHECK(checker.Violations().empty());
  const HistoryStats stats = checker.stats();
  INFO(stats.last_error);
  CHECK(stats.acked > 0);
  CHECK(stats.reads > 0);
  CHECK(stats.failed == 0);
  CHECK(stats.read_errors == 0);
  CHECK(checker.Histories().size() == 50);
}

TEST_CASE("history checker: catches a stale value written behind the cluster's back",
          "[history][node]") {
  TempDir dir;
  auto node = StartNode(dir.path());
  auto client = Client::Connect(ClientFor(*node));
  REQUIRE(client.ok());
  HistoryChecker checker(ClientFor(*node),
                         {.keys = 20, .delete_fraction = 0.0, .duration = 500ms, .seed = 3});
  REQUIRE(checker.Start().ok());
  checker.Wait();
  REQUIRE(checker.Violations().empty());

  // A key whose last acknowledged write is put v>=2: its v-1 value is a well-formed stale one.
  std::string key;
  uint64_t version = 0;
  for (const KeyHistory& h : checker.Histories()) {
    const WriteRecord* last = LastAcked(h);
    if (last != nullptr && last->kind == OpKind::kPut && last->version >= 2) {
      key = h.key;
      version = last->version;
      break;
    }
  }
  REQUIRE(!key.empty());
  const uint64_t token = (*client)->map()->TokenOf(key);
  client->reset();
  node->Stop();
  {
    // Storage's HLC starts past the persisted ceiling, so this write is newer than every write
    // the node took, and LWW makes the stale content the stored one.
    storage::StorageOptions so;
    so.node_id = 1;
    auto storage = storage::Storage::Open(dir.path() + "/db", so);
    REQUIRE(storage.ok());
    REQUIRE((*storage)->Put(token, key, EncodeValue(key, version - 1, 64)).ok());
    REQUIRE((*storage)->Close().ok());
  }
  node = StartNode(dir.path());  // a new port: the final check gets the new seed

  Status final_check = checker.FinalCheck(ClientFor(*node));
  INFO(final_check.ToString());
  CHECK(final_check.code() == Status::Code::kFailedPrecondition);
  CHECK(final_check.message().find(key) != std::string::npos);
  const auto violations = checker.Violations();
  REQUIRE(violations.size() == 1);
  CHECK(AnyContains(violations, "key '" + key + "': final read returned v=" +
                                    std::to_string(version - 1) + ", but stale value"));
}

TEST_CASE("history checker: catches a resurrected delete", "[history][node]") {
  TempDir dir;
  auto node = StartNode(dir.path());
  HistoryChecker checker(ClientFor(*node),
                         {.keys = 20, .delete_fraction = 0.5, .duration = 500ms, .seed = 5});
  REQUIRE(checker.Start().ok());
  checker.Wait();
  REQUIRE(checker.Violations().empty());

  // A key whose last acknowledged write is a delete that followed a put.
  std::string key;
  uint64_t put_version = 0;
  for (const KeyHistory& h : checker.Histories()) {
    const WriteRecord* last = LastAcked(h);
    if (last == nullptr || last->kind != OpKind::kDelete) continue;
    for (const WriteRecord& w : h.writes) {
      if (w.kind == OpKind::kPut && w.version < last->version) put_version = w.version;
    }
    if (put_version != 0) {
      key = h.key;
      break;
    }
  }
  REQUIRE(!key.empty());
  // Another client writes the old value back, as a replica replaying a pre-delete copy would.
  auto other = Client::Connect(ClientFor(*node));
  REQUIRE(other.ok());
  REQUIRE((*other)->Put(key, EncodeValue(key, put_version, 64)).ok());

  CHECK_FALSE(checker.FinalCheck().ok());
  const auto violations = checker.Violations();
  REQUIRE(violations.size() == 1);
  CHECK(AnyContains(violations, "key '" + key + "'", "deleted key resurrected"));
}

TEST_CASE("history checker: counts failed requests without calling them violations",
          "[history][node]") {
  TempDir dir;
  auto node = StartNode(dir.path());
  ClientOptions co = ClientFor(*node);
  co.timeout_ms = 300;  // so requests to the stopped node fail fast
  co.max_retries = 1;
  HistoryChecker checker(co, {.keys = 30, .duration = 5000ms, .seed = 11});
  REQUIRE(checker.Start().ok());
  REQUIRE(checker.WaitUntil([](const HistoryStats& s) { return s.acked >= 100; }, 10s));
  node->Stop();  // graceful: every acknowledged write is kept; in-flight ones may fail
  const bool saw_failures = checker.WaitUntil(
      [](const HistoryStats& s) { return s.failed >= 5 && s.read_errors >= 5; }, 10s);
  checker.Stop();
  const HistoryStats stats = checker.stats();
  INFO(stats.last_error);
  CHECK(saw_failures);
  CHECK(stats.failed >= 5);
  CHECK(stats.read_errors >= 5);
  CHECK_FALSE(stats.last_error.empty());

  // While the node is down the final check cannot read: an error, not a violation.
  CHECK(checker.FinalCheck(co).code() == Status::Code::kUnavailable);
  CHECK(checker.Violations().empty());

  node = StartNode(dir.path());
  Status final_check = checker.FinalCheck(ClientFor(*node));
  INFO(final_check.ToString());
  CHECK(final_check.ok());
  CHECK(checker.Violations().empty());
}
