// Storage: open/close, format version, HLC ceiling, point operations, meta/hints, protection.
// Range operations live in storage_range.cc.
#include "storage/storage.h"

#include <rocksdb/cache.h>
#include <rocksdb/file_system.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/options.h>
#include <rocksdb/table.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <system_error>
#include <utility>

#include "storage/counter_value.h"
#include "storage/disk_space.h"
#include "storage/storage_rep.h"

namespace shardkv::storage {
namespace {

constexpr char kDataCf[] = "data";
constexpr char kMetaCf[] = "meta";
constexpr char kHintsCf[] = "hints";

// Reserved meta keys. Values are decimal ASCII so `ldb --column_family=meta scan` is readable.
constexpr char kFormatVersionKey[] = "storage/format_version";
constexpr char kHlcCeilingKey[] = "storage/hlc_ceiling";

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

rocksdb::BlockBasedTableOptions TableOptions(const StorageOptions& options,
                                             std::shared_ptr<rocksdb::Cache> cache) {
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = std::move(cache);
  // Most reads are point reads, and every LWW write starts with one (often for a key that does
  // not exist yet), so a whole-key bloom filter on every level pays for itself.
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(options.bloom_bits_per_key));
  t.whole_key_filtering = true;
  // Charge index and filter blocks to the block cache so memory stays bounded by
  // block_cache_bytes, but pin L0's so the hottest files never miss on metadata.
  t.cache_index_and_filter_blocks = true;
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  // A hash index inside each data block turns the in-block binary search into one probe.
  t.data_block_index_type = rocksdb::BlockBasedTableOptions::kDataBlockBinaryAndHash;
  return t;
}

}  // namespace

Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return Status::OK();
  std::string message(context);
  message += ": ";
  message += s.ToString();
  using C = Status::Code;
  C code = C::kInternal;
  if (s.IsNotFound()) {
    code = C::kNotFound;
  } else if (s.IsCorruption()) {
    code = C::kCorruption;
  } else if (s.IsNotSupported()) {
    code = C::kNotSupported;
  } else if (s.IsInvalidArgument()) {
    code = C::kInvalidArgument;
  } else if (s.IsIOError()) {
    code = C::kIOError;
  } else if (s.IsBusy() || s.IsTryAgain() || s.IsShutdownInProgress() || s.IsIncomplete()) {
    code = C::kUnavailable;
  } else if (s.IsTimedOut()) {
    code = C::kTimeout;
  } else if (s.IsAborted()) {
    code = C::kAborted;
  }
  return Status(code, std::move(message));
}

Status Storage::Rep::CloseDb() {
  if (db == nullptr) return Status::OK();
  key_count_worker.reset();  // it reads `db` and holds snapshots
  // The recovery probe writes to `db`.
  if (health) health->StopRecovery();
  // The clock's ceiling hook writes to `db`; drop it first so nothing can call into a closed DB.
  clock.reset();
  if (meta_cf != nullptr) MarkCleanClose();
  for (auto** handle : {&data_cf, &meta_cf, &hints_cf, &default_cf}) {
    if (*handle != nullptr) {
      (void)db->DestroyColumnFamilyHandle(*handle);
      *handle = nullptr;
    }
  }
  rocksdb::Status s = db->Close();
  db.reset();
  return FromRocks(s, "closing " + path);
}

StorageSnapshot::StorageSnapshot(std::unique_ptr<Rep> rep, uint64_t created_at_ms)
    : rep_(std::move(rep)), created_at_ms_(created_at_ms) {}

StorageSnapshot::~StorageSnapshot() = default;

Storage::Storage(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}

Storage::~Storage() = default;

Status Storage::Close() { return rep_->CloseDb(); }

const std::string& Storage::path() const { return rep_->path; }
const StorageOptions& Storage::options() const { return rep_->options; }
common::HlcClock& Storage::clock() { return *rep_->clock; }

