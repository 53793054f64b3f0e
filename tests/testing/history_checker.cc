#include "testing/history_checker.h"

#include <algorithm>
#include <random>
#include <utility>

#include "testing/time_scale.h"

namespace shardkv::testing {
namespace {

using Clock = std::chrono::steady_clock;

// splitmix64's finalizer: seeds 1, 2, 3 and thread numbers 0, 1, 2 would otherwise give
// correlated mt19937 streams.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Keys per final MultiGet: large enough to be quick, small enough for one frame.
constexpr size_t kFinalBatch = 100;
constexpr size_t kViolationsInStatus = 3;

// Under a slow build (TimeScale()) every operation takes longer: the workload runs longer, so it
// makes as many operations as in a release build, and the clients and the waits allow as much
// more time. A release build (factor 1) runs exactly the options given.
ClientOptions ScaledClient(ClientOptions o) {
  o.timeout_ms = ScaledMs(o.timeout_ms);
  return o;
}
HistoryOptions ScaledHistory(HistoryOptions o) {
  o.duration = Scaled(o.duration);
  o.final_timeout = Scaled(o.final_timeout);
  return o;
}

}  // namespace

HistoryChecker::HistoryChecker(ClientOptions client_options, HistoryOptions options)
    : client_options_(ScaledClient(std::move(client_options))),
      options_(ScaledHistory(std::move(options))) {}

HistoryChecker::~HistoryChecker() { Stop(); }

std::string HistoryChecker::KeyName(int index) const {
  return options_.key_prefix + std::to_string(index);
}

Micros HistoryChecker::Now() const {
  return std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start_time_).count();
}

bool HistoryChecker::ShouldRun(uint64_t ops_done) const {
  return !stop_.load(std::memory_order_relaxed) && ops_done < options_.max_ops_per_thread &&
         Clock::now() < deadline_;
}

Status HistoryChecker::Start() {
  if (started_) return Status::FailedPrecondition("HistoryChecker::Start called twice");
  const HistoryOptions& o = options_;
  if (o.keys < 1 || o.writers < 1 || o.readers < 0 || o.delete_fraction < 0 ||
      o.delete_fraction > 1 || o.duration.count() <= 0 || o.max_ops_per_thread == 0 ||
      o.final_attempts < 1) {
    return Status::InvalidArgument(
        "history checker: need keys >= 1, writers >= 1, readers >= 0, delete_fraction in [0, 1], "
        "duration > 0, max_ops_per_thread > 0, final_attempts >= 1");
  }
  started_ = true;
  {
    std::lock_guard lock(mu_);
    histories_.resize(static_cast<size_t>(o.keys));
    for (int i = 0; i < o.keys; ++i) {
      keys_.push_back(KeyName(i));
      histories_[i].key = keys_.back();
    }
  }
  const int threads = o.writers + o.readers;
  for (int i = 0; i < threads; ++i) {
    // A client per thread, as separate applications would have: each writer's HLC alone orders
    // its keys' versions, and readers share no connection state with writers.
    auto client = Client::Connect(client_options_);
    if (!client.ok()) return client.status().WithContext("history checker");
    clients_.push_back(std::move(client).value());
  }
  start_time_ = Clock::now();
  deadline_ = start_time_ + o.duration;
  {
    std::lock_guard lock(mu_);
    running_ = threads;
  }
  for (int w = 0; w < o.writers; ++w) {
    threads_.emplace_back([this, w] { RunWriter(w, clients_[w].get()); });
  }
  for (int r = 0; r < o.readers; ++r) {
    threads_.emplace_back([this, r] { RunReader(r, clients_[options_.writers + r].get()); });
  }
  return Status::OK();
}

