// shardkv-bench: a closed-loop load generator that drives either a shardkv cluster (through the
// public async client API) or a redis-server (through hiredis) with the same workload, so the
// two can be compared on one machine.
//
// Fairness, i.e. what is identical for both targets:
//   - The op sequence. Logical client c's i-th op (GET or PUT, and its key) is a pure function
//     of (seed, c, i), so both targets see the same keys in the same per-client order.
//   - The closed loop. Each of --clients logical clients keeps --pipeline requests outstanding;
//     a completion is recorded and immediately replaced by the client's next op. Latency runs
//     from just before the request is handed to the client library to the moment its reply is
//     seen on the client side, so it includes queueing in the pipeline.
//   - The connections and threads. shardkv: one Client with connections_per_node = --clients
//     and io_threads = --threads; completions run on those threads and issue the next op there.
//     redis: --clients non-blocking hiredis contexts spread over --threads epoll loops that parse
//     replies and issue the next op. Either way --clients TCP connections are open and --threads
//     threads do all the client-side work (the main thread only waits).
//   - The bookkeeping: the same per-client state, histogram and lock on every completion.
// One difference cannot be removed through the public API: the shardkv client spreads each call
// over its connections round-robin, so a logical client's requests are not pinned to one
// connection. The number of requests in flight (clients x pipeline) is the same.
//
// A GET of a missing key counts as a completed op (and is reported as a miss).
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "placement_lab/json.h"
#include "shardkv/client.h"
#include "shardkv/options.h"
#include "shardkv/status.h"

namespace {

using Clock = std::chrono::steady_clock;
using shardkv::Status;
using shardkv::StatusOr;

// More errors than this end the run early: a broken target should not spin for the whole
// duration, and a callback that fails synchronously must not recurse without bound.
constexpr uint64_t kMaxErrors = 100;
// Added to the run's natural end before waiting for stragglers is declared a failure.
constexpr auto kDrainGrace = std::chrono::seconds(10);

struct Config {
  std::string target = "shardkv";
  std::vector<std::string> cluster;
  std::string redis;
  int clients = 50;
  int pipeline = 1;
  std::string ratio = "1:0";
  uint64_t get_weight = 1;
  uint64_t put_weight = 0;
  size_t value_size = 100;
  uint64_t keyspace = 100000;
  std::string dist = "uniform";
  double zipf_theta = 0;  // 0 = uniform
  double duration_s = 0;
  uint64_t ops = 0;
  int threads = 1;
  bool preload = false;
  uint64_t warmup_ops = 20;
  uint64_t seed = 1;
  bool json = false;
  uint32_t timeout_ms = 5000;
  int server_pid = 0;
  std::string label;
};

// ---------------------------------------------------------------------------------------------
// Workload

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from the top 53 bits.
double UnitInterval(uint64_t r) { return static_cast<double>(r >> 11) * 0x1.0p-53; }

// Key ids in [0, n): uniform, or Zipfian over ranks as in YCSB's ZipfianGenerator (Gray et al.),
// with rank r mapped to key (r * mult + n/3) mod n. The permutation spreads the hot keys over
// the key space (and so over shards) instead of packing them into key:000000000000, ...
class KeyChooser {
 public:
  KeyChooser(uint64_t n, double theta) : n_(n), theta_(theta) {
    if (theta_ <= 0 || n_ < 3) return;
    // zeta(n, theta) summed exactly over the first million terms; beyond that the tail is the
    // integral of x^-theta (midpoint rule), accurate to ~1e-9 relative and O(1) for any n.
    constexpr uint64_t kExactTerms = 1000000;
    const uint64_t exact = std::min(n_, kExactTerms);
    double zetan = 0;
    for (uint64_t i = 1; i <= exact; ++i) zetan += 1.0 / std::pow(static_cast<double>(i), theta_);
    if (n_ > exact) {
      auto antiderivative = [&](double x) { return std::pow(x, 1.0 - theta_) / (1.0 - theta_); };
      zetan += antiderivative(static_cast<double>(n_) + 0.5) -
               antiderivative(static_cast<double>(exact) + 0.5);
    }
    const double zeta2 = 1.0 + 1.0 / std::pow(2.0, theta_);
    zetan_ = zetan;
    alpha_ = 1.0 / (1.0 - theta_);
    eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n_), 1.0 - theta_)) / (1.0 - zeta2 / zetan);
    half_pow_theta_ = 1.0 + std::pow(0.5, theta_);
    mult_ = static_cast<uint64_t>(static_cast<double>(n_) * 0.6180339887498949);
    while (std::gcd(mult_, n_) != 1) ++mult_;
  }

  uint64_t Pick(uint64_t r) const {
    if (theta_ <= 0 || n_ < 3) return r % n_;
    const double u = UnitInterval(r);
    const double uz = u * zetan_;
    uint64_t rank;
    if (uz < 1.0) {
      rank = 0;
    } else if (uz < half_pow_theta_) {
      rank = 1;
    } else {
      rank =
          static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
      rank = std::min(rank, n_ - 1);
    }
    return static_cast<uint64_t>((static_cast<unsigned __int128>(rank) * mult_ + n_ / 3) % n_);
  }

 private:
  uint64_t n_;
  double theta_;
  double zetan_ = 0, alpha_ = 0, eta_ = 0, half_pow_theta_ = 0;
  uint64_t mult_ = 1;
};

enum class OpType : uint8_t { kGet, kPut };

struct Op {
  OpType type = OpType::kGet;
  uint64_t key = 0;
};

