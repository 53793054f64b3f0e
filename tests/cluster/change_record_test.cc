// The change record and report encodings (include/shardkv/change.h): Cap'n Proto round trips of
// every field, the v0.1.0 key=value text they still read, and what they refuse.
#include <catch2/catch.hpp>
#include <cstring>
#include <random>
#include <string>

#include "shardkv/change.h"

using namespace shardkv;

namespace {

// Every field distinct from its default and from the others, so that a field encoded into the
// wrong slot or not at all changes the decoded record.
ChangeRecord FullRecord() {
  ChangeRecord r;
  r.change_id = 0xfedcba9876543210ull;
  r.kind = ChangeKind::kRemove;
  r.node_id = 7;
  r.state = ChangeState::kNewOnly;
  r.error = "source 3 unreachable\nsecond line";  // a newline the text form could not carry
  r.from_epoch = 11;
  r.rate_bytes_per_s = 12345;
  r.streams_per_node = 13;
  r.planned_copies = 14;
  r.planned_tombstones = 15;
  r.planned_bytes = 16;
  r.planned_ranges = 17;
  r.planned_token_ranges = 18;
  r.remapped_keys = 19;
  r.live_keys = 20;
  r.total_copies = 21;
  r.ideal_fraction = 0.123456789;
  r.replicas_configured = 22;
  r.replicas_after = 23;
  r.write_quorum_after = 24;
  r.read_quorum_after = 25;
  r.moved_copies = 26;
  r.moved_tombstones = 27;
  r.moved_bytes = 28;
  r.resumed_tasks = 29;
  r.moved_during_change = 30;
  r.resumed_copies = 31;
  r.takeovers = 32;
  r.failed_driver = 33;
  r.started_ms = 1796131604694;
  r.finished_ms = 1796131605096;
  r.client_errors_at_start = -34;
  r.client_errors = 35;
  r.task_plans = {{40, 4, 41, 42, 43}, {50, 5, 51, 52, 53}, {60, 6, 61, 62, 63}};
  return r;
}

ChangeReport FullReport() {
  ChangeReport r;
  r.has_change = true;
  r.record = FullRecord();
  r.epoch = 101;
  r.driver = 2;
  r.driver_address = "127.0.0.1:7002";
  r.from_driver = true;
  r.elapsed_s = 2.75;
  r.copies_done = 102;
  r.tombstones_done = 103;
  r.bytes_done = 104;
  r.copies_during_change = 105;
  r.streams = {{1, 4, 110, 111, 112, 113, 114, 115, 116, 117},
               {2, 4, 120, 121, 122, 123, 124, 125, 126, 127}};
  r.shares = {{1, "127.0.0.1:7001", "up", 0.5, 0.25}, {4, "127.0.0.1:7004", "joining", 0, 0.75}};
  return r;
}

// formatVersion is field @0, a UInt32 at the start of the root struct's data section: in a
// one-segment flat array, after the segment table (one word) and the root pointer (one word).
constexpr size_t kVersionOffset = 16;

std::string WithVersion(std::string bytes, uint32_t version) {
  REQUIRE(bytes.size() >= kVersionOffset + 4);
  std::memcpy(bytes.data() + kVersionOffset, &version, 4);  // little endian, as capnp
  return bytes;
}

// The exact text v0.1.0's ChangeRecord::Encode wrote (numbers by std::to_string, so a double has
// six decimals), with the values of the fixture's record (tests/fixtures/README.md).
constexpr std::string_view kV010Record =
    "change_id=16818502549676216535\nkind=add\nnode_id=4\nstate=done\nerror=\nfrom_epoch=1\n"
    "rate_bytes_per_s=33554432\nstreams_per_node=2\nplanned_copies=35\nplanned_tombstones=3\n"
    "planned_bytes=584\nplanned_ranges=3\nplanned_token_ranges=39\nremapped_keys=35\n"
    "live_keys=45\ntotal_copies=135\nideal_fraction=0.250000\nreplicas_configured=3\n"
    "replicas_after=3\nwrite_quorum_after=2\nread_quorum_after=2\nmoved_copies=35\n"
    "moved_tombstones=3\nmoved_bytes=584\nresumed_tasks=0\nmoved_during_change=0\n"
    "resumed_copies=0\ntakeovers=0\nfailed_driver=0\nstarted_ms=1796131604694\n"
    "finished_ms=1796131605096\nclient_errors_at_start=0\nclient_errors=0\n";

void CheckV010Record(const ChangeRecord& r) {
  CHECK(r.change_id == 16818502549676216535ull);
  CHECK(r.kind == ChangeKind::kAdd);
  CHECK(r.node_id == 4);
  CHECK(r.state == ChangeState::kDone);
  CHECK(r.error.empty());
  CHECK(r.from_epoch == 1);
  CHECK(r.rate_bytes_per_s == 32u << 20);
  CHECK(r.streams_per_node == 2);
  CHECK(r.planned_copies == 35);
  CHECK(r.planned_tombstones == 3);
  CHECK(r.planned_bytes == 584);
  CHECK(r.planned_ranges == 3);
  CHECK(r.planned_token_ranges == 39);
  CHECK(r.remapped_keys == 35);
  CHECK(r.live_keys == 45);
  CHECK(r.total_copies == 135);
  CHECK(r.ideal_fraction == 0.25);
  CHECK(r.replicas_configured == 3);
  CHECK(r.replicas_after == 3);
  CHECK(r.write_quorum_after == 2);
  CHECK(r.read_quorum_after == 2);
  CHECK(r.moved_copies == 35);
  CHECK(r.moved_tombstones == 3);
  CHECK(r.moved_bytes == 584);
  CHECK(r.started_ms == 1796131604694);
  CHECK(r.finished_ms == 1796131605096);
  CHECK(r.task_plans.empty());  // v0.1.0 had none
}

}  // namespace

