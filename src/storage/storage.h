// Storage: one node's RocksDB database (design.md "Storage format").
//
// Column families:
//   data  - token (8 bytes BE) ‖ user key  ->  value envelope (value_envelope.h)
//   meta  - small named records: the format version and HLC ceiling (reserved "storage/" keys)
//           plus whatever upper layers keep there (cluster map, checkpoints, node identity)
//   hints - writes waiting for a replica that was down (key layout in key_codec.h)
//
// Writes to `data` are last-write-wins by (HLC timestamp, node id): a write older than the
// stored version is dropped, an identical version is an idempotent no-op, so streamed, repaired
// and replayed entries can be applied in any order and any number of times. Deletes write
// tombstones, which a compaction filter collects after tombstone_grace outside protected ranges.
//
// Durability: the WAL is always on. With sync=false an acknowledged write survives a process
// crash (kill -9) because it is in the OS page cache before the call returns; with sync=true
// the WAL is fsynced before the call returns, so it also survives power loss.
//
// Thread-safety: every method may be called concurrently, except that Close() and the destructor
// REQUIRE that no other call is in flight and every StorageSnapshot has been destroyed.
// Nothing throws; failures come back as Status.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/hlc.h"
#include "shardkv/status.h"
#include "storage/key_codec.h"
#include "storage/key_counter.h"
#include "storage/storage_health.h"
#include "storage/value_envelope.h"

namespace shardkv::storage {

// The on-disk layout version this build writes and the only one it opens.
inline constexpr uint32_t kStorageFormatVersion = 1;

struct StorageOptions {
  bool create_if_missing = true;
  // fsync the WAL before acknowledging each data/hints write (survives power loss). Meta writes
  // (format version, HLC ceiling, cluster map) are always synced: they are rare and must never
  // go backwards.
  bool sync = false;
  // Shared LRU block cache for all column families; sized for point reads.
  size_t block_cache_bytes = size_t{64} << 20;
  int bloom_bits_per_key = 10;
  // Tombstones older than this are collected by compaction (outside protected ranges).
  uint64_t tombstone_grace_ms = uint64_t{10} * 24 * 3600 * 1000;
  // The GC rule of anti-entropy (design.md "Tombstones and GC"): a record past the grace is
  // collected only where SetRepairHorizons gave its token a horizon above the record's newest
  // timestamp, i.e. only once every replica of its range was repaired since it was written.
  // A node sets it; off, the grace alone decides (a store with no replicas to compare).
  bool gc_after_repair = false;
  // This node's id: the LWW tie-break of writes timestamped here (Put, Delete).
  uint32_t node_id = 0;
  // HLC parameters (hlc.h).
  uint64_t max_clock_offset_ms = 500;
  uint64_t hlc_ceiling_window_ms = 1000;
  // Wall clock in ms since the epoch for the HLC and tombstone GC. Null = system clock.
  std::function<uint64_t()> physical_clock_ms;
  // Input limits, checked on every write.
  size_t max_key_bytes = size_t{64} << 10;
  size_t max_value_bytes = size_t{32} << 20;
  // RocksDB background flush + compaction threads.
  int max_background_jobs = 2;
  // While storage operations fail with I/O errors, how often the recovery probe runs
  // (storage_health.h).
  uint64_t health_check_interval_ms = 1000;
  // For tests: asked before every write-side operation on a file of the database (create, append,
  // sync, rename, delete); a non-OK Status fails it as an I/O error (ResourceExhausted: as a
  // full disk). Null: RocksDB's file system as is.
  std::function<Status(const std::string& file)> fault_injection_for_test;
};

enum class WriteOutcome : uint8_t {
  kApplied,     // the write is now the stored version
  kSuperseded,  // a newer version is stored; nothing changed
  kDuplicate,   // the identical version was already stored; nothing changed
};

struct WriteResult {
  WriteOutcome outcome = WriteOutcome::kApplied;
  // The newest register version of this write (Put/Delete/Expire: the timestamp it was given).
  Version written;
  Version stored;  // the newest register version stored for the key after the call
};

// The expiry part of a local Put.
struct PutExpiry {
  uint64_t expires_at_ms = 0;  // Unix ms; 0 = no expiry (clears any TTL, as Redis's SET does)
  bool keep_ttl = false;       // write the value register only (expires_at_ms ignored)
};

// A key in the data CF, by token and user key. `key` must outlive the call it is passed to.
struct KeyRef {
  uint64_t token = 0;
  std::string_view key;
};

// One data-CF entry, as scanned from a range or applied in a batch.
struct RangeEntry {
  uint64_t token = 0;
  std::string key;
  Envelope envelope;
  friend bool operator==(const RangeEntry&, const RangeEntry&) = default;
};

struct ApplyStats {
  size_t applied = 0;
  size_t superseded = 0;
  size_t duplicate = 0;
  size_t created = 0;             // of `applied`: keys that had no stored version at all
  size_t created_tombstones = 0;  // of `created`: tombstones
};

struct RangeStats {
  // Both are estimates (RocksDB table properties and memtable stats); tombstones and
  // not-yet-compacted overwrites count as keys. The memtable part is coarse (RocksDB samples the
  // skiplist: within about 2x); Flush() first for a file-based estimate (within about 10%).
  uint64_t approximate_keys = 0;
  uint64_t approximate_bytes = 0;
};

// A consistent point-in-time view of the data CF for scans. Destroy it before the Storage.
class StorageSnapshot {
 public:
  ~StorageSnapshot();
  StorageSnapshot(const StorageSnapshot&) = delete;
  StorageSnapshot& operator=(const StorageSnapshot&) = delete;