void HistoryChecker::RunWriter(int writer, Client* client) {
  std::mt19937_64 rng(Mix(options_.seed) ^ Mix(static_cast<uint64_t>(writer)));
  std::vector<size_t> owned;
  for (size_t i = static_cast<size_t>(writer); i < keys_.size();
       i += static_cast<size_t>(options_.writers)) {
    owned.push_back(i);
  }
  if (!owned.empty()) {
    std::uniform_int_distribution<size_t> pick(0, owned.size() - 1);
    std::bernoulli_distribution is_delete(options_.delete_fraction);
    for (uint64_t ops = 0; ShouldRun(ops); ++ops) {
      const size_t k = owned[pick(rng)];
      const std::string& key = keys_[k];
      const bool del = is_delete(rng);
      size_t slot = 0;
      std::string value;
      {
        std::lock_guard lock(mu_);
        std::vector<WriteRecord>& writes = histories_[k].writes;
        // This thread is the key's only writer, so the count is its next version.
        const uint64_t version = writes.size() + 1;
        if (!del) value = EncodeValue(key, version, options_.value_bytes);
        writes.push_back(
            {version, del ? OpKind::kDelete : OpKind::kPut, Now(), 0, OpOutcome::kPending, ""});
        slot = writes.size() - 1;
      }
      StatusOr<uint64_t> result = del ? client->Delete(key, options_.consistency)
                                      : client->Put(key, value, options_.consistency);
      const Micros done = Now();
      {
        std::lock_guard lock(mu_);
        WriteRecord& w = histories_[k].writes[slot];
        w.completed = done;
        if (result.ok()) {
          w.outcome = OpOutcome::kAcked;
          acked_.fetch_add(1, std::memory_order_relaxed);
        } else {
          w.outcome = OpOutcome::kFailed;
          w.error = result.status().ToString();
          failed_.fetch_add(1, std::memory_order_relaxed);
          last_error_ = key + ": " + w.error;
        }
      }
      progress_cv_.notify_all();
    }
  }
  {
    std::lock_guard lock(mu_);
    --running_;
  }
  progress_cv_.notify_all();
}

void HistoryChecker::RunReader(int reader, Client* client) {
  std::mt19937_64 rng(Mix(options_.seed) ^ Mix(0x10000 + static_cast<uint64_t>(reader)));
  std::uniform_int_distribution<size_t> pick(0, keys_.size() - 1);
  for (uint64_t ops = 0; ShouldRun(ops); ++ops) {
    const size_t k = pick(rng);
    const std::string& key = keys_[k];
    const Micros start = Now();
    StatusOr<std::string> result = client->Get(key, options_.consistency);
    const Micros end = Now();
    {
      std::lock_guard lock(mu_);
      if (result.ok()) {
        reads_.fetch_add(1, std::memory_order_relaxed);
        StatusOr<uint64_t> version = DecodeValue(key, *result);
        if (version.ok()) {
          histories_[k].reads.push_back({start, end, *version});
        } else {
          violations_.push_back(
              "key '" + key + "': read at t=" + std::to_string(start / 1000) +
              "ms returned a value the checker never wrote: " + version.status().message());
        }
      } else if (result.status().IsNotFound()) {
        reads_.fetch_add(1, std::memory_order_relaxed);
        histories_[k].reads.push_back({start, end, std::nullopt});
      } else {
        read_errors_.fetch_add(1, std::memory_order_relaxed);
        last_error_ = key + ": " + result.status().ToString();
      }
    }
    progress_cv_.notify_all();
  }
  {
    std::lock_guard lock(mu_);
    --running_;
  }
  progress_cv_.notify_all();
}

void HistoryChecker::Wait() {
  if (joined_) return;
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  clients_.clear();
  joined_ = true;
  if (!options_.check_reads) return;
  std::lock_guard lock(mu_);
  for (const KeyHistory& h : histories_) {
    std::vector<std::string> found = CheckReads(h);
    violations_.insert(violations_.end(), found.begin(), found.end());
  }
}

void HistoryChecker::Stop() {
  stop_.store(true, std::memory_order_relaxed);
  Wait();
}

bool HistoryChecker::WaitUntil(const std::function<bool(const HistoryStats&)>& done,
                               std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  progress_cv_.wait_for(lock, Scaled(timeout),
                        [&] { return running_ == 0 || done(StatsLocked()); });
  return done(StatsLocked());
}

