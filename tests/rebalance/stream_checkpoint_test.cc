// The stream checkpoint's encoding (src/rebalance/stream_checkpoint.h): Cap'n Proto round trips,
// the v0.1.0 space-separated text it still reads, and what it refuses.
#include "rebalance/stream_checkpoint.h"

#include <catch2/catch.hpp>
#include <cstring>
#include <future>
#include <random>

#include "cluster/map_store.h"
#include "clustermap/cluster_map_builder.h"
#include "rebalance/stream_sink.h"
#include "rebalance/stream_source.h"
#include "shardkv/change.h"
#include "storage/storage.h"
#include "testing/temp_dir.h"

using namespace shardkv;
using shardkv::rebalance::kStreamCheckpointFormatVersion;
using shardkv::rebalance::StreamCheckpoint;

namespace {

StreamCheckpoint Full() {
  StreamCheckpoint c;
  c.phase = 1;
  c.cursor = std::string("key\0\xff\n with bytes", 17);
  c.done = true;
  c.copies = 11;
  c.tombstones = 12;
  c.bytes = 13;
  c.merge_ids = {2, 3, 9};
  c.merge_index = 2;
  c.range_index = 14;
  c.copies_during_change = 15;
  return c;
}

void CheckEqual(const StreamCheckpoint& a, const StreamCheckpoint& b) {
  CHECK(a.phase == b.phase);
  CHECK(a.cursor == b.cursor);
  CHECK(a.done == b.done);
  CHECK(a.copies == b.copies);
  CHECK(a.tombstones == b.tombstones);
  CHECK(a.bytes == b.bytes);
  CHECK(a.merge_ids == b.merge_ids);
  CHECK(a.merge_index == b.merge_index);
  CHECK(a.range_index == b.range_index);
  CHECK(a.copies_during_change == b.copies_during_change);
}

// formatVersion: the first UInt32 of the root struct, after the segment table and root pointer.
std::string WithVersion(std::string bytes, uint32_t version) {
  REQUIRE(bytes.size() >= 20);
  std::memcpy(bytes.data() + 16, &version, 4);
  return bytes;
}

}  // namespace

TEST_CASE("stream checkpoint: every field round-trips through Cap'n Proto", "[stream]") {
  const StreamCheckpoint c = Full();
  const std::string bytes = c.Encode();
  CHECK(bytes.size() % 8 == 0);
  auto back = StreamCheckpoint::Decode(bytes);
  INFO(back.status().ToString());
  REQUIRE(back.ok());
  CheckEqual(*back, c);

  auto fresh = StreamCheckpoint::Decode(StreamCheckpoint{}.Encode());
  REQUIRE(fresh.ok());
  CheckEqual(*fresh, StreamCheckpoint{});
  CHECK(StreamCheckpoint::Key(5, 7) == "rebalance/ckpt/5/7");
}

TEST_CASE("stream checkpoint: the v0.1.0 text is still read", "[stream][upgrade]") {
  // As v0.1.0 wrote it: phase done copies tombstones bytes merge_index ids, hex-cursor
  // range_index copies_during_change ("-" for no ids or no cursor).
  auto merged = StreamCheckpoint::Decode("1 0 10 2 300 1 2,3, 6b65792d3031 4 5");
  INFO(merged.status().ToString());
  REQUIRE(merged.ok());
  CHECK(merged->phase == 1);
  CHECK_FALSE(merged->done);
  CHECK(merged->copies == 10);
  CHECK(merged->tombstones == 2);
  CHECK(merged->bytes == 300);
  CHECK(merged->merge_index == 1);
  CHECK(merged->merge_ids == std::vector<uint32_t>{2, 3});
  CHECK(merged->cursor == "key-01");
  CHECK(merged->range_index == 4);
  CHECK(merged->copies_during_change == 5);

  // The first checkpoint format had neither range_index nor copies_during_change.
  auto first = StreamCheckpoint::Decode("0 1 7 0 70 0 - -");
  REQUIRE(first.ok());
  CHECK(first->phase == 0);
  CHECK(first->done);
  CHECK(first->copies == 7);
  CHECK(first->merge_ids.empty());
  CHECK(first->cursor.empty());
  CHECK(first->range_index == 0);

  // Re-encoded by this build, the same checkpoint.
  auto again = StreamCheckpoint::Decode(merged->Encode());
  REQUIRE(again.ok());
  CheckEqual(*again, *merged);

  // Malformed text is an error (v0.1.0 threw from std::stoi on a bad hex digit or id).
  for (const char* bad : {"1 0 10 2 300 1 2,x, - 0 0", "0 0 1 1 1 0 - zz", "0 0 1 1 1 0 - abc",
                          "1 0 1 1 1 5 2, - 0 0", "0 ", "1 1"}) {
    INFO(bad);
    CHECK(StreamCheckpoint::Decode(bad).status().code() == Status::Code::kCorruption);
  }
}

