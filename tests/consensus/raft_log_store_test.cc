#include "consensus/raft_log_store.h"

#include <catch2/catch.hpp>

#include "testing/temp_dir.h"

namespace shardkv::consensus {
namespace {

std::unique_ptr<storage::Storage> Open(const std::string& path) {
  storage::StorageOptions o;
  o.node_id = 1;
  auto s = storage::Storage::Open(path, o);
  REQUIRE(s.ok());
  return std::move(*s);
}

std::vector<StoredEntry> Entries(uint64_t term, int n, const std::string& tag) {
  std::vector<StoredEntry> out;
  for (int i = 0; i < n; ++i) out.push_back({term, 1, tag + std::to_string(i)});
  return out;
}

}  // namespace

TEST_CASE("raft log store: term, vote, log and snapshot survive a reopen", "[consensus]") {
  testing::TempDir dir;
  {
    auto storage = Open(dir.Sub("db"));
    RaftLogStore store(storage.get());
    REQUIRE(*store.Empty());
    REQUIRE(store.SetTerm(3).ok());
    REQUIRE(store.SetVote(2).ok());
    REQUIRE(store.Append(1, Entries(1, 300, "a")).ok());  // more than one scan batch
    REQUIRE_FALSE(*store.Empty());
  }
  auto storage = Open(dir.Sub("db"));
  RaftLogStore store(storage.get());
  StatusOr<StoredState> st = store.Load();
  REQUIRE(st.ok());
  CHECK(st->term == 3);
  CHECK(st->vote == 2);
  CHECK(st->start_index == 1);
  REQUIRE(st->entries.size() == 300);
  CHECK(st->entries[299].data == "a299");

  // A new term clears the vote.
  REQUIRE(store.SetTerm(4).ok());
  CHECK(store.Load()->vote == 0);

  // Truncation drops the suffix; appends continue after it.
  REQUIRE(store.TruncateFrom(201).ok());
  REQUIRE(store.Append(201, Entries(4, 2, "b")).ok());
  st = store.Load();
  REQUIRE(st->entries.size() == 202);
  CHECK(st->entries[200].data == "b0");
  CHECK(st->entries[200].term == 4);

  // A snapshot at 150 keeping 20 trailing entries: the log starts at 131.
  StoredSnapshot snap{150, 3, 1, "conf-bytes", "state-bytes"};
  REQUIRE(store.PutSnapshot(snap, 130).ok());
  st = store.Load();
  REQUIRE(st->snapshot.has_value());
  CHECK(st->snapshot->index == 150);
  CHECK(st->snapshot->conf == "conf-bytes");
  CHECK(st->snapshot->data == "state-bytes");
  CHECK(st->start_index == 131);
  CHECK(st->entries.size() == 202 - 130);
  // An installed snapshot replaces the whole log.
  REQUIRE(store.PutSnapshot({400, 5, 2, "c", "s"}, UINT64_MAX).ok());
  st = store.Load();
  CHECK(st->entries.empty());
  CHECK(st->start_index == 401);
}

TEST_CASE("raft log store: a gap in the log is corruption", "[consensus]") {
  testing::TempDir dir;
  auto storage = Open(dir.Sub("db"));
  RaftLogStore store(storage.get());
  REQUIRE(store.Append(1, Entries(1, 3, "a")).ok());
  REQUIRE(store.Append(5, Entries(1, 1, "x")).ok());
  StatusOr<StoredState> st = store.Load();
  REQUIRE_FALSE(st.ok());
  CHECK(st.status().code() == Status::Code::kCorruption);
  CHECK(st.status().message().find("entry 4 is missing") != std::string::npos);
}

}  // namespace shardkv::consensus
