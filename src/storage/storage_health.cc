// Storage health: the episode tracking of HealthMonitor, how RocksDB's statuses and background
// errors feed it, and the recovery probe (storage_health.h).
#include "storage/storage_health.h"

#include <rocksdb/file_system.h>
#include <rocksdb/listener.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "storage/disk_space.h"
#include "storage/storage_rep.h"

namespace shardkv::storage {
namespace {

// A reserved meta key the probe writes (synced), as the HLC ceiling is written.
constexpr char kHealthProbeKey[] = "storage/health_probe";
// A file the probe creates, syncs and deletes in the database directory. RocksDB ignores names
// it does not know.
constexpr char kProbeFile[] = "HEALTH_PROBE";

// Reports RocksDB's background errors to the monitor, and keeps a plain I/O error resumable.
//
// RocksDB classes an I/O error of a WAL write, a flush or a compaction as a *fatal* background
// error (paranoid_checks), and DB::Resume() refuses fatal errors: the database would stay
// read-only until a restart, which is how a node whose file system was read-only for a moment
// stayed broken after it was writable again. A hard error is resumable, and resuming one is
// safe: RocksDB stops every write at the error, and Resume() flushes every memtable and switches
// to a new WAL before it accepts writes again ("we cannot guarantee consistency of the WAL"), so
// a WAL record torn by the failure is never appended to. Corruption and data loss
// (kUnrecoverableError) are left as RocksDB classes them.
class HealthListener : public rocksdb::EventListener {
 public:
  explicit HealthListener(HealthMonitor* monitor) : monitor_(monitor) {}
  const char* Name() const override { return "ShardkvHealthListener"; }

  void OnBackgroundError(rocksdb::BackgroundErrorReason reason,
                         rocksdb::Status* bg_error) override {
    if (bg_error == nullptr || bg_error->ok()) return;
    if (bg_error->IsIOError() && bg_error->severity() == rocksdb::Status::kFatalError) {
      *bg_error = rocksdb::Status(*bg_error, rocksdb::Status::kHardError);
    }
    monitor_->OnBackgroundError(
        std::string(ReasonName(reason)) + " failed: " + bg_error->ToString(),
        bg_error->IsNoSpace());
  }

  void OnErrorRecoveryEnd(const rocksdb::BackgroundErrorRecoveryInfo& info) override {
    if (info.new_bg_error.ok()) monitor_->OnBackgroundRecovered();
  }

 private:
  static std::string_view ReasonName(rocksdb::BackgroundErrorReason reason) {
    switch (reason) {
      case rocksdb::BackgroundErrorReason::kFlush:
      case rocksdb::BackgroundErrorReason::kFlushNoWAL:
        return "RocksDB flush";
      case rocksdb::BackgroundErrorReason::kCompaction:
        return "RocksDB compaction";
      case rocksdb::BackgroundErrorReason::kWriteCallback:
        return "RocksDB write";
      case rocksdb::BackgroundErrorReason::kMemTable:
        return "RocksDB memtable switch";
      case rocksdb::BackgroundErrorReason::kManifestWrite:
      case rocksdb::BackgroundErrorReason::kManifestWriteNoWAL:
        return "RocksDB manifest write";
    }
    return "RocksDB background work";
  }