  // Wall-clock ms when taken. Streams replace a snapshot older than tombstone_grace / 2.
  uint64_t created_at_ms() const { return created_at_ms_; }

 private:
  friend class Storage;
  struct Rep;
  StorageSnapshot(std::unique_ptr<Rep> rep, uint64_t created_at_ms);

  std::unique_ptr<Rep> rep_;
  uint64_t created_at_ms_;
};

struct ScanOptions {
  // Null = the latest data, with an implicit snapshot for this one batch.
  const StorageSnapshot* snapshot = nullptr;
  // Resume strictly after this cursor (ScanBatch::cursor of the previous batch); empty = start
  // of the range. Opaque, but stable across restarts, so it can be checkpointed.
  std::string cursor;
  // A batch ends after max_entries entries or once it holds >= max_bytes of keys and values.
  size_t max_entries = 1024;
  size_t max_bytes = size_t{4} << 20;
  bool include_tombstones = true;
  // False: entries come back with an empty value (their versions, flags and expiry intact), for
  // readers that need no value bytes (anti-entropy hash trees).
  bool values = true;
};

struct ScanBatch {
  std::vector<RangeEntry> entries;
  // Pass back as ScanOptions::cursor to continue. Unchanged from the input if nothing was read.
  std::string cursor;
  // True when the range is exhausted: no further call would return anything.
  bool done = false;
};

// Non-data column families reachable through the Aux* calls.
enum class AuxColumn : uint8_t { kMeta, kHints };

class Storage {
 public:
  // Opens or creates the database in directory `path`.
  //   - A fresh directory is stamped with kStorageFormatVersion.
  //   - An existing one whose version differs fails with FailedPrecondition naming both
  //     versions; a RocksDB directory without shardkv's column families fails likewise.
  //   - The HLC starts above the persisted ceiling, so timestamps never go backwards.
  // NotFound if the directory holds no database and !create_if_missing.
  [[nodiscard]] static StatusOr<std::unique_ptr<Storage>> Open(const std::string& path,
                                                               StorageOptions options);

  ~Storage();  // Closes, ignoring errors; call Close() to see them.
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  // Flushes nothing extra (the WAL already holds every write) and releases RocksDB.
  // REQUIRES: no concurrent calls, no live snapshots. Idempotent.
  [[nodiscard]] Status Close();

  const std::string& path() const;
  const StorageOptions& options() const;

  // The node's HLC, with its ceiling persisted in `meta`. Coordinators take timestamps here.
  // REQUIRES: not closed.
  common::HlcClock& clock();

  // ---- Point operations on the data CF -----------------------------------------------------

  // Counters (design.md "Counters"). This node's counter writer id: node_id << 32 | the
  // database's incarnation, drawn when it was created, so a node rebuilt from nothing is a new
  // writer and never counts again from totals it lost.
  uint64_t CounterActor() const;
  // Adds `delta` to this writer's totals of counter `key` over `base` (the value register
  // version the coordinator's read returned as `read`, or a count from nothing begun then when
  // that register is dead), persisted (with data writes' durability) before it returns: the entry
  // to send to the key's replicas. Totals over an older base restart from zero (a SET or DEL
  // reset it); totals over a newer base are kept and added to. A count from nothing goes on
  // only while `read` still shows it (else a collected tombstone may have reset it: a new one
  // begins, and the old one stays in the replicas where it still counts). InvalidArgument if a
  // total would pass UINT64_MAX.
  [[nodiscard]] StatusOr<CounterEntry> AddToCounter(KeyRef key, Version base, const Envelope& read,
                                                    int64_t delta);

