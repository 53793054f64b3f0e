// Storage: token-range operations (snapshots, scans, batch apply, DeleteRange, statistics,
// compaction) and diagnostics.
#include <rocksdb/table_properties.h>
#include <rocksdb/utilities/debug.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <utility>

#include "storage/storage.h"
#include "storage/storage_rep.h"

namespace shardkv::storage {
namespace {

// An exclusive upper bound for the data keys of `range`, or "" when there is none: keys with
// token UINT64_MAX may continue with any number of 0xff bytes, so no finite key is above them all.
std::string ExclusiveEnd(const TokenRange& range) {
  return range.last == UINT64_MAX ? std::string() : TokenKey(range.last + 1);
}

}  // namespace

std::unique_ptr<StorageSnapshot> Storage::NewSnapshot() {
  if (rep_->db == nullptr) return nullptr;
  auto rep = std::make_unique<StorageSnapshot::Rep>();
  rep->db = rep_->db.get();
  rep->snapshot = rep_->db->GetSnapshot();
  return std::unique_ptr<StorageSnapshot>(new StorageSnapshot(std::move(rep), rep_->WallMs()));
}

StatusOr<ScanBatch> Storage::Scan(const TokenRange& range, const ScanOptions& options) {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  if (!range.Valid()) return Status::InvalidArgument("token range has first > last");
  rocksdb::ReadOptions ro;
  if (options.snapshot != nullptr) ro.snapshot = options.snapshot->rep_->snapshot;
  // Streams read each key once: keep them from evicting the point-read working set.
  ro.fill_cache = false;
  const std::string begin = TokenKey(range.first);
  const std::string end = ExclusiveEnd(range);
  rocksdb::Slice end_slice(end);
  if (!end.empty()) ro.iterate_upper_bound = &end_slice;

  ScanBatch batch;
  batch.cursor = options.cursor;
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(ro, rep_->data_cf));
  const bool resume = !options.cursor.empty() && options.cursor >= begin;
  it->Seek(resume ? rocksdb::Slice(options.cursor) : rocksdb::Slice(begin));
  if (resume && it->Valid() && ToView(it->key()) == options.cursor) it->Next();

  size_t bytes = 0;
  for (; it->Valid(); it->Next()) {
    if (batch.entries.size() >= options.max_entries || bytes >= options.max_bytes) break;
    const std::string_view stored_key = ToView(it->key());
    RangeEntry entry;
    std::string_view user_key;
    if (!DecodeDataKey(stored_key, &entry.token, &user_key)) {
      return Status::Corruption("data key shorter than a token");
    }
    EnvelopeView view;
    SHARDKV_RETURN_IF_ERROR(DecodeEnvelope(ToView(it->value()), &view)
                                .WithContext("value of token " + std::to_string(entry.token)));
    // The cursor advances over skipped tombstones too, so a resumed scan does not re-read them.
    batch.cursor.assign(stored_key);
    // Expiry-only records hold no value either; expired values are still returned (the caller
    // judges expiry with its own clock, as a coordinator does for reads).
    if ((view.tombstone || view.value_absent) && !options.include_tombstones) continue;
    entry.key.assign(user_key);
    if (!options.values) view.value = {};
    entry.envelope = view.ToEnvelope();
    bytes += stored_key.size() + it->value().size();
    batch.entries.push_back(std::move(entry));
  }
  SHARDKV_RETURN_IF_ERROR(rep_->Read(it->status(), "scanning data"));
  batch.done = !it->Valid();
  return batch;
}