  HealthMonitor* const monitor_;
};

}  // namespace

HealthMonitor::HealthMonitor(std::string path, uint32_t node_id, std::function<uint64_t()> wall_ms,
                             std::chrono::milliseconds interval)
    : path_(std::move(path)),
      node_id_(node_id),
      wall_ms_(std::move(wall_ms)),
      interval_(std::max(interval, std::chrono::milliseconds(1))) {}

HealthMonitor::~HealthMonitor() { StopRecovery(); }

void HealthMonitor::OnIoError(std::string_view what, bool no_space) {
  io_errors_.fetch_add(1, std::memory_order_relaxed);
  if (failing_.load()) return;
  common::MutexLock lock(&mu_);
  if (failing_.load()) return;  // another thread began the episode meanwhile
  // Logged once per episode: a failing disk fails every write until it works again, and a line
  // per write would flood the log (and fill the disk holding it).
  if (no_space) {
    spdlog::error("no space left on device in {}: writes fail until space is freed ({})", path_,
                  what);
  } else {
    spdlog::error(
        "storage I/O error in {}: {}; node {} coordinates no writes until its storage works "
        "again (checked every {} ms)",
        path_, what, node_id_, interval_.count());
  }
  error_ = std::string(what);
  since_ms_ = wall_ms_();
  ++failures_;
  errors_at_start_ = io_errors_.load(std::memory_order_relaxed);
  no_space_.store(no_space);
  failing_.store(true);
  cv_.notify_all();
}

void HealthMonitor::OnBackgroundError(std::string_view what, bool no_space) {
  rocks_stopped_.store(true);
  OnIoError(what, no_space);
}

void HealthMonitor::End(std::string_view how) {
  common::MutexLock lock(&mu_);
  if (!failing_.load()) return;
  const uint64_t now = wall_ms_();
  const uint64_t seconds = now > since_ms_ ? (now - since_ms_) / 1000 : 0;
  spdlog::info("writes succeed again in {} after {} s ({} storage operations failed; {})", path_,
               seconds, io_errors_.load(std::memory_order_relaxed) - errors_at_start_ + 1, how);
  error_.clear();
  since_ms_ = 0;
  no_space_.store(false);
  failing_.store(false);
}

StorageHealth HealthMonitor::Report() const {
  StorageHealth h;
  common::MutexLock lock(&mu_);
  h.failing = failing_.load();
  h.no_space = h.failing && no_space_.load();
  h.error = error_;
  h.failing_since_ms = since_ms_;
  h.failures = failures_;
  h.io_errors = io_errors_.load(std::memory_order_relaxed);
  return h;
}

void HealthMonitor::StartRecovery(std::function<Status()> probe) {
  probe_ = std::move(probe);
  thread_ = std::thread([this] { RecoveryLoop(); });
}

void HealthMonitor::StopRecovery() {
  {
    common::MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HealthMonitor::RecoveryLoop() {
  common::MutexLock lock(&mu_);
  while (!stop_) {
    if (!failing_.load()) {
      lock.Wait(cv_);
      continue;
    }
    lock.WaitUntil(cv_, std::chrono::steady_clock::now() + interval_);
    if (stop_ || !failing_.load()) continue;
    const uint64_t errors_before = io_errors_.load();
    lock.Unlock();
    Status probed = probe_();
    const bool quiet = io_errors_.load() == errors_before;
    if (probed.ok() && quiet) {
      End("the recovery probe passed");
    } else if (!probed.ok()) {
      spdlog::debug("storage in {} still fails: {}", path_, probed.ToString());
    }
    lock.Lock();
  }
}

// ---- Storage::Rep and Storage --------------------------------------------------------------

std::shared_ptr<rocksdb::EventListener> NewHealthListener(HealthMonitor* monitor) {
  return std::make_shared<HealthListener>(monitor);
}

Status Storage::Rep::Checked(const rocksdb::Status& s, std::string_view context, bool write) {
  if (s.ok()) {
    if (write) health->OnWriteOk();
    return Status::OK();
  }
  if (s.IsIOError()) {  // NoSpace is a subcode of IOError
    health->OnIoError(std::string(context) + ": " + s.ToString(), s.IsNoSpace());
    if (s.IsNoSpace()) return Status::IOError(kNoSpaceMessage + std::to_string(options.node_id));
  }
  return FromRocks(s, context);
}

Status Storage::Rep::Probe() {
  // A new file first: a file system remounted read-only refuses new files, while RocksDB's
  // current WAL, opened before, may still take appends.
  const std::string probe_path = path + "/" + kProbeFile;
  rocksdb::IOOptions io;
  std::unique_ptr<rocksdb::FSWritableFile> file;
  rocksdb::IOStatus s =
      file_system->NewWritableFile(probe_path, rocksdb::FileOptions(), &file, nullptr);
  if (s.ok()) s = file->Append("probe\n", io, nullptr);
  if (s.ok()) s = file->Sync(io, nullptr);
  if (file) {
    rocksdb::IOStatus closed = file->Close(io, nullptr);
    if (s.ok()) s = closed;
  }
  (void)file_system->DeleteFile(probe_path, io, nullptr);
  if (!s.ok()) return FromRocks(s, "writing a probe file in " + path);
  if (health->rocks_stopped()) {
    // Busy while RocksDB's own recovery (of a full disk) runs: the next probe tries again.
    rocksdb::Status resumed = db->Resume();
    if (!resumed.ok()) return FromRocks(resumed, "resuming RocksDB");
    health->OnBackgroundRecovered();
  }
  // A synced write, as the HLC ceiling's: what a coordinator needs before it takes a timestamp.
  return FromRocks(db->Put(meta_write_options, meta_cf, kHealthProbeKey, std::to_string(WallMs())),
                   "a synced probe write");
}

StorageHealth Storage::Health() const { return rep_->health->Report(); }
bool Storage::failing() const { return rep_->health->failing(); }
bool Storage::disk_full() const { return rep_->health->failing() && rep_->health->no_space(); }
uint64_t Storage::io_errors() const { return rep_->health->io_errors(); }

}  // namespace shardkv::storage
