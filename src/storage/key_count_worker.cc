#include "storage/key_count_worker.h"

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <utility>

#include "storage/storage.h"
#include "storage/storage_rep.h"

namespace shardkv::storage {

KeyCountWorker::KeyCountWorker(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* data_cf,
                               KeyCounter* counter)
    : db_(db), data_cf_(data_cf), counter_(counter), thread_([this] { Run(); }) {}

KeyCountWorker::~KeyCountWorker() {
  stop_.store(true);
  {
    common::MutexLock lock(&mu_);
    wake_.notify_all();
  }
  thread_.join();
  common::MutexLock lock(&mu_);
  for (const Job& job : jobs_) db_->ReleaseSnapshot(job.snapshot);
  jobs_.clear();
}

void KeyCountWorker::Enqueue(const rocksdb::Snapshot* snapshot, std::vector<TokenRange> ranges,
                             int sign) {
  common::MutexLock lock(&mu_);
  jobs_.push_back(Job{snapshot, std::move(ranges), sign});
  wake_.notify_all();
}

bool KeyCountWorker::Idle() const {
  common::MutexLock lock(&mu_);
  return jobs_.empty() && !running_job_ && !failed_;
}

void KeyCountWorker::Run() {
  common::MutexLock lock(&mu_);
  while (!stop_.load()) {
    if (jobs_.empty()) {
      lock.Wait(wake_);
      continue;
    }
    const Job job = std::move(jobs_.front());
    jobs_.pop_front();
    running_job_ = true;
    lock.Unlock();
    const bool finished = Count(job);
    db_->ReleaseSnapshot(job.snapshot);
    lock.Lock();
    running_job_ = false;
    if (!finished && !stop_.load()) failed_ = true;
  }
}

bool KeyCountWorker::Count(const Job& job) {
  for (const TokenRange& range : job.ranges) {
    if (!CountRange(job, range)) return false;
  }
  return true;
}

bool KeyCountWorker::CountRange(const Job& job, const TokenRange& range) {
  rocksdb::ReadOptions ro;
  ro.snapshot = job.snapshot;
  ro.fill_cache = false;  // a one-off pass: keep the point-read working set in the cache
  ro.readahead_size = size_t{2} << 20;
  const std::string end = range.last == UINT64_MAX ? "" : TokenKey(range.last + 1);
  rocksdb::Slice end_slice(end);
  if (!end.empty()) ro.iterate_upper_bound = &end_slice;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, data_cf_));
  size_t undecodable = 0;
  size_t n = 0;
  for (it->Seek(TokenKey(range.first)); it->Valid(); it->Next()) {
    // Checked every 1024 entries: Close() waits for the thread.
    if (++n % 1024 == 0 && stop_.load()) return false;
    EnvelopeView view;
    if (!DecodeEnvelope(ToView(it->value()), &view).ok()) {
      ++undecodable;  // counts as nothing, as reads treat it as an error, not a key
      continue;
    }
    const KeyShape shape = KeyShape::Of(view);
    job.sign > 0 ? counter_->Add(shape) : counter_->Remove(shape);
  }
  if (undecodable > 0) {
    spdlog::warn("counting live keys: {} records did not decode and were not counted", undecodable);
  }
  if (!it->status().ok()) {
    spdlog::error("counting live keys failed: {}; DBSIZE and live_keys stay partial",
                  it->status().ToString());
    return false;
  }
  return true;
}

}  // namespace shardkv::storage