TEST_CASE("stream checkpoint: a newer format version is refused, naming it", "[stream][upgrade]") {
  const std::string bytes = Full().Encode();
  REQUIRE(WithVersion(bytes, kStreamCheckpointFormatVersion) == bytes);
  auto newer = StreamCheckpoint::Decode(WithVersion(bytes, kStreamCheckpointFormatVersion + 1));
  REQUIRE_FALSE(newer.ok());
  CHECK(newer.status().code() == Status::Code::kNotSupported);
  CHECK_THAT(newer.status().message(),
             Catch::Contains("format version 2") && Catch::Contains("upgrade this node"));
  CHECK(StreamCheckpoint::Decode(WithVersion(bytes, 0)).status().code() ==
        Status::Code::kCorruption);
}

TEST_CASE("stream checkpoint: garbage and truncated bytes are errors, never a crash", "[stream]") {
  for (std::string_view junk : {std::string_view(), std::string_view("x"),
                                std::string_view("\xff\xff\xff\xff\xff\xff\xff\xff", 8),
                                std::string_view("\0\0\0\0\0\0\0\0", 8)}) {
    CHECK_FALSE(StreamCheckpoint::Decode(junk).ok());
  }
  const std::string bytes = Full().Encode();
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("truncated to " << n << " of " << bytes.size());
    CHECK_FALSE(StreamCheckpoint::Decode(std::string_view(bytes).substr(0, n)).ok());
  }
  // A merge index past the merge sources would index out of bounds in the sink: refused.
  StreamCheckpoint past = Full();
  past.merge_index = past.merge_ids.size();
  CHECK(StreamCheckpoint::Decode(past.Encode()).status().code() == Status::Code::kCorruption);

  std::mt19937_64 rng(11);
  for (int i = 0; i < 2000; ++i) {
    std::string b = bytes;
    for (int k = 0; k < 3; ++k) b[rng() % b.size()] = static_cast<char>(rng());
    CHECK_NOTHROW(static_cast<void>(StreamCheckpoint::Decode(b)));
  }
}

TEST_CASE("stream sink: a newer checkpoint fails the task, a v0.1.0 one resumes it",
          "[stream][upgrade]") {
  shardkv::testing::TempDir dir;
  storage::StorageOptions so;
  so.node_id = 1;
  auto storage = storage::Storage::Open(dir.Sub("db"), so);
  REQUIRE(storage.ok());
  cluster::MapStore maps(storage->get());
  auto base = ClusterMap::Create(5, {}, {{1, "127.0.0.1:1", 1, NodeState::kUp}}, 1);
  REQUIRE(base.ok());
  auto joining = clustermap::WithNodeJoining(*base, {2, "127.0.0.1:2", 1, NodeState::kJoining});
  REQUIRE(joining.ok());
  ChangeRecord rec;
  rec.change_id = 99;
  rec.state = ChangeState::kStreaming;
  REQUIRE(maps.Reset(clustermap::WithEpoch(clustermap::WithChange(*joining, rec), 2, 1)).ok());

  rebalance::StreamSource source(1, storage->get(), &maps);
  rebalance::StreamSinkOptions options;
  options.self_id = 1;
  options.threads = 1;
  options.nice = 0;
  rebalance::StreamSink sink(options, storage->get(), &maps, nullptr, &source);
  sink.Start();
  auto run = [&](uint64_t task) {
    net::StreamRangeRequest r;
    r.change_id = 99;
    r.task_id = task;
    r.first = 0;
    r.last = UINT64_MAX;
    r.source_ids = {1};
    r.source_addresses = {"127.0.0.1:1"};
    std::promise<net::ResponseBody> reply;
    sink.HandleStream(r, [&](net::ResponseBody body) { reply.set_value(std::move(body)); });
    return reply.get_future().get();
  };

  // Written by a newer node: the task call fails, naming the version, and keeps the checkpoint.
  std::string newer = StreamCheckpoint{}.Encode();
  const uint32_t version = kStreamCheckpointFormatVersion + 1;
  std::memcpy(newer.data() + 16, &version, 4);
  REQUIRE((*storage)
              ->PutAux(storage::AuxColumn::kMeta, StreamCheckpoint::Key(99, 1), newer, true)
              .ok());
  const net::ResponseBody refused = run(1);
  const auto* error = std::get_if<net::ErrorResponse>(&refused);
  REQUIRE(error != nullptr);
  CHECK(error->code == Status::Code::kNotSupported);
  CHECK_THAT(error->message, Catch::Contains("upgrade this node"));
  CHECK(*(*storage)->GetAux(storage::AuxColumn::kMeta, StreamCheckpoint::Key(99, 1)) == newer);

  // Written by v0.1.0 (done, 7 copies): read and reported as a resumed, finished task.
  REQUIRE((*storage)
              ->PutAux(storage::AuxColumn::kMeta, StreamCheckpoint::Key(99, 2), "0 1 7 0 70 0 - -",
                       true)
              .ok());
  const net::ResponseBody resumed = run(2);
  const auto* done = std::get_if<net::StreamRangeResponse>(&resumed);
  REQUIRE(done != nullptr);
  CHECK(done->done);
  CHECK(done->resumed);
  CHECK(done->copies == 7);
  CHECK(done->bytes == 70);
  sink.Stop();
  source.Close();
}