StatusOr<ApplyStats> Storage::ApplyBatch(const std::vector<RangeEntry>& entries) {
  ApplyStats stats;
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  if (entries.empty()) return stats;
  uint64_t newest = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Envelope& e = entries[i].envelope;
    SHARDKV_RETURN_IF_ERROR(
        ValidateWrite(entries[i].key, e).WithContext("batch entry " + std::to_string(i)));
    SHARDKV_RETURN_IF_ERROR(
        ValidateEnvelopeShape(e).WithContext("batch entry " + std::to_string(i)));
    newest = std::max(newest, e.newest_version().timestamp);
  }
  SHARDKV_RETURN_IF_ERROR(rep_->clock->Update(newest));

  // Merge repeated keys inside the batch first, so each key is compared with storage once.
  std::vector<std::string> stored(entries.size());
  std::unordered_map<std::string_view, size_t> first_index;
  std::vector<std::optional<Envelope>> combined(entries.size());
  first_index.reserve(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    stored[i] = EncodeDataKey(entries[i].token, entries[i].key);
    auto [it, inserted] = first_index.emplace(stored[i], i);
    if (inserted) continue;
    Envelope& kept = combined[it->second]
                         ? *combined[it->second]
                         : combined[it->second].emplace(entries[it->second].envelope);
    if (MergeInto(&kept, entries[i].envelope) == MergeOutcome::kDuplicate) {
      ++stats.duplicate;
    } else {
      ++stats.superseded;
    }
  }
  std::vector<size_t> winners;
  winners.reserve(first_index.size());
  for (const auto& [key, index] : first_index) winners.push_back(index);
  std::sort(winners.begin(), winners.end(),
            [&](size_t a, size_t b) { return stored[a] < stored[b]; });
  auto incoming_of = [&](size_t i) -> const Envelope& {
    return combined[i] ? *combined[i] : entries[i].envelope;
  };

  // Lock every stripe involved, in ascending order (see Rep::stripes).
  std::vector<size_t> stripe_ids;
  stripe_ids.reserve(winners.size());
  for (size_t i : winners) stripe_ids.push_back(rep_->StripeOf(stored[i]));
  std::sort(stripe_ids.begin(), stripe_ids.end());
  stripe_ids.erase(std::unique(stripe_ids.begin(), stripe_ids.end()), stripe_ids.end());
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(stripe_ids.size());
  for (size_t id : stripe_ids) locks.emplace_back(rep_->stripes[id]);

  const size_t n = winners.size();
  std::vector<rocksdb::Slice> slices(n);
  for (size_t j = 0; j < n; ++j) slices[j] = stored[winners[j]];
  std::vector<rocksdb::PinnableSlice> existing(n);
  std::vector<rocksdb::Status> statuses(n);
  rep_->db->MultiGet(rocksdb::ReadOptions(), rep_->data_cf, n, slices.data(), existing.data(),
                     statuses.data(), /*sorted_input=*/true);

  rocksdb::WriteBatch batch;
  std::string encoded;
  // Each applied entry's record before (none if created) and after, for the live-key count.
  std::vector<std::pair<std::optional<KeyShape>, KeyShape>> shapes;
  for (size_t j = 0; j < n; ++j) {
    const size_t i = winners[j];
    const Envelope& incoming = incoming_of(i);
    Envelope merged;
    std::optional<KeyShape> before;
    if (statuses[j].ok()) {
      EnvelopeView current;
      SHARDKV_RETURN_IF_ERROR(
          DecodeEnvelope(ToView(existing[j]), &current)
              .WithContext("stored value of token " + std::to_string(entries[i].token)));
      merged = current.ToEnvelope();
      before = KeyShape::Of(current);
      const MergeOutcome outcome = MergeInto(&merged, incoming);
      if (outcome == MergeOutcome::kSuperseded) {
        ++stats.superseded;
        continue;
      }
      if (outcome == MergeOutcome::kDuplicate) {
        ++stats.duplicate;
        continue;
      }
    } else if (statuses[j].IsNotFound()) {
      merged = incoming;
      ++stats.created;
      if (incoming.tombstone) ++stats.created_tombstones;
    } else {
      return rep_->Read(statuses[j], "reading before batch write");
    }
    encoded.clear();
    EncodeEnvelope(merged, &encoded);
    SHARDKV_RETURN_IF_ERROR(
        FromRocks(batch.Put(rep_->data_cf, slices[j], encoded), "building write batch"));
    shapes.emplace_back(before, KeyShape::Of(merged));
    ++stats.applied;
  }
  if (batch.Count() > 0) {
    SHARDKV_RETURN_IF_ERROR(
        rep_->Write(rep_->db->Write(rep_->data_write_options, &batch), "writing batch"));
  }
  for (const auto& [was, now] : shapes) rep_->live_keys.Replace(was ? &*was : nullptr, now);
  return stats;
}

Status Storage::DeleteRange(const TokenRange& range) { return DeleteRanges({range}).status(); }