TEST_CASE("change record: every field round-trips through Cap'n Proto", "[change]") {
  const ChangeRecord r = FullRecord();
  REQUIRE_FALSE(r == ChangeRecord{});
  const std::string bytes = r.Encode();
  CHECK(bytes.size() % 8 == 0);
  CHECK_FALSE(bytes.starts_with("change_id="));  // nothing writes the text form any more
  auto back = ChangeRecord::Decode(bytes);
  INFO(back.status().ToString());
  REQUIRE(back.ok());
  CHECK(*back == r);
  CHECK(back->task_plans.size() == 3);
  CHECK(back->task_plans[1] == TaskPlan{50, 5, 51, 52, 53});
  CHECK(back->error == "source 3 unreachable\nsecond line");
  CHECK(back->client_errors_at_start == -34);

  // Defaults round-trip too (an empty task plan list, state planned, kind add).
  auto empty = ChangeRecord::Decode(ChangeRecord{}.Encode());
  REQUIRE(empty.ok());
  CHECK(*empty == ChangeRecord{});

  // Every kind and state survives (they are schema enums, not strings).
  for (ChangeKind k : {ChangeKind::kAdd, ChangeKind::kJoin, ChangeKind::kRemove}) {
    for (int s = 0; s <= static_cast<int>(ChangeState::kCancelled); ++s) {
      ChangeRecord x;
      x.kind = k;
      x.state = static_cast<ChangeState>(s);
      auto y = ChangeRecord::Decode(x.Encode());
      REQUIRE(y.ok());
      CHECK(y->kind == k);
      CHECK(y->state == x.state);
    }
  }
}

TEST_CASE("change report: every field round-trips, streams and shares included", "[change]") {
  const ChangeReport r = FullReport();
  auto back = ChangeReport::Decode(r.Encode());
  INFO(back.status().ToString());
  REQUIRE(back.ok());
  CHECK(*back == r);
  CHECK(back->streams.size() == 2);
  CHECK(back->streams[1].bytes_done == 127);
  CHECK(back->shares[1].state == "joining");
  CHECK(back->record.task_plans.size() == 3);

  auto none = ChangeReport::Decode(ChangeReport{}.Encode());
  REQUIRE(none.ok());
  CHECK(*none == ChangeReport{});
}