// Which ops a phase runs. Only kMain is measured; the other two prepare the target the same way
// for both targets.
enum class Phase { kWarmup, kPreload, kMain };

const char* PhaseName(Phase p) {
  switch (p) {
    case Phase::kWarmup:
      return "warmup";
    case Phase::kPreload:
      return "preload";
    case Phase::kMain:
      return "run";
  }
  return "?";
}

class Workload {
 public:
  Workload(const Config& config, Phase phase)
      : phase_(phase),
        clients_(static_cast<uint64_t>(config.clients)),
        keyspace_(config.keyspace),
        get_weight_(config.get_weight),
        total_weight_(config.get_weight + config.put_weight),
        seed_(SplitMix64(config.seed)),
        chooser_(config.keyspace, config.zipf_theta) {
    switch (phase) {
      case Phase::kWarmup:
        per_client_ops_ = config.warmup_ops;
        break;
      case Phase::kPreload:
        break;  // Quota() splits the keyspace
      case Phase::kMain:
        if (config.ops > 0) {
          per_client_ops_ = config.ops / clients_;
          remainder_ = config.ops % clients_;
        } else {
          per_client_ops_ = std::numeric_limits<uint64_t>::max();  // bounded by the duration
        }
        break;
    }
  }

  Phase phase() const { return phase_; }

  // How many ops client `c` runs at most.
  uint64_t Quota(uint64_t c) const {
    if (phase_ == Phase::kPreload) {
      return c >= keyspace_ ? 0 : (keyspace_ - c + clients_ - 1) / clients_;
    }
    if (per_client_ops_ == std::numeric_limits<uint64_t>::max()) return per_client_ops_;
    return per_client_ops_ + (c < remainder_ ? 1 : 0);
  }

  // Client c's i-th op: a pure function of (seed, c, i).
  Op At(uint64_t c, uint64_t i) const {
    Op op;
    switch (phase_) {
      case Phase::kPreload:
        op.type = OpType::kPut;
        op.key = c + i * clients_;
        return op;
      case Phase::kWarmup:
        // Reads only, so warming up leaves the data as it was.
        op.type = OpType::kGet;
        op.key = SplitMix64(seed_ ^ (c * 0x100000001B3ULL + i)) % keyspace_;
        return op;
      case Phase::kMain:
        break;
    }
    const uint64_t r1 = SplitMix64(SplitMix64(seed_ + c) + i * 0x9E3779B97F4A7C15ULL);
    const uint64_t r2 = SplitMix64(r1);
    op.type = (r1 % total_weight_) < get_weight_ ? OpType::kGet : OpType::kPut;
    op.key = chooser_.Pick(r2);
    return op;
  }

 private:
  Phase phase_;
  uint64_t clients_;
  uint64_t keyspace_;
  uint64_t get_weight_;
  uint64_t total_weight_;
  uint64_t seed_;
  KeyChooser chooser_;
  uint64_t per_client_ops_ = 0;
  uint64_t remainder_ = 0;
};

// The same key format as redis-benchmark's "key:__rand_int__": "key:" plus 12 digits.
constexpr size_t kKeyBytes = 16;

void FormatKey(uint64_t id, char* out) {
  std::memcpy(out, "key:", 4);
  for (int i = 15; i >= 4; --i) {
    out[i] = static_cast<char>('0' + id % 10);
    id /= 10;
  }
}

// ---------------------------------------------------------------------------------------------
// Measurement

// Log-linear latency histogram in nanoseconds: 64 linear sub-buckets per power of two, so any
// reported percentile is within 1.6% of the true value. 32-bit counts keep it at 8 KiB, small
// enough to have one per logical client.
class Histogram {
 public:
  static constexpr int kSubBits = 6;
  static constexpr int kSub = 1 << kSubBits;
  static constexpr int kMaxExp = 40;  // about 18 minutes; anything longer is clamped
  static constexpr size_t kBuckets = static_cast<size_t>(kMaxExp - kSubBits + 2) * kSub;

  void Record(uint64_t ns) {
    ++counts_[Index(ns)];
    ++total_;
    sum_ += ns;
    max_ = std::max(max_, ns);
  }

  void Merge(const Histogram& other) {
    for (size_t i = 0; i < kBuckets; ++i) counts_[i] += other.counts_[i];
    total_ += other.total_;
    sum_ += other.sum_;
    max_ = std::max(max_, other.max_);
  }

  uint64_t count() const { return total_; }
  uint64_t max() const { return max_; }
  double mean() const { return total_ ? static_cast<double>(sum_) / total_ : 0; }

  // The value below which a fraction q of the samples lie (bucket midpoint).
  double Percentile(double q) const {
    if (total_ == 0) return 0;
    const uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * total_)));
    uint64_t seen = 0;
    for (size_t i = 0; i < kBuckets; ++i) {
      seen += counts_[i];
      if (seen >= rank) {
        const auto [lo, hi] = Bounds(i);
        return std::min<double>(static_cast<double>(max_), (lo + hi) / 2.0);
      }
    }
    return static_cast<double>(max_);
  }

 private:
  static size_t Index(uint64_t v) {
    if (v < kSub) return static_cast<size_t>(v);
    int e = 63 - std::countl_zero(v);  // >= kSubBits
    if (e > kMaxExp) {
      e = kMaxExp;
      v = (uint64_t{1} << (kMaxExp + 1)) - 1;
    }
    const uint64_t sub = (v >> (e - kSubBits)) & (kSub - 1);
    return static_cast<size_t>(e - kSubBits + 1) * kSub + sub;
  }

  static std::pair<double, double> Bounds(size_t index) {
    if (index < kSub) return {static_cast<double>(index), static_cast<double>(index) + 1};
    const int e = static_cast<int>(index / kSub) - 1 + kSubBits;
    const uint64_t sub = index % kSub;
    const double width = std::ldexp(1.0, e - kSubBits);
    const double lo = std::ldexp(1.0, e) + static_cast<double>(sub) * width;
    return {lo, lo + width};
  }

  std::array<uint32_t, kBuckets> counts_{};
  uint64_t total_ = 0;
  uint64_t sum_ = 0;
  uint64_t max_ = 0;
};