StatusOr<size_t> Storage::DeleteRanges(std::vector<TokenRange> ranges) {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  for (const TokenRange& r : ranges) {
    if (!r.Valid()) return Status::InvalidArgument("token range has first > last");
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const TokenRange& a, const TokenRange& b) { return a.first < b.first; });
  // Every key stripe is held from the look until the write: no write lands in between, so the
  // records seen are exactly those deleted, and the live-key count loses exactly those (inline
  // for a small range; from a snapshot taken here, in the background, for a large one).
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(Rep::kLockStripes);
  for (auto& stripe : rep_->stripes) locks.emplace_back(stripe);
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  std::unique_ptr<rocksdb::Iterator> it(rep_->db->NewIterator(ro, rep_->data_cf));
  rocksdb::WriteBatch batch;
  std::vector<TokenRange> counted_later;  // range-deleted: counted from the snapshot
  std::vector<KeyShape> removed;          // point-deleted live records
  size_t dropped = 0;
  std::vector<std::pair<std::string, std::optional<KeyShape>>> few;
  for (const TokenRange& r : ranges) {
    // A ring arc of a large ring holds a few records or none; a range tombstone each (a change
    // of a 100,000-vnode ring drops ~25,000 arcs) would slow every later read, so an arc with
    // at most kPointDeleteMax records gets point deletes and an empty one nothing.
    constexpr size_t kPointDeleteMax = 32;
    few.clear();
    bool large = false;
    for (it->Seek(TokenKey(r.first)); it->Valid(); it->Next()) {
      const rocksdb::Slice key = it->key();
      if (key.size() < kTokenBytes || ReadBigEndian64(key.data()) > r.last) break;
      if (few.size() == kPointDeleteMax) {
        large = true;
        break;
      }
      EnvelopeView view;
      std::optional<KeyShape> shape;  // an undecodable record counts as nothing, as at Open
      if (DecodeEnvelope(ToView(it->value()), &view).ok()) shape = KeyShape::Of(view);
      few.emplace_back(key.ToString(), shape);
    }
    SHARDKV_RETURN_IF_ERROR(rep_->Read(it->status(), "looking into a range to delete"));
    if (few.empty()) continue;
    ++dropped;
    if (!large) {
      for (const auto& [key, shape] : few) {
        SHARDKV_RETURN_IF_ERROR(FromRocks(batch.Delete(rep_->data_cf, key), "building batch"));
        if (shape) removed.push_back(*shape);
      }
      continue;
    }
    counted_later.push_back(r);
    const std::string begin = TokenKey(r.first);
    if (r.last != UINT64_MAX) {
      SHARDKV_RETURN_IF_ERROR(FromRocks(
          batch.DeleteRange(rep_->data_cf, begin, TokenKey(r.last + 1)), "building batch"));
      continue;
    }
    const std::string max_token = TokenKey(UINT64_MAX);
    if (r.first != UINT64_MAX) {
      SHARDKV_RETURN_IF_ERROR(
          FromRocks(batch.DeleteRange(rep_->data_cf, begin, max_token), "building batch"));
    }
    // Token UINT64_MAX has no finite exclusive end key (see ExclusiveEnd), so its keys, normally
    // none or a handful, are deleted one by one in the same atomic batch.
    for (it->Seek(max_token); it->Valid(); it->Next()) {
      SHARDKV_RETURN_IF_ERROR(FromRocks(batch.Delete(rep_->data_cf, it->key()), "building batch"));
    }
    SHARDKV_RETURN_IF_ERROR(rep_->Read(it->status(), "scanning token UINT64_MAX"));
  }
  it.reset();
  if (batch.Count() == 0) return dropped;
  const rocksdb::Snapshot* before = counted_later.empty() ? nullptr : rep_->db->GetSnapshot();
  Status deleted = rep_->Write(rep_->db->Write(rep_->data_write_options, &batch), "deleting range");
  locks.clear();
  if (!deleted.ok()) {
    if (before != nullptr) rep_->db->ReleaseSnapshot(before);
    return deleted;
  }
  for (const KeyShape& shape : removed) rep_->live_keys.Remove(shape);
  if (before != nullptr) rep_->key_count_worker->Enqueue(before, std::move(counted_later), -1);
  return dropped;
}

LiveKeyCounts Storage::LiveKeys() const {
  if (rep_->db == nullptr) return {};
  LiveKeyCounts counts = rep_->live_keys.Counts(rep_->WallMs());
  counts.complete = rep_->key_count_worker->Idle();
  return counts;
}

std::optional<uint64_t> Storage::RocksIntProperty(std::string_view name) const {
  if (rep_->db == nullptr) return std::nullopt;
  uint64_t value = 0;
  if (!rep_->db->GetIntProperty(rep_->data_cf, ToSlice(name), &value)) return std::nullopt;
  return value;
}

std::map<std::string, std::string> Storage::RocksMapProperty(std::string_view name) const {
  std::map<std::string, std::string> out;
  if (rep_->db == nullptr) return out;
  if (!rep_->db->GetMapProperty(rep_->data_cf, ToSlice(name), &out)) out.clear();
  return out;
}