TEST_CASE("change record: the v0.1.0 key=value text is still read", "[change][upgrade]") {
  auto r = ChangeRecord::Decode(kV010Record);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CheckV010Record(*r);
  // Re-encoded by this build it is a capnp record with the same content.
  auto again = ChangeRecord::Decode(r->Encode());
  REQUIRE(again.ok());
  CHECK(*again == *r);

  // v0.1.0 recorded "remove" too; a kind it never wrote is refused, not guessed.
  std::string removed(kV010Record);
  removed.replace(removed.find("kind=add"), 8, "kind=remove");
  auto rem = ChangeRecord::Decode(removed);
  REQUIRE(rem.ok());
  CHECK(rem->kind == ChangeKind::kRemove);
  std::string odd(kV010Record);
  odd.replace(odd.find("kind=add"), 8, "kind=xyz");
  CHECK(ChangeRecord::Decode(odd).status().code() == Status::Code::kCorruption);
}

TEST_CASE("change report: the v0.1.0 key=value text is still read", "[change][upgrade]") {
  // As v0.1.0's ChangeReport::Encode wrote it: the report's own fields, then the record's
  // prefixed "record.", then each stream and share by index.
  std::string text =
      "has_change=1\nepoch=5\ndriver=1\ndriver_address=127.0.0.1:36051\nfrom_driver=1\n"
      "elapsed_s=1.500000\ncopies_done=35\ntombstones_done=3\nbytes_done=584\n"
      "copies_during_change=2\nstreams=1\nshares=2\n";
  std::string_view rec = kV010Record;
  while (!rec.empty()) {
    const size_t nl = rec.find('\n');
    text += "record." + std::string(rec.substr(0, nl + 1));
    rec.remove_prefix(nl + 1);
  }
  text +=
      "stream.0.source=1\nstream.0.destination=4\nstream.0.tasks_total=3\nstream.0.tasks_done=2\n"
      "stream.0.ranges_total=39\nstream.0.ranges_done=20\nstream.0.copies_planned=35\n"
      "stream.0.copies_done=30\nstream.0.bytes_planned=584\nstream.0.bytes_done=500\n"
      "share.0.id=1\nshare.0.address=127.0.0.1:36051\nshare.0.state=up\n"
      "share.0.before=0.333333\nshare.0.after=0.250000\n"
      "share.1.id=4\nshare.1.address=127.0.0.1:40829\nshare.1.state=joining\n"
      "share.1.before=0.000000\nshare.1.after=0.250000\n";
  auto r = ChangeReport::Decode(text);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CHECK(r->has_change);
  CHECK(r->epoch == 5);
  CHECK(r->driver == 1);
  CHECK(r->driver_address == "127.0.0.1:36051");
  CHECK(r->from_driver);
  CHECK(r->elapsed_s == 1.5);
  CHECK(r->copies_during_change == 2);
  CheckV010Record(r->record);
  REQUIRE(r->streams.size() == 1);
  CHECK(r->streams[0] == StreamProgress{1, 4, 3, 2, 39, 20, 35, 30, 584, 500});
  REQUIRE(r->shares.size() == 2);
  CHECK(r->shares[1].address == "127.0.0.1:40829");
  CHECK(r->shares[1].state == "joining");
  CHECK(r->shares[0].share_after == 0.25);

  // A count far past the lines present costs nothing (it is capped by them).
  auto big = ChangeReport::Decode("has_change=0\nstreams=18446744073709551615\nshares=99999999\n");
  REQUIRE(big.ok());
  CHECK(big->streams.size() <= 3);
  CHECK_FALSE(big->has_change);
}

TEST_CASE("change record: a newer format version is refused, naming it", "[change][upgrade]") {
  // A membership change is written at version 1, which the previous release reads; only a params
  // change (a kind that release does not know) needs version 2.
  const std::string v1 = FullRecord().Encode();
  REQUIRE(WithVersion(v1, 1) == v1);
  ChangeRecord params = FullRecord();
  params.kind = ChangeKind::kParams;
  params.node_id = 0;
  params.params_replicas = 3;
  params.params_write_quorum = 2;
  params.params_read_quorum = 2;
  params.replicas_before = 1;
  params.write_quorum_before = 1;
  params.read_quorum_before = 1;
  const std::string bytes = params.Encode();
  // The patch hits the version field: writing the current version back changes nothing.
  REQUIRE(WithVersion(bytes, kChangeRecordFormatVersion) == bytes);
  auto round = ChangeRecord::Decode(bytes);
  REQUIRE(round.ok());
  CHECK(*round == params);
  auto newer = ChangeRecord::Decode(WithVersion(bytes, kChangeRecordFormatVersion + 1));
  REQUIRE_FALSE(newer.ok());
  CHECK(newer.status().code() == Status::Code::kNotSupported);
  CHECK_THAT(newer.status().message(),
             Catch::Contains("format version " + std::to_string(kChangeRecordFormatVersion + 1)) &&
                 Catch::Contains("upgrade this node"));
  // Version 0 is the text form's: a capnp message claiming it is not a record.
  CHECK(ChangeRecord::Decode(WithVersion(bytes, 0)).status().code() == Status::Code::kCorruption);

  const std::string report = FullReport().Encode();
  REQUIRE(WithVersion(report, kChangeReportFormatVersion) == report);
  auto newer_report = ChangeReport::Decode(WithVersion(report, kChangeReportFormatVersion + 1));
  REQUIRE_FALSE(newer_report.ok());
  CHECK(newer_report.status().code() == Status::Code::kNotSupported);
  CHECK_THAT(newer_report.status().message(), Catch::Contains("upgrade this node"));
}