  // Local writes: timestamped now by clock() with options().node_id. A later Put or Delete of the
  // same key through this Storage always wins over an earlier one.
  [[nodiscard]] StatusOr<WriteResult> Put(uint64_t token, std::string_view key,
                                          std::string_view value);
  [[nodiscard]] StatusOr<WriteResult> Put(uint64_t token, std::string_view key,
                                          std::string_view value, PutExpiry expiry);
  [[nodiscard]] StatusOr<WriteResult> Delete(uint64_t token, std::string_view key);
  // Writes the expiry register only (expires_at_ms 0 = persist). On a key with no record it
  // stores an expiry-only record, which reads as absent.
  [[nodiscard]] StatusOr<WriteResult> Expire(uint64_t token, std::string_view key,
                                             uint64_t expires_at_ms);

  // Applies a write timestamped elsewhere (replica write, read repair, hint replay) by merging
  // it into the stored record, register by register (value_envelope.h Merge).
  // First moves clock() past the envelope's newest timestamp: InvalidArgument if it is more than
  // max_clock_offset_ms ahead of the local clock, or if its registers contradict each other.
  [[nodiscard]] StatusOr<WriteResult> Write(uint64_t token, std::string_view key,
                                            const Envelope& envelope);

  // Write() for many entries at once, in one WriteBatch (one WAL append): a coordinator's batch
  // (MSET, pipelined SETs). Result i is what Write(entries[i]) would have answered had the
  // entries been written one after another in order: a later entry of a key meets the record the
  // earlier ones left. An entry that fails its checks fails alone; a failed batch write fails
  // every entry that passed them.
  [[nodiscard]] std::vector<StatusOr<WriteResult>> WriteMany(
      const std::vector<RangeEntry>& entries);

  // The wall clock expiry is judged by (StorageOptions::physical_clock_ms, or the system clock).
  uint64_t WallClockMs() const;

  // The live value; NotFound if the key is absent, deleted (tombstone) or expired.
  [[nodiscard]] StatusOr<std::string> Get(uint64_t token, std::string_view key);
  // The stored envelope, tombstones included; NotFound only if there is none.
  [[nodiscard]] StatusOr<Envelope> GetEnvelope(uint64_t token, std::string_view key);
  // GetEnvelope for many keys at once, read from one consistent view; result i is for keys[i].
  std::vector<StatusOr<Envelope>> MultiGetEnvelopes(const std::vector<KeyRef>& keys);
  // Get for many keys at once (tombstones and expired records come back as NotFound).
  std::vector<StatusOr<std::string>> MultiGet(const std::vector<KeyRef>& keys);

  // ---- Ranges (streaming, cleanup) --------------------------------------------------------

  // A snapshot of the data CF (null after Close()).
  std::unique_ptr<StorageSnapshot> NewSnapshot();

  // One batch of the entries with token in `range` (inclusive), in storage-key order.
  // InvalidArgument if !range.Valid(); Corruption if an entry does not decode.
  [[nodiscard]] StatusOr<ScanBatch> Scan(const TokenRange& range, const ScanOptions& options);

  // Applies entries with LWW, atomically in one WriteBatch. Entries for the same key within the
  // batch are resolved by LWW too. Moves clock() past the newest timestamp first (and so fails
  // like Write() on a timestamp too far ahead). Validation failures reject the whole batch.
  [[nodiscard]] StatusOr<ApplyStats> ApplyBatch(const std::vector<RangeEntry>& entries);

  // Physically removes every data-CF entry in `range` (no tombstones, no LWW): for dropping
  // ranges this node no longer owns, or partial data of a cancelled stream. Its live keys are
  // subtracted from LiveKeys() in the background, from a snapshot taken with the delete.
  [[nodiscard]] Status DeleteRange(const TokenRange& range);
  // DeleteRange of each of `ranges`, in one atomic write; returns how many held records. An
  // empty range writes nothing, and one of a few records gets point deletes instead of a range
  // tombstone (thousands of those slow every read until compacted away).
  [[nodiscard]] StatusOr<size_t> DeleteRanges(std::vector<TokenRange> ranges);

  [[nodiscard]] StatusOr<RangeStats> ApproximateRangeStats(const TokenRange& range);

  // The live keys stored (key_counter.h): records holding a value whose expiry has not passed,
  // counted exactly as writes apply; an expired key stops counting within granularity_ms. The
  // records present at Open, and those of a range DeleteRange drops, are counted in the
  // background (complete is false until that is done).
  LiveKeyCounts LiveKeys() const;

  // Compacts `range` down to the bottommost level, running the tombstone filter on all of it.
  [[nodiscard]] Status CompactRange(const TokenRange& range);
  [[nodiscard]] Status Flush();

  // ---- Tombstone GC protection ------------------------------------------------------------