// Seconds of CPU (user + system) used by this process so far.
double ProcessCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; };
  return secs(ru.ru_utime) + secs(ru.ru_stime);
}

// Seconds of CPU used by another local process (the server), from /proc/PID/stat; nullopt if it
// cannot be read.
std::optional<double> OtherProcessCpuSeconds(int pid) {
  if (pid <= 0) return std::nullopt;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The command name (field 2) may contain spaces and parentheses; fields resume after the last
  // ')'. utime and stime are fields 14 and 15, i.e. the 12th and 13th after it.
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::string field;
  uint64_t utime = 0, stime = 0;
  for (int i = 3; i <= 15 && (fields >> field); ++i) {
    if (i == 14) utime = std::strtoull(field.c_str(), nullptr, 10);
    if (i == 15) stime = std::strtoull(field.c_str(), nullptr, 10);
  }
  if (!fields) return std::nullopt;
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// CPU seconds all processes on the machine have spent busy (not idle or waiting for I/O), from
// /proc/stat. The cores are shared with whatever else runs, so the report says how much of the
// machine was busy besides client and server.
std::optional<double> MachineBusyCpuSeconds() {
  std::ifstream in("/proc/stat");
  std::string cpu;
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (!(in >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal) ||
      cpu != "cpu") {
    return std::nullopt;
  }
  return static_cast<double>(user + nice + system + irq + softirq + steal) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

enum class Outcome { kOk, kMiss, kError };

// One logical client's progress. The lock is uncontended except with pipelining on several
// shardkv network threads; both targets take it on every completion so the cost is the same.
struct ClientState {
  std::mutex mu;
  uint64_t next = 0;  // index of the next op to issue
  uint64_t quota = 0;
  uint64_t completed = 0;
  uint64_t misses = 0;
  uint64_t errors = 0;
  Histogram latency;
};

// The state of one phase, shared by the drivers' threads.
class Run {
 public:
  Run(const Workload& workload, int clients, std::optional<Clock::time_point> end)
      : workload_(workload), end_(end) {
    for (int c = 0; c < clients; ++c) {
      clients_.push_back(std::make_unique<ClientState>());
      clients_.back()->quota = workload.Quota(static_cast<uint64_t>(c));
    }
  }

  int clients() const { return static_cast<int>(clients_.size()); }
  std::optional<Clock::time_point> end() const { return end_; }
  bool aborted() const { return abort_.load(std::memory_order_relaxed); }

  // The first op(s) of client c. False once the client has nothing (more) to issue.
  bool Start(int c, Clock::time_point now, Op* op) {
    ClientState& s = *clients_[c];
    std::lock_guard lock(s.mu);
    return TakeNext(c, s, now, op);
  }

  // Records a completion of client c and picks its next op, under one lock.
  bool Finish(int c, Clock::time_point start, Clock::time_point now, Outcome outcome,
              std::string_view error, Op* next) {
    ClientState& s = *clients_[c];
    bool stop_all = false;
    bool more;
    {
      std::lock_guard lock(s.mu);
      if (outcome == Outcome::kError) {
        ++s.errors;
      } else {
        ++s.completed;
        if (outcome == Outcome::kMiss) ++s.misses;
        s.latency.Record(static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(now - start).count()));
      }
      more = TakeNext(c, s, now, next);
    }
    if (outcome == Outcome::kError) {
      const uint64_t errors = total_errors_.fetch_add(1, std::memory_order_relaxed) + 1;
      if (errors == 1) {
        std::lock_guard lock(error_mu_);
        first_error_ = std::string(error);
      }
      if (errors >= kMaxErrors) stop_all = true;
    }
    if (stop_all) Abort();
    return more && !stop_all;
  }

  void Abort() { abort_.store(true, std::memory_order_relaxed); }

  std::string first_error() const {
    std::lock_guard lock(error_mu_);
    return first_error_;
  }

  // REQUIRES: every request of the phase has completed.
  void Totals(Histogram* latency, uint64_t* completed, uint64_t* misses, uint64_t* errors) const {
    *completed = *misses = *errors = 0;
    for (const auto& s : clients_) {
      std::lock_guard lock(s->mu);
      latency->Merge(s->latency);
      *completed += s->completed;
      *misses += s->misses;
      *errors += s->errors;
    }
  }

 private:
  bool TakeNext(int c, ClientState& s, Clock::time_point now, Op* op) {
    if (aborted() || s.next >= s.quota || (end_ && now >= *end_)) return false;
    *op = workload_.At(static_cast<uint64_t>(c), s.next++);
    return true;
  }

  const Workload& workload_;
  const std::optional<Clock::time_point> end_;
  std::vector<std::unique_ptr<ClientState>> clients_;
  std::atomic<bool> abort_{false};
  std::atomic<uint64_t> total_errors_{0};
  mutable std::mutex error_mu_;
  std::string first_error_;  // GUARDED_BY(error_mu_)
};

// ---------------------------------------------------------------------------------------------
// Drivers

class Driver {
 public:
  virtual ~Driver() = default;
  // Opens the connections. Not measured.
  virtual Status Connect() = 0;
  // Runs `run` to completion: every client keeps `pipeline` requests outstanding until its
  // quota, the end time or an abort stops it, then all outstanding requests are awaited.
  // Returns an error only if the phase could not be completed (stuck requests).
  virtual Status Execute(Run& run) = 0;
};

// shardkv through the public async API. Completion callbacks run on the client's network
// threads; they record the result and issue the client's next op from there, without blocking.
class ShardkvDriver : public Driver {
 public:
  explicit ShardkvDriver(const Config& config) : config_(config), value_(config.value_size, 'v') {}

  ~ShardkvDriver() override { client_.reset(); }

  Status Connect() override {
    shardkv::ClientOptions options;
    options.seeds = config_.cluster;
    options.timeout_ms = config_.timeout_ms;
    options.max_retries = 0;  // a benchmark reports failures instead of hiding them in retries
    options.io_threads = config_.threads;
    options.connections_per_node = config_.clients;
    auto client = shardkv::Client::Connect(std::move(options));
    if (!client.ok()) return client.status();
    client_ = std::move(client).value();
    return Status::OK();
  }

  Status Execute(Run& run) override {
    run_ = &run;
    outstanding_.store(0);
    const Clock::time_point now = Clock::now();
    // Counted before the first issue so an early completion cannot see zero while this thread
    // is still starting clients; the extra count is dropped once all are started.
    outstanding_.fetch_add(1);
    for (int c = 0; c < run.clients(); ++c) {
      for (int p = 0; p < config_.pipeline; ++p) {
        Op op;
        if (!run.Start(c, now, &op)) break;
        outstanding_.fetch_add(1);
        Issue(c, op);
      }
    }
    Release();
    std::unique_lock lock(mu_);
    const Clock::time_point limit = (run.end() ? *run.end() : Clock::now()) +
                                    std::chrono::milliseconds(config_.timeout_ms) + kDrainGrace;
    bool drained = true;
    if (run.end()) {
      drained = cv_.wait_until(lock, limit, [&] { return outstanding_.load() == 0; });
    } else {
      // Ops mode: no end time, but a stalled target still must not hang the run. Each request
      // is bounded by the client timeout, so progress every timeout interval is expected.
      uint64_t last = UINT64_MAX;
      while (!cv_.wait_for(lock, std::chrono::milliseconds(config_.timeout_ms) + kDrainGrace,
                           [&] { return outstanding_.load() == 0; })) {
        const uint64_t progress = issued_.load();
        if (progress == last) {
          drained = false;
          break;
        }
        last = progress;
      }
    }
    lock.unlock();
    if (!drained) {
      // Closing the client fails the stuck calls (their callbacks see the abort and stop).
      run.Abort();
      client_.reset();
      return Status::Timeout("requests still outstanding after the run's time limit");
    }
    return Status::OK();
  }

 private:
  void Issue(int c, const Op& op) {
    issued_.fetch_add(1, std::memory_order_relaxed);
    std::string key(kKeyBytes, '\0');
    FormatKey(op.key, key.data());
    const Clock::time_point start = Clock::now();
    if (op.type == OpType::kGet) {
      client_->GetAsync(std::move(key), [this, c, start](StatusOr<std::string> r) {
        if (r.ok()) return OnDone(c, start, Outcome::kOk, {});
        if (r.status().IsNotFound()) return OnDone(c, start, Outcome::kMiss, {});
        OnDone(c, start, Outcome::kError, r.status().ToString());
      });
    } else {
      client_->PutAsync(std::move(key), value_, [this, c, start](StatusOr<uint64_t> r) {
        if (r.ok()) return OnDone(c, start, Outcome::kOk, {});
        OnDone(c, start, Outcome::kError, r.status().ToString());
      });
    }
  }

  void OnDone(int c, Clock::time_point start, Outcome outcome, const std::string& error) {
    Op next;
    if (run_->Finish(c, start, Clock::now(), outcome, error, &next)) {
      Issue(c, next);  // the slot stays outstanding
      return;
    }
    Release();
  }

  void Release() {
    if (outstanding_.fetch_sub(1) == 1) {
      std::lock_guard lock(mu_);
      cv_.notify_all();
    }
  }

  const Config& config_;
  const std::string value_;
  std::unique_ptr<shardkv::Client> client_;
  Run* run_ = nullptr;
  std::atomic<int64_t> outstanding_{0};
  std::atomic<uint64_t> issued_{0};
  std::mutex mu_;
  std::condition_variable cv_;
};

// redis through hiredis: non-blocking contexts driven by one epoll loop per thread. Each loop
// appends a client's next command as soon as a reply comes back and writes it at once, which is
// what an event-driven client library does too.
class RedisDriver : public Driver {
 public:
  explicit RedisDriver(const Config& config) : config_(config), value_(config.value_size, 'v') {}

  ~RedisDriver() override {
    for (Conn& conn : conns_) {
      if (conn.ctx != nullptr) redisFree(conn.ctx);
    }
  }

  Status Connect() override {
    // Validate() checked the address.
    std::string host;
    uint16_t port = 0;
    (void)shardkv::ParseHostPort(config_.redis, &host, &port);
    conns_.resize(static_cast<size_t>(config_.clients));
    for (int c = 0; c < config_.clients; ++c) {
      Conn& conn = conns_[c];
      conn.client = c;
      conn.ctx = redisConnectNonBlock(host.c_str(), port);
      if (conn.ctx == nullptr) return Status::ResourceExhausted("cannot allocate a redis context");
      if (conn.ctx->err) {
        return Status::Unavailable(config_.redis + ": " + std::string(conn.ctx->errstr));
      }
    }
    // The connects run in parallel; wait for each to finish and check its outcome.
    for (Conn& conn : conns_) {
      pollfd pfd{conn.ctx->fd, POLLOUT, 0};
      const int ready =
          poll(&pfd, 1, static_cast<int>(std::min<uint32_t>(config_.timeout_ms, 3000)));
      if (ready <= 0) return Status::Unavailable(config_.redis + ": connect timed out");
      int err = 0;
      socklen_t len = sizeof(err);
      getsockopt(conn.ctx->fd, SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return Status::Unavailable(config_.redis + ": " + std::strerror(err));
      const int one = 1;
      setsockopt(conn.ctx->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
    return Status::OK();
  }

  Status Execute(Run& run) override {
    const int threads = std::min(config_.threads, config_.clients);
    std::vector<Status> results(static_cast<size_t>(threads));
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
      workers.emplace_back([this, &run, &results, t, threads] {
        std::vector<Conn*> mine;
        for (size_t c = static_cast<size_t>(t); c < conns_.size(); c += threads) {
          mine.push_back(&conns_[c]);
        }
        results[t] = Loop(run, mine);
      });
    }
    for (auto& w : workers) w.join();
    for (const Status& s : results) {
      if (!s.ok()) return s;
    }
    return Status::OK();
  }

 private:
  struct Conn {
    redisContext* ctx = nullptr;
    int client = 0;
    std::deque<Clock::time_point> starts;  // of the requests in flight, in order
    bool want_write = false;
    bool broken = false;
  };

  void Append(Conn& conn, const Op& op) {
    char key[kKeyBytes];
    FormatKey(op.key, key);
    if (op.type == OpType::kGet) {
      const char* argv[2] = {"GET", key};
      const size_t lens[2] = {3, kKeyBytes};
      conn.starts.push_back(Clock::now());
      redisAppendCommandArgv(conn.ctx, 2, argv, lens);
    } else {
      const char* argv[3] = {"SET", key, value_.data()};
      const size_t lens[3] = {3, kKeyBytes, value_.size()};
      conn.starts.push_back(Clock::now());
      redisAppendCommandArgv(conn.ctx, 3, argv, lens);
    }
  }

  // Writes what is buffered; asks epoll for writability only while something is left.
  void Flush(int epfd, Conn& conn, Run& run) {
    int done = 0;
    if (redisBufferWrite(conn.ctx, &done) != REDIS_OK) {
      Break(conn, run);
      return;
    }
    if (static_cast<bool>(done) == !conn.want_write) return;
    conn.want_write = !done;
    epoll_event ev{};
    ev.events = conn.want_write ? (EPOLLIN | EPOLLOUT) : EPOLLIN;
    ev.data.ptr = &conn;
    epoll_ctl(epfd, EPOLL_CTL_MOD, conn.ctx->fd, &ev);
  }

  // A failed connection fails everything it has in flight; its client issues nothing more.
  void Break(Conn& conn, Run& run) {
    if (conn.broken) return;
    conn.broken = true;
    const std::string why = config_.redis + ": " + conn.ctx->errstr;
    const Clock::time_point now = Clock::now();
    Op ignored;
    while (!conn.starts.empty()) {
      run.Finish(conn.client, conn.starts.front(), now, Outcome::kError, why, &ignored);
      conn.starts.pop_front();
    }
  }

  // Parses every complete reply; each one completes the oldest request and may issue the next.
  void ReadReplies(Conn& conn, Run& run) {
    if (redisBufferRead(conn.ctx) != REDIS_OK) {
      Break(conn, run);
      return;
    }
    for (;;) {
      void* raw = nullptr;
      if (redisGetReplyFromReader(conn.ctx, &raw) != REDIS_OK) {
        Break(conn, run);
        return;
      }
      if (raw == nullptr) return;
      auto* reply = static_cast<redisReply*>(raw);
      Outcome outcome = Outcome::kOk;
      std::string error;
      switch (reply->type) {
        case REDIS_REPLY_NIL:
          outcome = Outcome::kMiss;
          break;
        case REDIS_REPLY_STRING:
        case REDIS_REPLY_STATUS:
          break;
        case REDIS_REPLY_ERROR:
          outcome = Outcome::kError;
          error = config_.redis + ": " + std::string(reply->str, reply->len);
          break;
        default:
          outcome = Outcome::kError;
          error = config_.redis + ": unexpected reply type " + std::to_string(reply->type);
      }
      freeReplyObject(reply);
      if (conn.starts.empty()) {
        conn.ctx->err = REDIS_ERR_PROTOCOL;
        std::snprintf(conn.ctx->errstr, sizeof(conn.ctx->errstr), "reply without a request");
        Break(conn, run);
        return;
      }
      const Clock::time_point start = conn.starts.front();
      conn.starts.pop_front();
      Op next;
      if (run.Finish(conn.client, start, Clock::now(), outcome, error, &next)) Append(conn, next);
    }
  }

  Status Loop(Run& run, const std::vector<Conn*>& conns) {
    const int epfd = epoll_create1(EPOLL_CLOEXEC);
    if (epfd < 0) return Status::IOError(std::string("epoll_create1: ") + std::strerror(errno));
    for (Conn* conn : conns) {
      conn->want_write = false;
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = conn;
      epoll_ctl(epfd, EPOLL_CTL_ADD, conn->ctx->fd, &ev);
    }
    const Clock::time_point now = Clock::now();
    for (Conn* conn : conns) {
      if (conn->broken) continue;
      for (int p = 0; p < config_.pipeline; ++p) {
        Op op;
        if (!run.Start(conn->client, now, &op)) break;
        Append(*conn, op);
      }
      Flush(epfd, *conn, run);
    }
    auto in_flight = [&] {
      for (Conn* conn : conns) {
        if (!conn->broken && !conn->starts.empty()) return true;
      }
      return false;
    };
    const auto stall = std::chrono::milliseconds(config_.timeout_ms);
    Clock::time_point last_progress = Clock::now();
    std::array<epoll_event, 64> events;
    Status result;
    while (in_flight()) {
      const int n = epoll_wait(epfd, events.data(), static_cast<int>(events.size()), 100);
      if (n < 0 && errno != EINTR) {
        result = Status::IOError(std::string("epoll_wait: ") + std::strerror(errno));
        break;
      }
      if (n <= 0) {
        // Requests a stalled server never answers must not hang the run: give up on them after
        // the same timeout the shardkv client applies.
        if (Clock::now() - last_progress > stall) {
          result = Status::Timeout(config_.redis + ": no reply within " +
                                   std::to_string(config_.timeout_ms) + " ms");
          run.Abort();
          break;
        }
        continue;
      }
      last_progress = Clock::now();
      for (int i = 0; i < n; ++i) {
        Conn& conn = *static_cast<Conn*>(events[i].data.ptr);
        if (conn.broken) continue;
        if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) ReadReplies(conn, run);
        if (!conn.broken) Flush(epfd, conn, run);
      }
    }
    for (Conn* conn : conns) {
      epoll_ctl(epfd, EPOLL_CTL_DEL, conn->ctx->fd, nullptr);
      // Stragglers left by a timeout would be mistaken for the next phase's replies.
      if (!conn->starts.empty()) conn->broken = true;
    }
    close(epfd);
    return result;
  }

  const Config& config_;
  const std::string value_;
  std::vector<Conn> conns_;
};

// ---------------------------------------------------------------------------------------------
// Reporting

struct Report {
  Phase phase = Phase::kMain;
  uint64_t completed = 0;
  uint64_t misses = 0;
  uint64_t errors = 0;
  double elapsed_s = 0;
  double ops_per_s = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0, mean_us = 0;
  double client_cpu_pct = 0;
  // CPU per completed op: unlike ops/s it barely depends on how much of the shared cores other
  // processes took during the run, so it is the steadier figure for comparing two servers.
  double client_cpu_us_per_op = 0;
  std::optional<double> server_cpu_pct;
  std::optional<double> server_cpu_us_per_op;
  std::optional<double> machine_cpu_pct;
  std::string first_error;
};

// Without the surrounding quotes: the printf formats below supply them.
std::string JsonEscape(std::string_view s) {
  const std::string quoted = shardkv::JsonQuote(s);
  return quoted.substr(1, quoted.size() - 2);
}

void PrintJson(const Config& c, const Report& r) {
  std::printf(
      "{\"label\":\"%s\",\"target\":\"%s\",\"phase\":\"%s\",\"clients\":%d,\"pipeline\":%d,"
      "\"threads\":%d,\"ratio\":\"%s\",\"value_size\":%zu,\"keyspace\":%llu,\"dist\":\"%s\","
      "\"seed\":%llu,\"ops\":%llu,\"misses\":%llu,\"errors\":%llu,\"elapsed_s\":%.3f,"
      "\"ops_per_s\":%.1f,\"mean_us\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,"
      "\"max_us\":%.1f,\"client_cpu_pct\":%.1f,\"client_cpu_us_per_op\":%.2f",
      JsonEscape(c.label).c_str(), c.target.c_str(), PhaseName(r.phase), c.clients, c.pipeline,
      c.threads, c.ratio.c_str(), c.value_size, static_cast<unsigned long long>(c.keyspace),
      JsonEscape(c.dist).c_str(), static_cast<unsigned long long>(c.seed),
      static_cast<unsigned long long>(r.completed), static_cast<unsigned long long>(r.misses),
      static_cast<unsigned long long>(r.errors), r.elapsed_s, r.ops_per_s, r.mean_us, r.p50_us,
      r.p99_us, r.p999_us, r.max_us, r.client_cpu_pct, r.client_cpu_us_per_op);
  if (r.server_cpu_pct) std::printf(",\"server_cpu_pct\":%.1f", *r.server_cpu_pct);
  if (r.server_cpu_us_per_op) {
    std::printf(",\"server_cpu_us_per_op\":%.2f", *r.server_cpu_us_per_op);
  }
  if (r.machine_cpu_pct) std::printf(",\"machine_cpu_pct\":%.1f", *r.machine_cpu_pct);
  if (!r.first_error.empty()) {
    std::printf(",\"first_error\":\"%s\"", JsonEscape(r.first_error).c_str());
  }
  std::printf("}\n");
}

void PrintText(const Config& c, const Report& r) {
  if (r.phase != Phase::kMain) {
    std::printf("%-8s %llu ops in %.2f s (%.0f ops/s)%s\n", PhaseName(r.phase),
                static_cast<unsigned long long>(r.completed), r.elapsed_s, r.ops_per_s,
                r.errors ? " WITH ERRORS" : "");
  } else {
    std::printf(
        "%-8s %llu ops in %.2f s: %.0f ops/s  latency us: p50 %.1f  p99 %.1f  p99.9 %.1f  "
        "max %.1f  client CPU %.0f%% (%.1f us/op)",
        PhaseName(r.phase), static_cast<unsigned long long>(r.completed), r.elapsed_s, r.ops_per_s,
        r.p50_us, r.p99_us, r.p999_us, r.max_us, r.client_cpu_pct, r.client_cpu_us_per_op);
    if (r.server_cpu_pct) {
      std::printf("  server CPU %.0f%% (%.1f us/op)", *r.server_cpu_pct,
                  r.server_cpu_us_per_op.value_or(0));
    }
    if (r.machine_cpu_pct) std::printf("  machine busy %.0f%%", *r.machine_cpu_pct);
    std::printf("  get misses %llu  errors %llu\n", static_cast<unsigned long long>(r.misses),
                static_cast<unsigned long long>(r.errors));
  }
  if (!r.first_error.empty()) std::printf("         first error: %s\n", r.first_error.c_str());
}

// Runs one phase and measures it: wall time, client (and server) CPU, latency.
StatusOr<Report> RunPhase(const Config& config, Driver& driver, Phase phase) {
  Workload workload(config, phase);
  std::optional<Clock::time_point> end;
  const Clock::time_point start = Clock::now();
  if (phase == Phase::kMain && config.ops == 0) {
    end = start + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(config.duration_s));
  }
  Run run(workload, config.clients, end);
  const double cpu0 = ProcessCpuSeconds();
  const std::optional<double> server0 = OtherProcessCpuSeconds(config.server_pid);
  const std::optional<double> machine0 = MachineBusyCpuSeconds();
  Status executed = driver.Execute(run);
  const Clock::time_point finish = Clock::now();
  const double cpu1 = ProcessCpuSeconds();
  const std::optional<double> server1 = OtherProcessCpuSeconds(config.server_pid);
  const std::optional<double> machine1 = MachineBusyCpuSeconds();
  if (!executed.ok()) return executed;

  Report r;
  r.phase = phase;
  Histogram latency;
  run.Totals(&latency, &r.completed, &r.misses, &r.errors);
  r.elapsed_s = std::chrono::duration<double>(finish - start).count();
  r.ops_per_s = r.elapsed_s > 0 ? static_cast<double>(r.completed) / r.elapsed_s : 0;
  r.p50_us = latency.Percentile(0.50) / 1e3;
  r.p99_us = latency.Percentile(0.99) / 1e3;
  r.p999_us = latency.Percentile(0.999) / 1e3;
  r.max_us = static_cast<double>(latency.max()) / 1e3;
  r.mean_us = latency.mean() / 1e3;
  r.client_cpu_pct = r.elapsed_s > 0 ? 100.0 * (cpu1 - cpu0) / r.elapsed_s : 0;
  if (r.completed > 0) r.client_cpu_us_per_op = (cpu1 - cpu0) * 1e6 / r.completed;
  if (server0 && server1 && r.elapsed_s > 0) {
    r.server_cpu_pct = 100.0 * (*server1 - *server0) / r.elapsed_s;
    if (r.completed > 0) r.server_cpu_us_per_op = (*server1 - *server0) * 1e6 / r.completed;
  }
  if (machine0 && machine1 && r.elapsed_s > 0) {
    r.machine_cpu_pct = 100.0 * (*machine1 - *machine0) / r.elapsed_s;
  }
  r.first_error = run.first_error();
  return r;
}

// ---------------------------------------------------------------------------------------------
// Command line

// Parses "GET:PUT" weights such as "9:1".
bool ParseRatio(const std::string& text, uint64_t* get, uint64_t* put) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  auto parse = [](std::string_view s, uint64_t* out) {
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && p == s.data() + s.size() && *out <= 1000000;
  };
  const std::string_view view(text);
  return parse(view.substr(0, colon), get) && parse(view.substr(colon + 1), put) && *get + *put > 0;
}