TEST_CASE("change record: garbage and truncated bytes are errors, never a crash", "[change]") {
  for (std::string_view junk :
       {std::string_view(), std::string_view("x"), std::string_view("hello world!"),
        std::string_view("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 16),
        std::string_view("\0\0\0\0\0\0\0\0", 8), std::string_view("has_change=1\n")}) {
    CHECK_FALSE(ChangeRecord::Decode(junk).ok());
  }
  CHECK_FALSE(ChangeReport::Decode(std::string_view("\0\0\0\0\x01\0\0\0", 8)).ok());
  CHECK_FALSE(ChangeReport::Decode("change_id=1\n").ok());

  // Every truncation of a valid message is refused (its segment table claims more words).
  const std::string record = FullRecord().Encode();
  const std::string report = FullReport().Encode();
  for (size_t n = 0; n < record.size(); ++n) {
    INFO("record truncated to " << n << " of " << record.size());
    CHECK_FALSE(ChangeRecord::Decode(std::string_view(record).substr(0, n)).ok());
  }
  for (size_t n = 0; n < report.size(); n += 3) {
    INFO("report truncated to " << n << " of " << report.size());
    CHECK_FALSE(ChangeReport::Decode(std::string_view(report).substr(0, n)).ok());
  }

  // Random bytes and random corruptions of a valid record: any Status, no crash, no throw.
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    std::string bytes = i % 2 == 0 ? record : report;
    if (i % 3 == 0) {
      bytes.assign(8 * (1 + rng() % 16), '\0');
      for (char& c : bytes) c = static_cast<char>(rng());
    } else {
      for (int k = 0; k < 4; ++k) bytes[rng() % bytes.size()] = static_cast<char>(rng());
    }
    CHECK_NOTHROW(static_cast<void>(ChangeRecord::Decode(bytes)));
    CHECK_NOTHROW(static_cast<void>(ChangeReport::Decode(bytes)));
  }
}

TEST_CASE("change record: a list of zero-sized elements cannot claim millions", "[change]") {
  // Found by change_record_fuzz: capnp charges a list of zero-sized structs one word an element,
  // so a short message could decode into millions of task plans (and fail to re-encode).
  // Encode writes the (empty) task plan list last: its tag word (element count 0, data 5 words,
  // no pointers) ends the message. Rewritten to a million elements of no data, the message is
  // still well-formed capnp.
  std::string bytes = ChangeRecord{}.Encode();
  REQUIRE(bytes.size() >= 8);
  const std::string tag = bytes.substr(bytes.size() - 8);
  REQUIRE(tag == std::string("\0\0\0\0\x05\0\0\0", 8));
  const uint32_t count = 1000000u << 2;  // a struct pointer's offset field holds the count
  std::memcpy(bytes.data() + bytes.size() - 8, &count, 4);
  std::memset(bytes.data() + bytes.size() - 4, 0, 4);  // data size 0 words, 0 pointers
  auto r = ChangeRecord::Decode(bytes);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == Status::Code::kCorruption);
  CHECK_THAT(r.status().message(), Catch::Contains("task plans"));
}

TEST_CASE("change kind: names for printing", "[change]") {
  CHECK(ChangeKindName(ChangeKind::kAdd) == "add");
  CHECK(ChangeKindName(ChangeKind::kJoin) == "join");
  CHECK(ChangeKindName(ChangeKind::kRemove) == "remove");
}
