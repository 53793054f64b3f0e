// RaftLogStore: a raft server's persistent state (term, vote, log, latest snapshot) in the meta
// column family of the node's Storage, under "raft/" (design.md "Consensus").
//
// Why the meta CF and not libuv raft's segment files: the node already has one synced,
// crash-safe store, and keeping the consensus state next to the data it decides (the map) means
// one directory to back up, one disk-space check and one fsync policy. Meta writes are synced
// (storage.h); an append of several entries syncs only its last write, which makes the earlier
// ones durable too (one WAL).
//
// Keys: raft/term, raft/vote (u64 LE), raft/log/<index, 8 bytes big-endian> = u64 term, u16
// type, data; raft/snapshot = u64 index, u64 term, u64 conf_index, configuration, data.
//
// Not thread-safe: one RaftIo uses it from its event loop.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/status.h"
#include "storage/storage.h"

namespace shardkv::consensus {

struct StoredEntry {
  uint64_t term = 0;
  uint16_t type = 0;
  std::string data;
};

struct StoredSnapshot {
  uint64_t index = 0;
  uint64_t term = 0;
  uint64_t conf_index = 0;
  std::string conf;  // EncodeRaftConfiguration
  std::string data;
};

struct StoredState {
  uint64_t term = 0;
  uint64_t vote = 0;
  std::optional<StoredSnapshot> snapshot;
  uint64_t start_index = 1;  // index of entries[0]
  std::vector<StoredEntry> entries;
};

// Consulted before every write of a RaftLogStore; a non-OK status fails that write as if the
// disk had (tests inject "no space left on device" this way). Empty: no injection.
using StoreFault = std::function<Status()>;

class RaftLogStore {
 public:
  explicit RaftLogStore(storage::Storage* storage, StoreFault fault = nullptr)
      : storage_(storage), fault_(std::move(fault)) {}

  // Everything, for raft_io.load. Corruption if the log has a gap.
  [[nodiscard]] StatusOr<StoredState> Load();
  [[nodiscard]] Status SetTerm(uint64_t term);  // also clears the vote, as raft requires
  [[nodiscard]] Status SetVote(uint64_t id);
  // Writes entries at first_index, first_index+1, ...
  [[nodiscard]] Status Append(uint64_t first_index, const std::vector<StoredEntry>& entries);
  // Deletes every entry with index >= from, the highest first: an interrupted truncation leaves
  // a log without a gap.
  [[nodiscard]] Status TruncateFrom(uint64_t from);
  // Stores the snapshot, then deletes every entry with index <= delete_through.
  [[nodiscard]] Status PutSnapshot(const StoredSnapshot& snapshot, uint64_t delete_through);
  [[nodiscard]] StatusOr<std::optional<StoredSnapshot>> GetSnapshot();
  // True if nothing was ever stored (a pristine server).
  [[nodiscard]] StatusOr<bool> Empty();
  // Deletes everything under raft/ (a node adopted into another cluster starts over).
  [[nodiscard]] Status Wipe();
  // A synced write of a key of its own, nothing else: OK once the store takes writes again
  // after an I/O error (RaftReplica then reloads and takes part again).
  [[nodiscard]] Status Probe();

 private:
  [[nodiscard]] Status DeleteWhere(bool (*pred)(uint64_t index, uint64_t bound), uint64_t bound);
  [[nodiscard]] Status Fault() const { return fault_ ? fault_() : Status::OK(); }
  [[nodiscard]] Status Put(std::string_view key, std::string_view value, bool sync = true);
  [[nodiscard]] Status Delete(std::string_view key);

  storage::Storage* storage_;
  StoreFault fault_;
};

}  // namespace shardkv::consensus