Status HistoryChecker::FinalCheck(std::optional<ClientOptions> client_options) {
  if (!started_) return Status::FailedPrecondition("history checker: FinalCheck before Start");
  Stop();
  const Clock::time_point deadline = Clock::now() + options_.final_timeout;
  std::optional<ClientOptions> replaced = std::move(client_options);
  if (replaced) replaced->timeout_ms = ScaledMs(replaced->timeout_ms);
  const ClientOptions& co = replaced ? *replaced : client_options_;

  std::vector<std::optional<uint64_t>> final_state(keys_.size());
  std::vector<size_t> pending(keys_.size());
  for (size_t i = 0; i < pending.size(); ++i) pending[i] = i;
  std::vector<std::string> found;
  Status last_error = Status::Unavailable("the final check ran out of time before reading");
  std::unique_ptr<Client> client;
  for (int attempt = 0; attempt < options_.final_attempts && !pending.empty(); ++attempt) {
    if (attempt > 0) {
      // A short backoff between attempts (not synchronization): a node may be mid-restart.
      const auto backoff = std::chrono::milliseconds(50 * attempt);
      if (Clock::now() + backoff >= deadline) break;
      std::this_thread::sleep_for(backoff);
    }
    if (client == nullptr) {
      auto connected = Client::Connect(co);
      if (!connected.ok()) {
        last_error = connected.status();
        continue;
      }
      client = std::move(connected).value();
    }
    std::vector<size_t> failed;
    std::vector<size_t> settled;  // read (a value or absent); checked against the history below
    for (size_t begin = 0; begin < pending.size(); begin += kFinalBatch) {
      const size_t end = std::min(pending.size(), begin + kFinalBatch);
      std::vector<std::string> batch;
      for (size_t j = begin; j < end; ++j) batch.push_back(keys_[pending[j]]);
      std::vector<StatusOr<std::string>> got = client->MultiGet(batch, options_.final_consistency);
      for (size_t j = begin; j < end; ++j) {
        const size_t k = pending[j];
        const StatusOr<std::string>& r = got.at(j - begin);
        if (r.ok()) {
          StatusOr<uint64_t> version = DecodeValue(keys_[k], *r);
          if (version.ok()) {
            final_state[k] = *version;
            settled.push_back(k);
          } else {
            found.push_back("key '" + keys_[k] +
                            "': final read returned a value the checker never wrote: " +
                            version.status().message());
          }
        } else if (r.status().IsNotFound()) {
          final_state[k] = std::nullopt;
          settled.push_back(k);
        } else {
          last_error = r.status().WithContext("key '" + keys_[k] + "'");
          failed.push_back(k);
        }
      }
    }
    {
      std::lock_guard lock(mu_);
      for (size_t k : settled) {
        std::vector<std::string> v = CheckFinal(histories_[k], final_state[k]);
        found.insert(found.end(), v.begin(), v.end());
      }
    }
    pending = std::move(failed);
  }

  std::lock_guard lock(mu_);
  violations_.insert(violations_.end(), found.begin(), found.end());
  if (!pending.empty()) {
    return Status::Unavailable("history checker: the final read of " +
                               std::to_string(pending.size()) +
                               " key(s) kept failing, last: " + last_error.ToString());
  }
  if (violations_.empty()) return Status::OK();
  std::string message = std::to_string(violations_.size()) + " violation(s):";
  for (size_t i = 0; i < violations_.size() && i < kViolationsInStatus; ++i) {
    message += "\n  " + violations_[i];
  }
  return Status::FailedPrecondition(message);
}

std::vector<std::string> HistoryChecker::Violations() const {
  std::lock_guard lock(mu_);
  return violations_;
}

HistoryStats HistoryChecker::StatsLocked() const {
  return {acked_.load(), failed_.load(), reads_.load(), read_errors_.load(), last_error_};
}

HistoryStats HistoryChecker::stats() const {
  std::lock_guard lock(mu_);
  return StatsLocked();
}

std::vector<KeyHistory> HistoryChecker::Histories() const {
  std::lock_guard lock(mu_);
  return histories_;
}

}  // namespace shardkv::testing
