#include "cluster/hint_store.h"

#include <map>

#include "common/hlc.h"
#include "storage/key_codec.h"

namespace shardkv::cluster {
namespace {

constexpr std::string_view kNeedsRepairPrefix = "cluster/needs_repair/";

std::string EncodeHintValue(std::string_view key, const storage::Envelope& env) {
  std::string out;
  storage::AppendBigEndian32(&out, static_cast<uint32_t>(key.size()));
  out.append(key);
  out += storage::EncodeEnvelope(env);
  return out;
}

Status DecodeHintValue(std::string_view value, std::string* key, storage::Envelope* env) {
  if (value.size() < 4) return Status::Corruption("hint value too short");
  const uint32_t len = (uint32_t{static_cast<uint8_t>(value[0])} << 24) |
                       (uint32_t{static_cast<uint8_t>(value[1])} << 16) |
                       (uint32_t{static_cast<uint8_t>(value[2])} << 8) |
                       uint32_t{static_cast<uint8_t>(value[3])};
  if (value.size() < 4 + size_t{len}) return Status::Corruption("hint key truncated");
  key->assign(value.substr(4, len));
  storage::EnvelopeView view;
  SHARDKV_RETURN_IF_ERROR(storage::DecodeEnvelope(value.substr(4 + len), &view));
  *env = view.ToEnvelope();
  return Status::OK();
}

}  // namespace

HintStore::HintStore(storage::Storage* storage, uint64_t grace_ms, std::function<uint64_t()> now_ms)
    : storage_(storage), grace_ms_(grace_ms), now_ms_(std::move(now_ms)) {}

Status HintStore::Load() {
  common::MutexLock lock(&mu_);
  std::string after;
  uint64_t max_seq = 0;
  for (;;) {
    auto batch = storage_->ScanAux(storage::AuxColumn::kHints, "", after, 4096);
    if (!batch.ok()) return batch.status();
    for (const auto& [k, v] : *batch) {
      uint32_t target = 0;
      uint64_t token = 0, seq = 0;
      if (!storage::DecodeHintKey(k, &target, &token, &seq)) continue;
      ++per_target_[target];
      ++pending_;
      max_seq = std::max(max_seq, seq);
    }
    if (batch->size() < 4096) break;
    after = batch->back().first;
  }
  seq_ = max_seq + 1;
  auto repair = storage_->ScanAux(storage::AuxColumn::kMeta, kNeedsRepairPrefix, "", 1024);
  if (repair.ok()) {
    for (const auto& [k, v] : *repair) {
      needs_repair_.insert(static_cast<uint32_t>(std::stoul(k.substr(kNeedsRepairPrefix.size()))));
    }
  }
  UpdateProtection();
  return Status::OK();
}

void HintStore::UpdateProtection() {
  if (pending_ > 0 && !protection_id_) {
    auto id = storage_->ProtectRange(TokenRange{0, UINT64_MAX});
    if (id.ok()) protection_id_ = *id;
  } else if (pending_ == 0 && protection_id_) {
    Status s = storage_->UnprotectRange(*protection_id_);
    static_cast<void>(s);  // an unknown id means it is already gone
    protection_id_.reset();
  }
}

Status HintStore::Add(uint32_t target, uint64_t token, std::string_view key,
                      const storage::Envelope& envelope) {
  const uint64_t seq = seq_.fetch_add(1);
  common::MutexLock lock(&mu_);
  // Protect before the hint exists, so no compaction can judge a tombstone in between.
  ++pending_;
  UpdateProtection();
  Status s =
      storage_->PutAux(storage::AuxColumn::kHints, storage::EncodeHintKey(target, token, seq),
                       EncodeHintValue(key, envelope));
  if (!s.ok()) {
    --pending_;
    UpdateProtection();
    return s;
  }
  ++per_target_[target];
  return Status::OK();
}

StatusOr<size_t> HintStore::Replay(uint32_t target, size_t max, const Sender& send) {
  auto batch =
      storage_->ScanAux(storage::AuxColumn::kHints, storage::HintTargetPrefix(target), "", max);
  if (!batch.ok()) return batch.status();
  size_t delivered = 0;
  const uint64_t now_ms = now_ms_();
  for (const auto& [k, v] : *batch) {
    std::string key;
    storage::Envelope env;
    Status decoded = DecodeHintValue(v, &key, &env);
    uint32_t t = 0;
    uint64_t token = 0, seq = 0;
    if (!storage::DecodeHintKey(k, &t, &token, &seq)) decoded = Status::Corruption("bad hint key");
    bool drop = !decoded.ok();
    // The newest register: an expiry-only hint has no value version.
    const uint64_t written_ms = common::HlcClock::PhysicalMs(env.newest_version().timestamp);
    if (!drop && now_ms > written_ms && now_ms - written_ms > grace_ms_) {
      // Too old to replay safely: tombstones it should be compared against may be gone.
      drop = true;
      ++expired_;
      common::MutexLock lock(&mu_);
      if (needs_repair_.insert(target).second) {
        Status s = storage_->PutAux(storage::AuxColumn::kMeta,
                                    std::string(kNeedsRepairPrefix) + std::to_string(target), "1");
        static_cast<void>(s);
      }
    }
    if (!drop) {
      Status sent = send(token, key, env);
      if (!sent.ok()) return delivered;
      ++delivered;
      ++replayed_;
    }
    SHARDKV_RETURN_IF_ERROR(storage_->DeleteAux(storage::AuxColumn::kHints, k));
    common::MutexLock lock(&mu_);
    if (--per_target_[target] == 0) per_target_.erase(target);
    --pending_;
    UpdateProtection();
  }
  return delivered;
}

StatusOr<size_t> HintStore::Discard(uint32_t target) {
  size_t deleted = 0;
  // Bounded by what the store holds: each round deletes the batch it read.
  for (;;) {
    auto batch =
        storage_->ScanAux(storage::AuxColumn::kHints, storage::HintTargetPrefix(target), "", 4096);
    if (!batch.ok()) return batch.status();
    for (const auto& [k, v] : *batch) {
      SHARDKV_RETURN_IF_ERROR(storage_->DeleteAux(storage::AuxColumn::kHints, k));
      ++deleted;
      ++discarded_;
      common::MutexLock lock(&mu_);
      if (per_target_.count(target) != 0 && --per_target_[target] == 0) per_target_.erase(target);
      --pending_;
      UpdateProtection();
    }
    if (batch->size() < 4096) break;
  }
  return deleted;
}

std::vector<uint32_t> HintStore::Targets() const {
  common::MutexLock lock(&mu_);
  std::vector<uint32_t> out;
  for (const auto& [t, n] : per_target_) out.push_back(t);
  return out;
}

std::vector<uint32_t> HintStore::NeedsRepair() const {
  common::MutexLock lock(&mu_);
  return {needs_repair_.begin(), needs_repair_.end()};
}

}  // namespace shardkv::cluster