StatusOr<std::unique_ptr<Storage>> Storage::Open(const std::string& path, StorageOptions options) {
  if (path.empty()) return Status::InvalidArgument("storage path is empty");
  if (options.bloom_bits_per_key <= 0 || options.max_background_jobs <= 0) {
    return Status::InvalidArgument("bloom_bits_per_key and max_background_jobs must be > 0");
  }
  auto rep = std::make_unique<Rep>();
  rep->path = path;
  rep->options = options;
  rep->health = std::make_unique<HealthMonitor>(
      path, options.node_id, [r = rep.get()] { return r->WallMs(); },
      std::chrono::milliseconds(options.health_check_interval_ms));
  rep->file_system = rocksdb::FileSystem::Default();
  if (options.fault_injection_for_test) {
    rep->file_system =
        NewFaultInjectingFileSystem(rep->file_system, options.fault_injection_for_test);
    rep->env = rocksdb::NewCompositeEnv(rep->file_system);
  }

  std::error_code ec;
  const bool existing = std::filesystem::exists(std::filesystem::path(path) / "CURRENT", ec);
  if (!existing) {
    if (!options.create_if_missing) return Status::NotFound("no shardkv database in " + path);
    std::filesystem::create_directories(path, ec);
    if (ec) return Status::IOError("creating " + path + ": " + ec.message());
  } else {
    // Refuse a directory that is not ours before RocksDB touches it: opening it with our column
    // families would create them (or fail with a less helpful message about unopened families).
    std::vector<std::string> names;
    SHARDKV_RETURN_IF_ERROR(FromRocks(
        rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names), "reading " + path));
    for (const char* want : {kDataCf, kMetaCf, kHintsCf}) {
      if (std::find(names.begin(), names.end(), want) == names.end()) {
        return Status::FailedPrecondition(path + " is a RocksDB directory without shardkv's '" +
                                          want + "' column family; refusing to open it");
      }
    }
    for (const std::string& name : names) {
      if (name != rocksdb::kDefaultColumnFamilyName && name != kDataCf && name != kMetaCf &&
          name != kHintsCf) {
        return Status::FailedPrecondition(path + " has column family '" + name +
                                          "' unknown to this build (written by a newer "
                                          "version?); refusing to open it");
      }
    }
  }

  rep->protected_ranges = std::make_shared<ProtectedRanges>();
  // From Open on, before any compaction: with no horizons yet, nothing past the grace goes.
  if (options.gc_after_repair) rep->repair_horizons = std::make_shared<RepairHorizons>();
  rep->tombstone_gc =
      std::make_shared<TombstoneGc>(options.tombstone_grace_ms, options.physical_clock_ms,
                                    rep->protected_ranges, rep->repair_horizons);

  auto cache = rocksdb::NewLRUCache(options.block_cache_bytes);
  rocksdb::ColumnFamilyOptions data_options;
  data_options.table_factory.reset(
      rocksdb::NewBlockBasedTableFactory(TableOptions(options, cache)));
  data_options.compaction_filter_factory = NewTombstoneFilterFactory(rep->tombstone_gc);
  data_options.level_compaction_dynamic_level_bytes = true;
  // Also filter the memtable by whole key: the read half of read-compare-Put for a new key then
  // skips the memtable skiplist search.
  data_options.memtable_whole_key_filtering = true;
  data_options.memtable_prefix_bloom_size_ratio = 0.02;
  // Keep filters on the last level: LWW writes of new keys miss there, and misses are what
  // filters are for (optimize_filters_for_hits would drop them).
  data_options.optimize_filters_for_hits = false;

  rocksdb::ColumnFamilyOptions small_options;  // meta, hints and the unused default CF
  small_options.table_factory.reset(
      rocksdb::NewBlockBasedTableFactory(TableOptions(options, cache)));
  small_options.write_buffer_size = size_t{4} << 20;

  rocksdb::DBOptions db_options;
  db_options.create_if_missing = !existing;
  db_options.create_missing_column_families = !existing;
  db_options.max_background_jobs = options.max_background_jobs;
  db_options.bytes_per_sync = size_t{1} << 20;
  db_options.info_log = NewRocksLogger();
  db_options.listeners.push_back(NewHealthListener(rep->health.get()));
  if (rep->env) db_options.env = rep->env.get();

  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors = {
      {rocksdb::kDefaultColumnFamilyName, small_options},
      {kDataCf, data_options},
      {kMetaCf, small_options},
      {kHintsCf, small_options},
  };
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  // A full disk can make RocksDB's open die on an internal assertion, so refuse first.
  SHARDKV_ASSIGN_OR_RETURN(const uint64_t free_bytes, FreeBytes(path));
  SHARDKV_RETURN_IF_ERROR(CheckFreeSpaceForStart(path, free_bytes));
  // RocksDB's open of a read-only directory fails on its LOCK file, in words that read like a
  // lock held by another process.
  SHARDKV_RETURN_IF_ERROR(CheckWritableForStart(path));
  rocksdb::Status opened = rocksdb::DB::Open(db_options, path, descriptors, &handles, &raw);
  if (opened.IsNoSpace()) {
    return Status::ResourceExhausted("no space left on device in " + path + ": " +
                                     opened.ToString());
  }
  SHARDKV_RETURN_IF_ERROR(FromRocks(opened, "opening " + path));
  rep->db.reset(raw);
  rep->default_cf = handles[0];
  rep->data_cf = handles[1];
  rep->meta_cf = handles[2];
  rep->hints_cf = handles[3];
  rep->data_write_options.sync = options.sync;
  rep->meta_write_options.sync = true;

  // Format version. A fresh directory is stamped; so is one whose first open died between
  // creating the column families and stamping, which is recognisable by holding no data at all.
  std::string version;
  rocksdb::Status rs =
      rep->db->Get(rocksdb::ReadOptions(), rep->meta_cf, kFormatVersionKey, &version);
  if (rs.IsNotFound()) {
    for (auto* cf : {rep->data_cf, rep->hints_cf}) {
      std::unique_ptr<rocksdb::Iterator> it(rep->db->NewIterator(rocksdb::ReadOptions(), cf));
      it->SeekToFirst();
      if (it->Valid()) {
        return Status::Corruption(path + " holds data but no storage format version");
      }
    }
    SHARDKV_RETURN_IF_ERROR(
        rep->Write(rep->db->Put(rep->meta_write_options, rep->meta_cf, kFormatVersionKey,
                                std::to_string(kStorageFormatVersion)),
                   "stamping format version in " + path));
  } else if (!rs.ok()) {
    return rep->Read(rs, "reading format version of " + path);
  } else {
    uint64_t v = 0;
    if (!ParseU64(version, &v)) {
      return Status::Corruption(path + " has an unreadable storage format version '" + version +
                                "'");
    }
    if (v != kStorageFormatVersion) {
      return Status::FailedPrecondition(path + " has storage format version " + std::to_string(v) +
                                        ", but this build reads only version " +
                                        std::to_string(kStorageFormatVersion) +
                                        "; refusing to open it");
    }
  }

  // HLC: start above the persisted ceiling; persist new ceilings synchronously in meta.
  uint64_t ceiling = 0;
  std::string ceiling_text;
  rs = rep->db->Get(rocksdb::ReadOptions(), rep->meta_cf, kHlcCeilingKey, &ceiling_text);
  if (rs.ok()) {
    if (!ParseU64(ceiling_text, &ceiling)) {
      return Status::Corruption(path + " has an unreadable HLC ceiling '" + ceiling_text + "'");
    }
  } else if (!rs.IsNotFound()) {
    return rep->Read(rs, "reading HLC ceiling of " + path);
  }
  common::HlcOptions hlc;
  hlc.max_clock_offset_ms = options.max_clock_offset_ms;
  hlc.ceiling_window_ms = options.hlc_ceiling_window_ms;
  hlc.physical_clock_ms = options.physical_clock_ms;
  hlc.initial_floor = ceiling;
  Rep* r = rep.get();
  hlc.persist_ceiling = [r](uint64_t new_ceiling) {
    return r->Write(
        r->db->Put(r->meta_write_options, r->meta_cf, kHlcCeilingKey, std::to_string(new_ceiling)),
        "writing HLC ceiling");
  };
  rep->clock = std::make_unique<common::HlcClock>(std::move(hlc));
  SHARDKV_RETURN_IF_ERROR(rep->LoadCounterIncarnation());
  rep->health->StartRecovery([r] { return r->Probe(); });
  // Count the live keys already stored in the background; writes count themselves from now on.
  rep->key_count_worker =
      std::make_unique<KeyCountWorker>(rep->db.get(), rep->data_cf, &rep->live_keys);
  rep->key_count_worker->Enqueue(rep->db->GetSnapshot(), {TokenRange{0, UINT64_MAX}}, +1);

  return std::unique_ptr<Storage>(new Storage(std::move(rep)));
}