// Parses "uniform", "zipf" (theta 0.99) or "zipf:THETA" with 0 < THETA < 1.
bool ParseDist(const std::string& text, double* theta) {
  if (text == "uniform") {
    *theta = 0;
    return true;
  }
  if (text == "zipf") {
    *theta = 0.99;
    return true;
  }
  if (text.rfind("zipf:", 0) != 0) return false;
  const std::string number = text.substr(5);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(number.c_str(), &end);
  if (number.empty() || errno != 0 || end != number.c_str() + number.size()) return false;
  if (!(v > 0 && v < 1)) return false;
  *theta = v;
  return true;
}

bool ValidHostPort(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  return shardkv::ParseHostPort(address, &host, &port).ok();
}

// Checks what CLI11 cannot express. Returns an empty string when the config is usable.
std::string Validate(Config& c) {
  if (!ParseRatio(c.ratio, &c.get_weight, &c.put_weight)) {
    return "--ratio must be GET:PUT with non-negative integers, not both 0 (e.g. 9:1), got \"" +
           c.ratio + "\"";
  }
  if (!ParseDist(c.dist, &c.zipf_theta)) {
    return "--dist must be uniform, zipf or zipf:THETA with 0 < THETA < 1, got \"" + c.dist + "\"";
  }
  if (c.target == "shardkv") {
    if (c.cluster.empty()) return "--target shardkv needs --cluster host:port[,...]";
    for (const auto& a : c.cluster) {
      if (!ValidHostPort(a)) return "--cluster: bad address \"" + a + "\" (expected host:port)";
    }
  } else {
    if (c.redis.empty()) return "--target redis needs --redis host:port";
    if (!ValidHostPort(c.redis)) return "--redis: bad address \"" + c.redis + "\"";
  }
  if (c.ops == 0 && c.duration_s == 0) c.duration_s = 10;
  if (c.ops > 0 && c.ops < static_cast<uint64_t>(c.clients)) {
    return "--ops must be at least --clients (" + std::to_string(c.clients) + ")";
  }
  if (c.threads > c.clients) c.threads = c.clients;
  return {};
}

