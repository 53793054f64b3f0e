// shardkv-bench's two drivers (kv_bench_drivers.h): ShardkvDriver and RedisDriver, the same
// closed loop over the shardkv async client and over non-blocking hiredis contexts.
#include "kv_bench_drivers.h"

#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "shardkv/client.h"
#include "shardkv/options.h"
#include "shardkv/status.h"

namespace kv_bench {
namespace {

// Added to the run's natural end before waiting for stragglers is declared a failure.
constexpr auto kDrainGrace = std::chrono::seconds(10);

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
    options.auth_secret_file = config_.auth_secret_file;
    options.tls_ca_file = config_.tls_ca_file;
    options.tls_cert_file = config_.tls_cert_file;
    options.tls_key_file = config_.tls_key_file;
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

}  // namespace

std::unique_ptr<Driver> MakeShardkvDriver(const Config& config) {
  return std::make_unique<ShardkvDriver>(config);
}

std::unique_ptr<Driver> MakeRedisDriver(const Config& config) {
  return std::make_unique<RedisDriver>(config);
}

}  // namespace kv_bench
