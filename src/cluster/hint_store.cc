#include "cluster/hint_store.h"

#include <spdlog/spdlog.h>

#include <charconv>
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

// When a hinted write was made: its newest register's physical time (an expiry-only hint has no
// value version). A counter entry alone has no register version at all: `now_ms`, never too old
// to replay, since entries merge by maximum and carry no value a purged tombstone could let back.
uint64_t WrittenMs(const storage::Envelope& env, uint64_t now_ms) {
  if (env.newest_version() == storage::Version{} && !env.counter.empty()) return now_ms;
  return common::HlcClock::PhysicalMs(env.newest_version().timestamp);
}

}  // namespace

bool ParseDecimal(std::string_view text, uint64_t* out) {
  // Into a local first: a half-parsed or overflowing value must leave *out as it was.
  const char* end = text.data() + text.size();
  uint64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) return false;
  *out = v;
  return true;
}

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
      // Unreadable values count as old: MarkOverdue's scan judges them exactly.
      std::string key;
      storage::Envelope env;
      const uint64_t written =
          DecodeHintValue(v, &key, &env).ok() ? WrittenMs(env, now_ms_()) : uint64_t{0};
      auto [it, fresh] = oldest_.emplace(target, written);
      if (!fresh) it->second = std::min(it->second, written);
    }
    if (batch->size() < 4096) break;
    after = batch->back().first;
  }
  seq_ = max_seq + 1;
  auto repair = storage_->ScanAux(storage::AuxColumn::kMeta, kNeedsRepairPrefix, "", 1024);
  if (repair.ok()) {
    for (const auto& [k, v] : *repair) {
      uint64_t target = 0, mark_ms = 0;
      if (!ParseDecimal(k.substr(kNeedsRepairPrefix.size()), &target)) continue;
      // Before marks carried a time the value was "1": the oldest possible mark.
      if (!ParseDecimal(v, &mark_ms) || mark_ms == 0) mark_ms = 1;
      needs_repair_[static_cast<uint32_t>(target)] = mark_ms;
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
  const uint64_t written = WrittenMs(envelope, now_ms_());
  auto [it, fresh] = oldest_.emplace(target, written);
  if (!fresh) it->second = std::min(it->second, written);
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
    const uint64_t written_ms = WrittenMs(env, now_ms);
    if (!drop && now_ms > written_ms && now_ms - written_ms > grace_ms_) {
      // Too old to replay safely: tombstones it should be compared against may be gone.
      drop = true;
      ++expired_;
      common::MutexLock lock(&mu_);
      uint64_t& mark = needs_repair_[target];
      if (written_ms > mark) {
        mark = written_ms;
        Status s = storage_->PutAux(storage::AuxColumn::kMeta,
                                    std::string(kNeedsRepairPrefix) + std::to_string(target),
                                    std::to_string(written_ms));
        if (!s.ok()) spdlog::warn("recording that node {} needs repair: {}", target, s.ToString());
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
    if (--per_target_[target] == 0) {
      per_target_.erase(target);
      oldest_.erase(target);
    }
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
      if (per_target_.count(target) != 0 && --per_target_[target] == 0) {
        per_target_.erase(target);
        oldest_.erase(target);
      }
      --pending_;
      UpdateProtection();
    }
    if (batch->size() < 4096) break;
  }
  return deleted;
}

size_t HintStore::MarkOverdue() {
  const uint64_t now_ms = now_ms_();
  std::vector<uint32_t> suspects;
  {
    common::MutexLock lock(&mu_);
    for (const auto& [target, oldest] : oldest_) {
      // oldest_ is a lower bound (replayed hints do not raise it), so it only says when to look.
      auto mark = needs_repair_.find(target);
      if (now_ms > oldest && now_ms - oldest > grace_ms_ &&
          (mark == needs_repair_.end() || mark->second < oldest)) {
        suspects.push_back(target);
      }
    }
  }
  size_t marked = 0;
  for (uint32_t target : suspects) {
    // The exact oldest pending hint, and the newest of those past the grace.
    std::optional<uint64_t> exact;
    uint64_t newest_overdue = 0;
    std::string after;
    for (;;) {
      auto batch = storage_->ScanAux(storage::AuxColumn::kHints, storage::HintTargetPrefix(target),
                                     after, 4096);
      if (!batch.ok()) break;
      for (const auto& [k, v] : *batch) {
        std::string key;
        storage::Envelope env;
        if (!DecodeHintValue(v, &key, &env).ok()) continue;  // Replay drops it
        const uint64_t written = WrittenMs(env, now_ms);
        exact = std::min(exact.value_or(written), written);
        if (now_ms > written && now_ms - written > grace_ms_) {
          newest_overdue = std::max(newest_overdue, written);
        }
      }
      if (batch->size() < 4096) break;
      after = batch->back().first;
    }
    common::MutexLock lock(&mu_);
    if (auto it = oldest_.find(target); it != oldest_.end()) {
      it->second = std::max(it->second, exact.value_or(now_ms));
    }
    uint64_t& mark = needs_repair_[target];
    if (newest_overdue > mark) {
      mark = newest_overdue;
      Status s = storage_->PutAux(storage::AuxColumn::kMeta,
                                  std::string(kNeedsRepairPrefix) + std::to_string(target),
                                  std::to_string(newest_overdue));
      if (!s.ok()) spdlog::warn("recording that node {} needs repair: {}", target, s.ToString());
      spdlog::warn("node {} needs repair: hints for it are older than the tombstone grace", target);
      ++marked;
    } else if (mark == 0) {
      needs_repair_.erase(target);  // the lookup above inserted it
    }
  }
  return marked;
}

std::vector<uint32_t> HintStore::Targets() const {
  common::MutexLock lock(&mu_);
  std::vector<uint32_t> out;
  for (const auto& [t, n] : per_target_) out.push_back(t);
  return out;
}

std::vector<uint32_t> HintStore::NeedsRepair() const {
  common::MutexLock lock(&mu_);
  std::vector<uint32_t> out;
  for (const auto& [target, mark] : needs_repair_) out.push_back(target);
  return out;
}

std::map<uint32_t, uint64_t> HintStore::RepairMarks() const {
  common::MutexLock lock(&mu_);
  return needs_repair_;
}

StatusOr<bool> HintStore::ClearMark(uint32_t target, uint64_t rebuilt_at_ms) {
  common::MutexLock lock(&mu_);
  auto it = needs_repair_.find(target);
  if (it == needs_repair_.end() || it->second > rebuilt_at_ms) return false;
  SHARDKV_RETURN_IF_ERROR(storage_->DeleteAux(
      storage::AuxColumn::kMeta, std::string(kNeedsRepairPrefix) + std::to_string(target)));
  needs_repair_.erase(it);
  return true;
}

}  // namespace shardkv::cluster