int RealMain(int argc, char** argv) {
  Config config;
  CLI::App app{
      "shardkv-bench: closed-loop GET/PUT load generator for shardkv or redis-server.\n"
      "Each of --clients clients keeps --pipeline requests in flight; reports ops/s, latency\n"
      "percentiles (microseconds) and this process's CPU use (% of one core)."};
  app.add_option("--target", config.target, "shardkv or redis")
      ->capture_default_str()
      ->check(CLI::IsMember({"shardkv", "redis"}));
  app.add_option("--cluster", config.cluster, "shardkv seed nodes, host:port[,...]")
      ->delimiter(',');
  app.add_option("--redis", config.redis, "redis-server address, host:port");
  app.add_option("--clients", config.clients, "Connections / logical clients")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--pipeline", config.pipeline, "Requests in flight per client")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--ratio", config.ratio, "GET:PUT weights, e.g. 1:0, 0:1, 9:1")
      ->capture_default_str();
  app.add_option("--value-size", config.value_size, "Bytes per PUT value")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{16} << 20));
  app.add_option("--keyspace", config.keyspace, "Distinct keys (key:000000000000 ...)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000000000000}));
  app.add_option("--dist", config.dist, "Key distribution: uniform, zipf or zipf:THETA")
      ->capture_default_str();
  auto* duration = app.add_option("--duration", config.duration_s,
                                  "Seconds to run (default 10 unless --ops is given)")
                       ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--ops", config.ops, "Total ops to run instead of --duration")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 50))
      ->excludes(duration);
  app.add_option("--threads", config.threads,
                 "Load-generator threads (shardkv client I/O threads / redis event loops)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_flag("--preload", config.preload, "PUT every key of the keyspace before the run");
  app.add_option("--warmup-ops", config.warmup_ops,
                 "Unmeasured GETs per client before the run (opens every connection)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{1000000}));
  app.add_option("--seed", config.seed, "Seed of the key/op sequence")->capture_default_str();
  app.add_option("--timeout-ms", config.timeout_ms, "Per-request timeout")
      ->capture_default_str()
      ->check(CLI::Range(1u, 600000u));
  app.add_option("--server-pid", config.server_pid,
                 "Also report this local process's CPU use during the run (the server)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  app.add_option("--label", config.label, "Free text copied into the JSON output");
  app.add_flag("--json", config.json, "Print one JSON object per phase instead of text");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "shardkv-bench: %s\n", e.what());
    return 2;
  }
  if (std::string why = Validate(config); !why.empty()) {
    std::fprintf(stderr, "shardkv-bench: %s\n", why.c_str());
    return 2;
  }

  // A peer closing mid-write must surface as an error, not kill the process.
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<Driver> driver;
  if (config.target == "shardkv") {
    driver = std::make_unique<ShardkvDriver>(config);
  } else {
    driver = std::make_unique<RedisDriver>(config);
  }
  if (Status s = driver->Connect(); !s.ok()) {
    std::fprintf(stderr, "shardkv-bench: cannot connect: %s\n", s.ToString().c_str());
    return 3;
  }
  if (!config.json) {
    std::printf(
        "target %s  clients %d  pipeline %d  threads %d  ratio %s  value %zu B  "
        "keyspace %llu  dist %s  seed %llu\n",
        config.target.c_str(), config.clients, config.pipeline, config.threads,
        config.ratio.c_str(), config.value_size, static_cast<unsigned long long>(config.keyspace),
        config.dist.c_str(), static_cast<unsigned long long>(config.seed));
  }
  std::vector<Phase> phases;
  if (config.warmup_ops > 0) phases.push_back(Phase::kWarmup);
  if (config.preload) phases.push_back(Phase::kPreload);
  phases.push_back(Phase::kMain);
  int exit_code = 0;
  for (Phase phase : phases) {
    auto report = RunPhase(config, *driver, phase);
    if (!report.ok()) {
      std::fprintf(stderr, "shardkv-bench: %s failed: %s\n", PhaseName(phase),
                   report.status().ToString().c_str());
      return 1;
    }
    // Warm-up reads hit missing keys when nothing is preloaded; that is expected and silent.
    if (phase != Phase::kWarmup || report->errors > 0 || !config.json) {
      if (config.json) {
        PrintJson(config, *report);
      } else {
        PrintText(config, *report);
      }
    }
    std::fflush(stdout);
    if (report->errors > 0) {
      exit_code = 1;
      if (phase != Phase::kMain) {
        std::fprintf(stderr, "shardkv-bench: %s had errors; not running the measurement\n",
                     PhaseName(phase));
        return 1;
      }
    }
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return RealMain(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardkv-bench: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "shardkv-bench: internal error\n");
  }
  return 1;
}