StatusOr<RangeStats> Storage::ApproximateRangeStats(const TokenRange& range) {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  if (!range.Valid()) return Status::InvalidArgument("token range has first > last");
  const std::string begin = TokenKey(range.first);
  // For the top of the ring an estimate needs an end key, not an exact one: 16 0xff bytes is
  // above every key with token UINT64_MAX except those whose user key starts with 8 0xff bytes.
  std::string end = ExclusiveEnd(range);
  if (end.empty()) end.assign(16, '\xff');
  const rocksdb::Range r(begin, end);

  rocksdb::SizeApproximationOptions files_only;
  files_only.include_memtables = false;
  files_only.include_files = true;
  uint64_t file_bytes = 0;
  SHARDKV_RETURN_IF_ERROR(
      FromRocks(rep_->db->GetApproximateSizes(files_only, rep_->data_cf, &r, 1, &file_bytes),
                "estimating range size"));
  uint64_t mem_keys = 0;
  uint64_t mem_bytes = 0;
  rep_->db->GetApproximateMemTableStats(rep_->data_cf, r, &mem_keys, &mem_bytes);

  // RocksDB has no per-range key count for files; scale the range's share of file bytes by the
  // entries-per-byte of the tables that overlap it.
  rocksdb::TablePropertiesCollection props;
  SHARDKV_RETURN_IF_ERROR(
      FromRocks(rep_->db->GetPropertiesOfTablesInRange(rep_->data_cf, &r, 1, &props),
                "reading table properties"));
  uint64_t table_entries = 0;
  uint64_t table_data_bytes = 0;
  for (const auto& [file, p] : props) {
    table_entries += p->num_entries - std::min(p->num_entries, p->num_deletions);
    table_data_bytes += p->data_size;
  }
  uint64_t file_keys = 0;
  if (table_data_bytes > 0) {
    const double share =
        std::min(1.0, static_cast<double>(file_bytes) / static_cast<double>(table_data_bytes));
    file_keys = static_cast<uint64_t>(share * static_cast<double>(table_entries) + 0.5);
  }
  RangeStats stats;
  stats.approximate_keys = file_keys + mem_keys;
  stats.approximate_bytes = file_bytes + mem_bytes;
  return stats;
}

Status Storage::CompactRange(const TokenRange& range) {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  if (!range.Valid()) return Status::InvalidArgument("token range has first > last");
  rocksdb::CompactRangeOptions o;
  // Force the bottommost level through compaction too, so the tombstone filter sees everything.
  o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  const std::string begin_key = TokenKey(range.first);
  const std::string end_key = ExclusiveEnd(range);  // CompactRange's end is inclusive: harmless
  const rocksdb::Slice begin(begin_key);
  const rocksdb::Slice end(end_key);
  return rep_->Write(
      rep_->db->CompactRange(o, rep_->data_cf, &begin, end_key.empty() ? nullptr : &end),
      "compacting range");
}

Status Storage::Flush() {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  return rep_->Write(
      rep_->db->Flush(rocksdb::FlushOptions(), {rep_->data_cf, rep_->meta_cf, rep_->hints_cf}),
      "flushing");
}

StatusOr<size_t> Storage::DebugCountInternalEntries(const TokenRange& range, size_t limit) {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  if (!range.Valid()) return Status::InvalidArgument("token range has first > last");
  // GetAllKeyVersions takes an inclusive end; over-cover and filter by token below.
  std::string end = ExclusiveEnd(range);
  if (end.empty()) end.assign(kTokenBytes + rep_->options.max_key_bytes + 1, '\xff');
  std::vector<rocksdb::KeyVersion> versions;
  SHARDKV_RETURN_IF_ERROR(
      FromRocks(rocksdb::GetAllKeyVersions(rep_->db.get(), rep_->data_cf, TokenKey(range.first),
                                           end, limit, &versions),
                "listing key versions"));
  size_t count = 0;
  for (const auto& v : versions) {
    uint64_t token = 0;
    std::string_view user_key;
    if (DecodeDataKey(v.user_key, &token, &user_key) && range.Contains(token)) ++count;
  }
  return count;
}

Status Storage::DebugWriteRawForTest(uint64_t token, std::string_view key,
                                     const Envelope* envelope) {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  const std::string stored = EncodeDataKey(token, key);
  if (envelope == nullptr) {
    return rep_->Write(rep_->db->Delete(rep_->data_write_options, rep_->data_cf, stored),
                       "deleting key (test)");
  }
  SHARDKV_RETURN_IF_ERROR(ValidateEnvelopeShape(*envelope));
  return rep_->Write(
      rep_->db->Put(rep_->data_write_options, rep_->data_cf, stored, EncodeEnvelope(*envelope)),
      "writing key (test)");
}

}  // namespace shardkv::storage
