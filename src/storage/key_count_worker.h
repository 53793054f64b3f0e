// KeyCountWorker: counts existing records into a KeyCounter on a background thread, each job a
// token range of a RocksDB snapshot, added (the whole store, at Open) or subtracted (a range
// DeleteRange dropped: the snapshot taken just before the delete holds what it removed).
//
// Why a snapshot per job: writes go on while a job runs, and each write already moved the
// counter by its own before/after. A snapshot taken at a moment no write lands in (at Open
// before any write; in DeleteRange under every key stripe) holds exactly the state those
// writes' deltas started from, so base + deltas stays exact whenever the job finishes.
//
// Private to src/storage (it includes RocksDB). Thread-safety: thread-safe; the destructor stops
// the thread (a job in flight stops at its next batch) and releases every snapshot it holds, so
// it must run before the database closes.
#pragma once

#include <rocksdb/db.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/thread_annotations.h"
#include "storage/key_codec.h"
#include "storage/key_counter.h"

namespace shardkv::storage {

class KeyCountWorker {
 public:
  // `db`, `data_cf` and `counter` must outlive the worker.
  KeyCountWorker(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* data_cf, KeyCounter* counter);
  ~KeyCountWorker();
  KeyCountWorker(const KeyCountWorker&) = delete;
  KeyCountWorker& operator=(const KeyCountWorker&) = delete;

  // Counts the records of `ranges` in `snapshot` (owned from now on, released when done) into
  // the counter: added for sign +1, subtracted for -1.
  void Enqueue(const rocksdb::Snapshot* snapshot, std::vector<TokenRange> ranges, int sign);
  // True once every job enqueued so far has finished (and none failed).
  bool Idle() const;

 private:
  struct Job {
    const rocksdb::Snapshot* snapshot = nullptr;
    std::vector<TokenRange> ranges;
    int sign = 1;
  };
  void Run();
  // False if the job stopped early (the worker is stopping, or the scan failed).
  bool Count(const Job& job);
  bool CountRange(const Job& job, const TokenRange& range);

  rocksdb::DB* const db_;
  rocksdb::ColumnFamilyHandle* const data_cf_;
  KeyCounter* const counter_;

  mutable common::Mutex mu_;
  std::condition_variable wake_;
  std::deque<Job> jobs_ GUARDED_BY(mu_);
  bool running_job_ GUARDED_BY(mu_) = false;
  bool failed_ GUARDED_BY(mu_) = false;  // a scan failed: the count stays partial until restart
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace shardkv::storage
