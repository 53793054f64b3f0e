// Storage::WriteMany: a coordinator's batch of stamped writes (MSET, pipelined SETs) in one
// WriteBatch, so the batch pays one WAL append and one write-group entry instead of one each.
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

#include "storage/storage.h"
#include "storage/storage_rep.h"

namespace shardkv::storage {

std::vector<StatusOr<WriteResult>> Storage::WriteMany(const std::vector<RangeEntry>& entries) {
  std::vector<StatusOr<WriteResult>> results;
  results.reserve(entries.size());
  if (rep_->db == nullptr) {
    for (size_t i = 0; i < entries.size(); ++i) {
      results.emplace_back(Status::FailedPrecondition("storage is closed"));
    }
    return results;
  }
  // Each entry is checked as Write() checks it; one that fails gets its own error and the
  // others still go in (they are independent writes).
  std::vector<bool> valid(entries.size(), false);
  for (size_t i = 0; i < entries.size(); ++i) {
    const Envelope& e = entries[i].envelope;
    Status s = ValidateWrite(entries[i].key, e);
    if (s.ok()) s = ValidateEnvelopeShape(e);
    if (s.ok()) s = rep_->clock->Update(e.newest_version().timestamp);
    if (s.ok()) {
      valid[i] = true;
      results.emplace_back(WriteResult{});
    } else {
      results.emplace_back(std::move(s));
    }
  }

  // One slot per distinct stored key: its record as read, then as the entries leave it.
  struct Slot {
    std::string stored_key;
    std::optional<Envelope> record;
    std::optional<KeyShape> before;  // the stored record's shape, for the live-key count
    bool dirty = false;
  };
  std::vector<Slot> slots;
  std::vector<size_t> slot_of(entries.size(), SIZE_MAX);
  std::unordered_map<std::string, size_t> index;
  index.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!valid[i]) continue;
    std::string stored = EncodeDataKey(entries[i].token, entries[i].key);
    auto [it, inserted] = index.emplace(stored, slots.size());
    if (inserted) slots.push_back(Slot{std::move(stored), std::nullopt, std::nullopt, false});
    slot_of[i] = it->second;
  }
  if (slots.empty()) return results;

  // Lock every stripe involved in ascending order (Rep::stripes), read every key once.
  std::vector<size_t> order(slots.size());
  for (size_t j = 0; j < order.size(); ++j) order[j] = j;
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return slots[a].stored_key < slots[b].stored_key; });
  std::vector<size_t> stripe_ids;
  stripe_ids.reserve(slots.size());
  for (const Slot& slot : slots) stripe_ids.push_back(rep_->StripeOf(slot.stored_key));
  std::sort(stripe_ids.begin(), stripe_ids.end());
  stripe_ids.erase(std::unique(stripe_ids.begin(), stripe_ids.end()), stripe_ids.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(stripe_ids.size());
  for (size_t id : stripe_ids) locks.emplace_back(rep_->stripes[id]);

  const size_t n = order.size();
  std::vector<rocksdb::Slice> keys(n);
  for (size_t j = 0; j < n; ++j) keys[j] = slots[order[j]].stored_key;
  std::vector<rocksdb::PinnableSlice> existing(n);
  std::vector<rocksdb::Status> statuses(n);
  rep_->db->MultiGet(rocksdb::ReadOptions(), rep_->data_cf, n, keys.data(), existing.data(),
                     statuses.data(), /*sorted_input=*/true);
  std::vector<Status> slot_error(slots.size());
  for (size_t j = 0; j < n; ++j) {
    Slot& slot = slots[order[j]];
    if (statuses[j].ok()) {
      EnvelopeView current;
      Status s = DecodeEnvelope(ToView(existing[j]), &current).WithContext("stored value");
      if (!s.ok()) {
        slot_error[order[j]] = std::move(s);
        continue;
      }
      slot.record = current.ToEnvelope();
      slot.before = KeyShape::Of(current);
    } else if (!statuses[j].IsNotFound()) {
      slot_error[order[j]] = rep_->Read(statuses[j], "reading before write");
    }
  }

  // The entries in their order: each meets the record the earlier ones left, so the answers are
  // those of Write() called once per entry in turn.
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!valid[i]) continue;
    Slot& slot = slots[slot_of[i]];
    if (!slot_error[slot_of[i]].ok()) {
      results[i] = slot_error[slot_of[i]];
      continue;
    }
    const Envelope& incoming = entries[i].envelope;
    WriteResult& r = *results[i];
    r.written = incoming.newest_version();
    if (!slot.record) {
      slot.record = incoming;
      slot.dirty = true;
      r.outcome = WriteOutcome::kApplied;
    } else {
      switch (MergeInto(&*slot.record, incoming)) {
        case MergeOutcome::kSuperseded:
          r.outcome = WriteOutcome::kSuperseded;
          break;
        case MergeOutcome::kDuplicate:
          r.outcome = WriteOutcome::kDuplicate;
          break;
        case MergeOutcome::kChanged:
          r.outcome = WriteOutcome::kApplied;
          slot.dirty = true;
          break;
      }
    }
    r.stored = slot.record->newest_version();
  }

  rocksdb::WriteBatch batch;
  std::string encoded;
  for (size_t j : order) {
    const Slot& slot = slots[j];
    if (!slot.dirty) continue;
    encoded.clear();
    EncodeEnvelope(*slot.record, &encoded);
    if (rocksdb::Status rs = batch.Put(rep_->data_cf, slot.stored_key, encoded); !rs.ok()) {
      slot_error[j] = FromRocks(rs, "building write batch");
    }
  }
  Status written = Status::OK();
  if (batch.Count() > 0) {
    written = rep_->Write(rep_->db->Write(rep_->data_write_options, &batch), "writing data");
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    if (!valid[i] || !results[i].ok()) continue;
    if (!written.ok()) results[i] = written;
    if (!slot_error[slot_of[i]].ok()) results[i] = slot_error[slot_of[i]];
  }
  if (written.ok()) {
    for (const Slot& slot : slots) {
      if (slot.dirty)
        rep_->live_keys.Replace(slot.before ? &*slot.before : nullptr, KeyShape::Of(*slot.record));
    }
  }
  return results;
}

}  // namespace shardkv::storage
