// Private to src/storage/*.cc: the RocksDB state behind Storage's pimpl. This is the only
// storage header that includes RocksDB, and nothing outside src/storage includes it, so the rest
// of the tree compiles without RocksDB's headers.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/env.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/hlc.h"
#include "storage/key_count_worker.h"
#include "storage/key_counter.h"
#include "storage/storage.h"
#include "storage/storage_health.h"
#include "storage/tombstone_filter.h"

namespace shardkv::storage {

// RocksDB's info log, written through spdlog instead of a LOG file (rocks_logger.cc).
std::shared_ptr<rocksdb::Logger> NewRocksLogger();

// Reports RocksDB's background errors to `monitor` (storage_health.cc).
std::shared_ptr<rocksdb::EventListener> NewHealthListener(HealthMonitor* monitor);

// `base` with every write-side file operation asking `hook` first (fault_fs.cc; tests only).
std::shared_ptr<rocksdb::FileSystem> NewFaultInjectingFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base, std::function<Status(const std::string& file)> hook);

// Converts a RocksDB status, prefixing `context`.
Status FromRocks(const rocksdb::Status& s, std::string_view context);

inline rocksdb::Slice ToSlice(std::string_view s) { return {s.data(), s.size()}; }
inline std::string_view ToView(const rocksdb::Slice& s) { return {s.data(), s.size()}; }

struct StorageSnapshot::Rep {
  rocksdb::DB* db = nullptr;
  const rocksdb::Snapshot* snapshot = nullptr;
  ~Rep() {
    if (db != nullptr && snapshot != nullptr) db->ReleaseSnapshot(snapshot);
  }
};

struct Storage::Rep {
  // Read-compare-Put needs the read and the Put of one key to be atomic against other writers of
  // that key. A stripe of mutexes hashed by key gives that without a global lock; 256 stripes
  // keep false sharing between unrelated keys rare on a 2-8 core node.
  static constexpr size_t kLockStripes = 256;

  Rep() = default;
  Rep(const Rep&) = delete;
  Rep& operator=(const Rep&) = delete;
  ~Rep() { (void)CloseDb(); }

  Status CloseDb();
  // FromRocks for a RocksDB call's status that also feeds `health` (storage_health.cc): an I/O
  // error begins an episode, a successful `write` ends one, and a NoSpace status becomes "no
  // space left on device on node N".
  Status Checked(const rocksdb::Status& s, std::string_view context, bool write);
  Status Write(const rocksdb::Status& s, std::string_view context) {
    return Checked(s, context, true);
  }
  Status Read(const rocksdb::Status& s, std::string_view context) {
    return Checked(s, context, false);
  }
  size_t StripeOf(std::string_view stored_key) const {
    return std::hash<std::string_view>{}(stored_key) % kLockStripes;
  }
  rocksdb::ColumnFamilyHandle* AuxHandle(AuxColumn column) const {
    return column == AuxColumn::kMeta ? meta_cf : hints_cf;
  }
  // The recovery thread's probe: OK once the storage takes a new file and a synced write again
  // (resuming RocksDB from a background error first).
  Status Probe();
  uint64_t WallMs() const {
    return options.physical_clock_ms ? options.physical_clock_ms()
                                     : common::HlcClock::WallClockMs();
  }

  std::string path;
  StorageOptions options;

  // Declared before `db`, which uses them, so they outlive it.
  std::unique_ptr<HealthMonitor> health;
  std::shared_ptr<rocksdb::FileSystem> file_system;  // RocksDB's, or the test's fault injection
  std::unique_ptr<rocksdb::Env> env;                 // null: the default Env

  // Set once by Open, cleared by CloseDb; the handles are owned by `db`'s lifetime.
  std::unique_ptr<rocksdb::DB> db;
  rocksdb::ColumnFamilyHandle* default_cf = nullptr;
  rocksdb::ColumnFamilyHandle* data_cf = nullptr;
  rocksdb::ColumnFamilyHandle* meta_cf = nullptr;
  rocksdb::ColumnFamilyHandle* hints_cf = nullptr;

  rocksdb::WriteOptions data_write_options;  // data and hints: sync = options.sync
  rocksdb::WriteOptions meta_write_options;  // always synced

  std::shared_ptr<ProtectedRanges> protected_ranges;
  std::shared_ptr<RepairHorizons> repair_horizons;  // null unless gc_after_repair
  std::shared_ptr<TombstoneGc> tombstone_gc;
  std::unique_ptr<common::HlcClock> clock;

  // stripes[StripeOf(k)] serialises read-compare-Put on data key k. Batch writers lock several
  // stripes in ascending index order, so they cannot deadlock with each other or single writers.
  std::array<std::mutex, kLockStripes> stripes;

  // Live keys (key_counter.h): each data write reports its record before and after; the worker
  // counts the store at Open and subtracts the ranges DeleteRange drops. Reset first in CloseDb.
  KeyCounter live_keys;
  std::unique_ptr<KeyCountWorker> key_count_worker;

  // Drawn when the database was created (storage_counter.cc); part of this node's counter writer.
  uint32_t counter_incarnation = 0;
  // Reads counter_incarnation from meta, drawing and persisting a new one for a new database or
  // after an unclean stop (no clean-close mark), which it then clears.
  Status LoadCounterIncarnation();
  // Writes the clean-close mark (storage_counter.cc), before the column families are released.
  void MarkCleanClose();
};

}  // namespace shardkv::storage