Status Storage::ValidateWrite(std::string_view key, bool tombstone, std::string_view value) const {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  if (key.size() > rep_->options.max_key_bytes) {
    return Status::InvalidArgument("key of " + std::to_string(key.size()) +
                                   " bytes exceeds max_key_bytes " +
                                   std::to_string(rep_->options.max_key_bytes));
  }
  if (value.size() > rep_->options.max_value_bytes) {
    return Status::InvalidArgument("value of " + std::to_string(value.size()) +
                                   " bytes exceeds max_value_bytes " +
                                   std::to_string(rep_->options.max_value_bytes));
  }
  if (tombstone && !value.empty()) {
    return Status::InvalidArgument("a tombstone cannot carry a value");
  }
  return Status::OK();
}

Status Storage::ValidateWrite(std::string_view key, const Envelope& e) const {
  SHARDKV_RETURN_IF_ERROR(ValidateWrite(key, e.tombstone, e.value));
  if (!e.counter.empty() || !e.hash.empty() || !e.set.empty()) return ValidateEnvelopeShape(e);
  return Status::OK();
}

// Why read-compare-Put rather than a merge operator: with a merge operator every write would be
// an operand resolved at read or compaction time, and the compaction filter that collects
// tombstones sees operands one at a time. Dropping a tombstone operand there could expose an
// older value operand beneath it, i.e. resurrect a deleted key. Plain Puts keep exactly one
// live version per key, so the filter's decision about a tombstone is final. The cost is a point
// read per write (bloom filters make it cheap for new keys) under a striped lock.
//
// Both registers of the envelope merge here (value_envelope.h Merge), never "the newer envelope
// wins": an expiry-only write must keep the stored value, a KEEPTTL write the stored expiry.
StatusOr<WriteResult> Storage::MergeWrite(uint64_t token, std::string_view key,
                                          const Envelope& incoming) {
  std::string stored_key = EncodeDataKey(token, key);

  WriteResult result;
  result.written = incoming.newest_version();
  result.stored = result.written;
  std::lock_guard<std::mutex> lock(rep_->stripes[rep_->StripeOf(stored_key)]);
  rocksdb::PinnableSlice existing;
  rocksdb::Status rs = rep_->db->Get(rocksdb::ReadOptions(), rep_->data_cf, stored_key, &existing);
  Envelope merged = incoming;
  std::optional<KeyShape> before;  // for the live-key count
  if (rs.ok()) {
    EnvelopeView current;
    SHARDKV_RETURN_IF_ERROR(DecodeEnvelope(ToView(existing), &current)
                                .WithContext("stored value of token " + std::to_string(token)));
    before = KeyShape::Of(current);
    merged = current.ToEnvelope();
    switch (MergeInto(&merged, incoming)) {
      case MergeOutcome::kSuperseded:
        result.outcome = WriteOutcome::kSuperseded;
        result.stored = merged.newest_version();
        return result;
      case MergeOutcome::kDuplicate:
        result.outcome = WriteOutcome::kDuplicate;
        return result;
      case MergeOutcome::kChanged:
        break;
    }
  } else if (!rs.IsNotFound()) {
    return rep_->Read(rs, "reading before write");
  }
  std::string encoded;
  EncodeEnvelope(merged, &encoded);
  SHARDKV_RETURN_IF_ERROR(rep_->Write(
      rep_->db->Put(rep_->data_write_options, rep_->data_cf, stored_key, encoded), "writing data"));
  rep_->live_keys.Replace(before ? &*before : nullptr, KeyShape::Of(merged));
  result.outcome = WriteOutcome::kApplied;
  result.stored = merged.newest_version();
  return result;
}

