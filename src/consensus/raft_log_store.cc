#include "consensus/raft_log_store.h"

#include "consensus/raft_codec.h"
#include "storage/key_codec.h"

namespace shardkv::consensus {
namespace {

using storage::AuxColumn;

constexpr std::string_view kTermKey = "raft/term";
constexpr std::string_view kVoteKey = "raft/vote";
constexpr std::string_view kSnapshotKey = "raft/snapshot";
constexpr std::string_view kLogPrefix = "raft/log/";
constexpr std::string_view kProbeKey = "raft/probe";
constexpr size_t kScanBatch = 256;

std::string LogKey(uint64_t index) {
  std::string k(kLogPrefix);
  storage::AppendBigEndian64(&k, index);
  return k;
}

StatusOr<uint64_t> GetNumber(storage::Storage* s, std::string_view key) {
  StatusOr<std::string> v = s->GetAux(AuxColumn::kMeta, key);
  if (!v.ok()) {
    if (v.status().code() == Status::Code::kNotFound) return uint64_t{0};
    return v.status();
  }
  std::string_view in = *v;
  uint64_t n = 0;
  if (!GetU64(&in, &n) || !in.empty()) {
    return Status::Corruption("raft state: " + std::string(key) + " is malformed");
  }
  return n;
}

std::string Number(uint64_t n) {
  std::string v;
  PutU64(&v, n);
  return v;
}

}  // namespace

Status RaftLogStore::Put(std::string_view key, std::string_view value, bool sync) {
  SHARDKV_RETURN_IF_ERROR(Fault());
  return storage_->PutAux(AuxColumn::kMeta, key, value, sync);
}

Status RaftLogStore::Delete(std::string_view key) {
  SHARDKV_RETURN_IF_ERROR(Fault());
  return storage_->DeleteAux(AuxColumn::kMeta, key);
}

Status RaftLogStore::Probe() { return Put(kProbeKey, ""); }

StatusOr<bool> RaftLogStore::Empty() {
  StatusOr<uint64_t> term = GetNumber(storage_, kTermKey);
  if (!term.ok()) return term.status();
  auto entries = storage_->ScanAux(AuxColumn::kMeta, kLogPrefix, "", 1);
  if (!entries.ok()) return entries.status();
  StatusOr<std::optional<StoredSnapshot>> snap = GetSnapshot();
  if (!snap.ok()) return snap.status();
  return *term == 0 && entries->empty() && !snap->has_value();
}

StatusOr<StoredState> RaftLogStore::Load() {
  StoredState state;
  StatusOr<uint64_t> term = GetNumber(storage_, kTermKey);
  if (!term.ok()) return term.status();
  StatusOr<uint64_t> vote = GetNumber(storage_, kVoteKey);
  if (!vote.ok()) return vote.status();
  state.term = *term;
  state.vote = *vote;
  StatusOr<std::optional<StoredSnapshot>> snap = GetSnapshot();
  if (!snap.ok()) return snap.status();
  state.snapshot = std::move(*snap);
  std::string after;
  uint64_t expected = 0;
  for (;;) {
    auto batch = storage_->ScanAux(AuxColumn::kMeta, kLogPrefix, after, kScanBatch);
    if (!batch.ok()) return batch.status();
    for (auto& [key, value] : *batch) {
      if (key.size() != kLogPrefix.size() + 8) {
        return Status::Corruption("raft log: a key of " + std::to_string(key.size()) + " bytes");
      }
      const uint64_t index = storage::ReadBigEndian64(key.data() + kLogPrefix.size());
      if (state.entries.empty()) {
        state.start_index = index;
      } else if (index != expected) {
        return Status::Corruption("raft log: entry " + std::to_string(expected) +
                                  " is missing (next is " + std::to_string(index) + ")");
      }
      expected = index + 1;
      std::string_view in = value;
      StoredEntry e;
      if (!GetU64(&in, &e.term) || !GetU16(&in, &e.type)) {
        return Status::Corruption("raft log: entry " + std::to_string(index) + " is malformed");
      }
      e.data.assign(in);
      state.entries.push_back(std::move(e));
    }
    if (batch->size() < kScanBatch) break;
    after = batch->back().first;
  }
  if (state.entries.empty()) {
    state.start_index = state.snapshot ? state.snapshot->index + 1 : 1;
  }
  return state;
}

Status RaftLogStore::SetTerm(uint64_t term) {
  // Vote first: a crash between the two leaves the old term with no vote, which is safe (this
  // server may vote again in a term it has not recorded, as if it had never voted).
  SHARDKV_RETURN_IF_ERROR(Delete(kVoteKey));
  return Put(kTermKey, Number(term));
}

Status RaftLogStore::SetVote(uint64_t id) { return Put(kVoteKey, Number(id)); }

Status RaftLogStore::Append(uint64_t first_index, const std::vector<StoredEntry>& entries) {
  for (size_t i = 0; i < entries.size(); ++i) {
    std::string v;
    PutU64(&v, entries[i].term);
    PutU16(&v, entries[i].type);
    v.append(entries[i].data);
    const bool last = i + 1 == entries.size();
    SHARDKV_RETURN_IF_ERROR(Put(LogKey(first_index + i), v, /*sync=*/last));
  }
  return Status::OK();
}

Status RaftLogStore::DeleteWhere(bool (*pred)(uint64_t, uint64_t), uint64_t bound) {
  std::string after;
  for (;;) {
    auto batch = storage_->ScanAux(AuxColumn::kMeta, kLogPrefix, after, kScanBatch);
    if (!batch.ok()) return batch.status();
    for (auto& [key, value] : *batch) {
      if (key.size() != kLogPrefix.size() + 8) continue;
      const uint64_t index = storage::ReadBigEndian64(key.data() + kLogPrefix.size());
      if (!pred(index, bound)) continue;
      SHARDKV_RETURN_IF_ERROR(Delete(key));
    }
    if (batch->size() < kScanBatch) return Status::OK();
    after = batch->back().first;
  }
}

Status RaftLogStore::Wipe() {
  for (;;) {
    auto batch = storage_->ScanAux(AuxColumn::kMeta, "raft/", "", kScanBatch);
    if (!batch.ok()) return batch.status();
    for (auto& [key, value] : *batch) {
      SHARDKV_RETURN_IF_ERROR(Delete(key));
    }
    if (batch->size() < kScanBatch) return Status::OK();
  }
}

Status RaftLogStore::TruncateFrom(uint64_t from) {
  // The keys first, then deleted from the highest index down: a write that fails half way
  // leaves entries [start, k) for some k, never a gap (which Load would call corruption).
  std::vector<std::string> doomed;
  const std::string first = LogKey(from);
  for (std::string cursor;;) {
    auto batch = storage_->ScanAux(AuxColumn::kMeta, kLogPrefix, cursor, kScanBatch);
    if (!batch.ok()) return batch.status();
    for (auto& [key, value] : *batch) {
      if (key.size() == kLogPrefix.size() + 8 && key >= first) doomed.push_back(key);
    }
    if (batch->size() < kScanBatch) break;
    cursor = batch->back().first;
  }
  for (auto it = doomed.rbegin(); it != doomed.rend(); ++it) {
    SHARDKV_RETURN_IF_ERROR(Delete(*it));
  }
  return Status::OK();
}

Status RaftLogStore::PutSnapshot(const StoredSnapshot& snap, uint64_t delete_through) {
  std::string v;
  PutU64(&v, snap.index);
  PutU64(&v, snap.term);
  PutU64(&v, snap.conf_index);
  PutU32(&v, static_cast<uint32_t>(snap.conf.size()));
  v.append(snap.conf);
  v.append(snap.data);
  SHARDKV_RETURN_IF_ERROR(Put(kSnapshotKey, v));
  return DeleteWhere([](uint64_t index, uint64_t bound) { return index <= bound; }, delete_through);
}

StatusOr<std::optional<StoredSnapshot>> RaftLogStore::GetSnapshot() {
  StatusOr<std::string> v = storage_->GetAux(AuxColumn::kMeta, kSnapshotKey);
  if (!v.ok()) {
    if (v.status().code() == Status::Code::kNotFound) return std::optional<StoredSnapshot>();
    return v.status();
  }
  std::string_view in = *v;
  StoredSnapshot snap;
  uint32_t conf_len = 0;
  if (!GetU64(&in, &snap.index) || !GetU64(&in, &snap.term) || !GetU64(&in, &snap.conf_index) ||
      !GetU32(&in, &conf_len) || in.size() < conf_len) {
    return Status::Corruption("raft snapshot is malformed");
  }
  snap.conf.assign(in.substr(0, conf_len));
  snap.data.assign(in.substr(conf_len));
  return std::optional<StoredSnapshot>(std::move(snap));
}

}  // namespace shardkv::consensus