  // Keeps tombstones in `range` past the grace until UnprotectRange(id). Returns the id.
  // Takes effect for filter decisions made after it returns; a compaction already in flight may
  // still drop a tombstone it judged just before. InvalidArgument if !range.Valid().
  [[nodiscard]] StatusOr<uint64_t> ProtectRange(const TokenRange& range);
  [[nodiscard]] Status UnprotectRange(uint64_t id);
  std::vector<TokenRange> ProtectedRangeList() const;
  // Tombstones collected by compaction since Open.
  uint64_t TombstonesDropped() const;
  // With gc_after_repair: replaces the repair horizons (Unix ms) of the token ranges, which must
  // not overlap. A token in none has horizon 0: nothing past the grace is collected there.
  // `generation`: a set older than the newest Set or Invalidate is ignored (it was computed for a
  // map that has been replaced meanwhile).
  void SetRepairHorizons(std::vector<std::pair<TokenRange, uint64_t>> horizons,
                         uint64_t generation = 0);
  // Drops every horizon (nothing past the grace is collected) until a Set of `generation` or
  // newer: called when a new map is published, before its horizons are computed.
  void InvalidateRepairHorizons(uint64_t generation);
  // Records past the grace that compaction kept because their range was not repaired since.
  uint64_t TombstonesKeptUnrepaired() const;

  // ---- Health -----------------------------------------------------------------------------

  // Whether storage operations fail with I/O errors of any kind (storage_health.h): an episode
  // begins with the first failure and is logged once; it ends, logged too, when a write
  // succeeds or the recovery probe (every health_check_interval_ms) passes. RocksDB stopped by
  // a background error is resumed by the probe, without a restart.
  StorageHealth Health() const;
  bool failing() const;  // Health().failing, without the copy
  // True while an episode that began with a full disk (ENOSPC) lasts.
  bool disk_full() const;
  // RocksDB I/O errors (reads and writes) since Open.
  uint64_t io_errors() const;
  // RocksDB's own figures for the data column family (the metrics endpoint's compaction and
  // stall figures): an integer property such as "rocksdb.num-running-compactions" (nullopt if
  // RocksDB does not know it, or after Close()), and a map property such as "rocksdb.cfstats"
  // (empty likewise).
  std::optional<uint64_t> RocksIntProperty(std::string_view name) const;
  std::map<std::string, std::string> RocksMapProperty(std::string_view name) const;

  // ---- meta and hints ---------------------------------------------------------------------

  // Keys starting with kReservedMetaPrefix belong to Storage: writing them is InvalidArgument.
  static constexpr std::string_view kReservedMetaPrefix = "storage/";
  // Meta writes are synced unless `sync` is false: for records that are cheap to lose on power
  // failure (stream checkpoints: redoing a batch is harmless, LWW makes it idempotent).
  [[nodiscard]] Status PutAux(AuxColumn column, std::string_view key, std::string_view value,
                              bool sync = true);
  [[nodiscard]] StatusOr<std::string> GetAux(AuxColumn column, std::string_view key);
  [[nodiscard]] Status DeleteAux(AuxColumn column, std::string_view key);
  // Up to max_entries (key, value) pairs whose key starts with `prefix` and is > `after`
  // (empty = from the start of the prefix), in key order.
  [[nodiscard]] StatusOr<std::vector<std::pair<std::string, std::string>>> ScanAux(
      AuxColumn column, std::string_view prefix, std::string_view after, size_t max_entries);

  // ---- Diagnostics ------------------------------------------------------------------------

  // Internal RocksDB entries (every version, including deletion markers) with token in `range`,
  // up to `limit`. Tests use it to see that collected tombstones are physically gone.
  [[nodiscard]] StatusOr<size_t> DebugCountInternalEntries(const TokenRange& range,
                                                           size_t limit = 1 << 20);
  // Damage for tests of anti-entropy: stores `envelope` under the key as is (no LWW, no clock
  // update), or with null deletes the key outright (no tombstone), as a lost file or a tool
  // editing the database would. The live-key count does not follow.
  [[nodiscard]] Status DebugWriteRawForTest(uint64_t token, std::string_view key,
                                            const Envelope* envelope);

 private:
  struct Rep;
  explicit Storage(std::unique_ptr<Rep> rep);

  StatusOr<WriteResult> MergeWrite(uint64_t token, std::string_view key, const Envelope& incoming);
  Status ValidateWrite(std::string_view key, bool tombstone, std::string_view value) const;
  // ValidateWrite of a whole record; counter entries (which may come from a peer) are checked
  // for writer order and count too, because Merge relies on both.
  Status ValidateWrite(std::string_view key, const Envelope& e) const;

  std::unique_ptr<Rep> rep_;
};

}  // namespace shardkv::storage