StatusOr<WriteResult> Storage::Put(uint64_t token, std::string_view key, std::string_view value) {
  return Put(token, key, value, PutExpiry{});
}

StatusOr<WriteResult> Storage::Put(uint64_t token, std::string_view key, std::string_view value,
                                   PutExpiry expiry) {
  SHARDKV_RETURN_IF_ERROR(ValidateWrite(key, false, value));
  SHARDKV_ASSIGN_OR_RETURN(uint64_t ts, rep_->clock->Now());
  const Version version{ts, rep_->options.node_id};
  return MergeWrite(
      token, key,
      expiry.keep_ttl ? Envelope::ValueOnly(version, std::string(value))
                      : Envelope::Plain(version, false, std::string(value), expiry.expires_at_ms));
}

StatusOr<WriteResult> Storage::Delete(uint64_t token, std::string_view key) {
  SHARDKV_RETURN_IF_ERROR(ValidateWrite(key, true, {}));
  SHARDKV_ASSIGN_OR_RETURN(uint64_t ts, rep_->clock->Now());
  return MergeWrite(token, key, Envelope::Plain(Version{ts, rep_->options.node_id}, true, {}));
}

StatusOr<WriteResult> Storage::Expire(uint64_t token, std::string_view key,
                                      uint64_t expires_at_ms) {
  SHARDKV_RETURN_IF_ERROR(ValidateWrite(key, false, {}));
  SHARDKV_ASSIGN_OR_RETURN(uint64_t ts, rep_->clock->Now());
  return MergeWrite(token, key,
                    Envelope::ExpiryOnly(Version{ts, rep_->options.node_id}, expires_at_ms));
}

StatusOr<WriteResult> Storage::Write(uint64_t token, std::string_view key,
                                     const Envelope& envelope) {
  SHARDKV_RETURN_IF_ERROR(ValidateWrite(key, envelope));
  SHARDKV_RETURN_IF_ERROR(ValidateEnvelopeShape(envelope));
  SHARDKV_RETURN_IF_ERROR(rep_->clock->Update(envelope.newest_version().timestamp));
  return MergeWrite(token, key, envelope);
}

uint64_t Storage::WallClockMs() const { return rep_->WallMs(); }

StatusOr<Envelope> Storage::GetEnvelope(uint64_t token, std::string_view key) {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  const std::string stored_key = EncodeDataKey(token, key);
  rocksdb::PinnableSlice value;
  rocksdb::Status rs = rep_->db->Get(rocksdb::ReadOptions(), rep_->data_cf, stored_key, &value);
  if (rs.IsNotFound()) return Status::NotFound("key not found");
  SHARDKV_RETURN_IF_ERROR(rep_->Read(rs, "reading data"));
  EnvelopeView view;
  SHARDKV_RETURN_IF_ERROR(DecodeEnvelope(ToView(value), &view));
  return view.ToEnvelope();
}

StatusOr<std::string> Storage::Get(uint64_t token, std::string_view key) {
  SHARDKV_ASSIGN_OR_RETURN(Envelope envelope, GetEnvelope(token, key));
  const uint64_t now_ms = rep_->WallMs();
  if (envelope.tombstone && !envelope.LiveAt(now_ms)) return Status::NotFound("key deleted");
  if (!envelope.LiveAt(now_ms)) return Status::NotFound("key expired or absent");
  return ReadValue(std::move(envelope), now_ms);
}

std::vector<StatusOr<Envelope>> Storage::MultiGetEnvelopes(const std::vector<KeyRef>& keys) {
  std::vector<StatusOr<Envelope>> out;
  out.reserve(keys.size());
  if (rep_->db == nullptr) {
    for (size_t i = 0; i < keys.size(); ++i) {
      out.emplace_back(Status::FailedPrecondition("storage is closed"));
    }
    return out;
  }
  const size_t n = keys.size();
  std::vector<std::string> stored(n);
  std::vector<rocksdb::Slice> slices(n);
  for (size_t i = 0; i < n; ++i) {
    stored[i] = EncodeDataKey(keys[i].token, keys[i].key);
    slices[i] = stored[i];
  }
  std::vector<rocksdb::PinnableSlice> values(n);
  std::vector<rocksdb::Status> statuses(n);
  // The batched single-CF MultiGet reads every key from one consistent view.
  rep_->db->MultiGet(rocksdb::ReadOptions(), rep_->data_cf, n, slices.data(), values.data(),
                     statuses.data());
  for (size_t i = 0; i < n; ++i) {
    if (statuses[i].IsNotFound()) {
      out.emplace_back(Status::NotFound("key not found"));
      continue;
    }
    if (!statuses[i].ok()) {
      out.emplace_back(rep_->Read(statuses[i], "reading data"));
      continue;
    }
    EnvelopeView view;
    Status s = DecodeEnvelope(ToView(values[i]), &view);
    if (!s.ok()) {
      out.emplace_back(std::move(s));
    } else {
      out.emplace_back(view.ToEnvelope());
    }
  }
  return out;
}

std::vector<StatusOr<std::string>> Storage::MultiGet(const std::vector<KeyRef>& keys) {
  std::vector<StatusOr<std::string>> out;
  out.reserve(keys.size());
  const uint64_t now_ms = rep_->WallMs();
  for (auto& result : MultiGetEnvelopes(keys)) {
    if (!result.ok()) {
      out.emplace_back(result.status());
    } else if (result->tombstone && !result->LiveAt(now_ms)) {
      out.emplace_back(Status::NotFound("key deleted"));
    } else if (!result->LiveAt(now_ms)) {
      out.emplace_back(Status::NotFound("key expired or absent"));
    } else {
      out.emplace_back(ReadValue(std::move(*result), now_ms));
    }
  }
  return out;
}

StatusOr<uint64_t> Storage::ProtectRange(const TokenRange& range) {
  if (!range.Valid()) return Status::InvalidArgument("token range has first > last");
  return rep_->protected_ranges->Add(range);
}

Status Storage::UnprotectRange(uint64_t id) { return rep_->protected_ranges->Remove(id); }

std::vector<TokenRange> Storage::ProtectedRangeList() const {
  return rep_->protected_ranges->List();
}

uint64_t Storage::TombstonesDropped() const { return rep_->tombstone_gc->dropped(); }

void Storage::SetRepairHorizons(std::vector<std::pair<TokenRange, uint64_t>> horizons,
                                uint64_t generation) {
  if (rep_->repair_horizons != nullptr) {
    rep_->repair_horizons->Set(std::move(horizons), generation);
  }
}

void Storage::InvalidateRepairHorizons(uint64_t generation) {
  if (rep_->repair_horizons != nullptr) rep_->repair_horizons->Invalidate(generation);
}

uint64_t Storage::TombstonesKeptUnrepaired() const { return rep_->tombstone_gc->kept_unrepaired(); }

Status Storage::PutAux(AuxColumn column, std::string_view key, std::string_view value, bool sync) {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  if (column == AuxColumn::kMeta && key.starts_with(kReservedMetaPrefix)) {
    return Status::InvalidArgument("meta keys starting with 'storage/' are reserved");
  }
  const auto& wo =
      column == AuxColumn::kMeta && sync ? rep_->meta_write_options : rep_->data_write_options;
  return rep_->Write(rep_->db->Put(wo, rep_->AuxHandle(column), ToSlice(key), ToSlice(value)),
                     "writing aux record");
}

StatusOr<std::string> Storage::GetAux(AuxColumn column, std::string_view key) {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  std::string value;
  rocksdb::Status rs =
      rep_->db->Get(rocksdb::ReadOptions(), rep_->AuxHandle(column), ToSlice(key), &value);
  if (rs.IsNotFound()) return Status::NotFound("aux key not found");
  SHARDKV_RETURN_IF_ERROR(rep_->Read(rs, "reading aux record"));
  return value;
}

Status Storage::DeleteAux(AuxColumn column, std::string_view key) {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  if (column == AuxColumn::kMeta && key.starts_with(kReservedMetaPrefix)) {
    return Status::InvalidArgument("meta keys starting with 'storage/' are reserved");
  }
  const auto& wo = column == AuxColumn::kMeta ? rep_->meta_write_options : rep_->data_write_options;
  return rep_->Write(rep_->db->Delete(wo, rep_->AuxHandle(column), ToSlice(key)),
                     "deleting aux record");
}

StatusOr<std::vector<std::pair<std::string, std::string>>> Storage::ScanAux(AuxColumn column,
                                                                            std::string_view prefix,
                                                                            std::string_view after,
                                                                            size_t max_entries) {
  if (rep_->db == nullptr) return Status::FailedPrecondition("storage is closed");
  std::vector<std::pair<std::string, std::string>> out;
  std::unique_ptr<rocksdb::Iterator> it(
      rep_->db->NewIterator(rocksdb::ReadOptions(), rep_->AuxHandle(column)));
  const bool resume = !after.empty() && after >= prefix;
  it->Seek(ToSlice(resume ? after : prefix));
  if (resume && it->Valid() && ToView(it->key()) == after) it->Next();
  for (; it->Valid() && out.size() < max_entries; it->Next()) {
    const std::string_view key = ToView(it->key());
    if (!key.starts_with(prefix)) break;
    out.emplace_back(std::string(key), it->value().ToString());
  }
  SHARDKV_RETURN_IF_ERROR(rep_->Read(it->status(), "scanning aux records"));
  return out;
}

}  // namespace shardkv::storage
