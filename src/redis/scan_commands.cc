#include "redis/scan_commands.h"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <random>
#include <utility>

#include "common/mutex.h"
#include "redis/ascii_case.h"
#include "redis/key_commands.h"
#include "resp/resp_writer.h"

namespace shardkv::redis {
namespace {

std::string Err(std::string_view message) {
  std::string out;
  resp::RespWriter(&out, resp::Protocol::kResp2).Error(message);
  return out;
}

constexpr char kSyntax[] = "syntax error";
constexpr char kNotInteger[] = "value is not an integer or out of range";
// Entries a batch of KEYS, RANDOMKEY or FLUSH* examines: large enough for few round trips, small
// enough that one batch's reply stays far below the frame limit.
constexpr uint32_t kInternalCount = 1000;

// Redis's parseScanCursorOrReply: strtoul, refusing leading spaces, trailing bytes and overflow
// (so "-1" is accepted as the largest cursor, and "" as 0, exactly as redis-server does).
bool ParseCursor(const std::string& text, uint64_t* out) {
  if (!text.empty() && std::isspace(static_cast<unsigned char>(text[0]))) return false;
  if (text.find('\0') != std::string::npos) return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (*end != '\0' || errno == ERANGE) return false;
  *out = v;
  return true;
}

void CallScan(const CommandContext* c, net::Consistency consistency, net::ScanRequest scan,
              std::function<void(StatusOr<net::ScanResponse>)> done) {
  net::OpOptions options;
  options.consistency = consistency;
  c->ops->Scan(options, std::move(scan), std::move(done));
}

}  // namespace

// The state of a command that runs several scan batches.
struct ScanCommands::Gather {
  enum class Kind { kKeys, kRandom, kFlush } kind = Kind::kKeys;
  resp::Protocol protocol = resp::Protocol::kResp2;
  net::Consistency consistency = net::Consistency::kDefault;
  std::string match;
  uint64_t cursor = 0;
  uint64_t start = 0;    // RANDOMKEY: where it began
  bool wrapped = false;  // RANDOMKEY: passed the end and went on from 0
  std::vector<std::string> keys;
  size_t batches = 0;
  ReplyDone done;
};

void ScanCommands::Handle(const RedisSession& session, Args args, ReplyDone done) {
  const std::string name = Lower(args[0]);
  if (name == "scan") return Scan(session, args, std::move(done));
  if (name == "keys") return Keys(session, args, std::move(done));
  if (name == "randomkey") return RandomKey(session, std::move(done));
  Flush(session, args, std::move(done));
}

void ScanCommands::Scan(const RedisSession& session, const Args& args, ReplyDone done) {
  uint64_t cursor = 0;
  if (!ParseCursor(args[1], &cursor)) return done(Err("invalid cursor"));
  net::ScanRequest scan;
  scan.cursor = cursor;
  scan.count = 10;
  bool other_type = false;
  for (size_t i = 2; i < args.size(); i += 2) {
    const std::string opt = Upper(args[i]);
    if (i + 1 >= args.size()) return done(Err(kSyntax));
    if (opt == "COUNT") {
      int64_t count = 0;
      if (!ParseInt(args[i + 1], &count)) return done(Err(kNotInteger));
      if (count < 1) return done(Err(kSyntax));
      scan.count = static_cast<uint32_t>(std::min<int64_t>(count, UINT32_MAX));
    } else if (opt == "MATCH") {
      // "*" matches every key: leave the filter out, as redis-server does.
      scan.match = args[i + 1] == "*" ? "" : args[i + 1];
    } else if (opt == "TYPE") {
      other_type = Lower(args[i + 1]) != "string";
    } else {
      return done(Err(kSyntax));
    }
  }
  const resp::Protocol p = session.protocol();
  auto reply = [p](uint64_t next, const std::vector<std::string>& keys) {
    std::string out;
    resp::RespWriter w(&out, p);
    w.ArrayHeader(2);
    w.Bulk(std::to_string(next));
    w.ArrayHeader(keys.size());
    for (const auto& k : keys) w.Bulk(k);
    return out;
  };
  // Every key is a string: a scan for another type has nothing to find.
  if (other_type) return done(reply(0, {}));
  CallScan(c_, session.consistency(), std::move(scan),
           [reply, done = std::move(done)](StatusOr<net::ScanResponse> r) {
             if (!r.ok()) return done(ErrorReply(r.status()));
             done(reply(r->cursor, r->keys));
           });
}

void ScanCommands::Keys(const RedisSession& session, const Args& args, ReplyDone done) {
  auto g = std::make_shared<Gather>();
  g->kind = Gather::Kind::kKeys;
  g->protocol = session.protocol();
  g->consistency = session.consistency();
  g->match = args[1] == "*" ? "" : args[1];
  g->done = std::move(done);
  Next(g);
}

void ScanCommands::RandomKey(const RedisSession& session, ReplyDone done) {
  auto g = std::make_shared<Gather>();
  g->kind = Gather::Kind::kRandom;
  g->protocol = session.protocol();
  g->consistency = session.consistency();
  g->done = std::move(done);
  // A random position in the token space the map places keys in (jump mode: below the last
  // shard's tokens), so that the key found after it is a fair pick.
  thread_local std::mt19937_64 rng{std::random_device{}()};
  auto map = c_->view ? c_->view->Map() : nullptr;
  uint64_t end = UINT64_MAX;
  if (map && map->ring() == nullptr) end = (uint64_t{map->params().shards} << 32) - 1;
  g->start = g->cursor = std::uniform_int_distribution<uint64_t>(0, end)(rng);
  Next(g);
}

void ScanCommands::Flush(const RedisSession& session, const Args& args, ReplyDone done) {
  const std::string name = Upper(args[0]);
  if (args.size() > 2) return done(Err(kSyntax));
  if (args.size() == 2) {
    const std::string mode = Upper(args[1]);
    if (mode != "ASYNC" && mode != "SYNC") return done(Err(kSyntax));
  }
  if (!c_->allow_flush) {
    return done(Err(name +
                    " is disabled on this node: it deletes every key of the whole cluster. "
                    "Enable it with shardkv-node --redis-allow-flush or [redis] allow_flush = "
                    "true (cluster up does for local clusters)"));
  }
  auto g = std::make_shared<Gather>();
  g->kind = Gather::Kind::kFlush;
  g->protocol = session.protocol();
  g->consistency = session.consistency();
  g->done = std::move(done);
  Next(g);
}

void ScanCommands::Next(const std::shared_ptr<Gather>& g) {
  // A loop, not recursion: on a one-node cluster every batch (and every delete) completes on
  // this thread, and a wipe of millions of keys would otherwise nest a call per batch.
  while (true) {
    auto arrivals = std::make_shared<std::atomic<int>>(0);
    Batch(g, [this, g, arrivals] {
      if (arrivals->fetch_add(1) == 1) Next(g);
    });
    if (arrivals->fetch_add(1) == 0) return;  // the batch goes on (or ended) elsewhere
  }
}

void ScanCommands::Batch(const std::shared_ptr<Gather>& g, std::function<void()> more) {
  ++g->batches;
  net::ScanRequest scan{g->cursor, kInternalCount, g->match};
  CallScan(c_, g->consistency, std::move(scan), [this, g, more](StatusOr<net::ScanResponse> r) {
    if (!r.ok()) return g->done(ErrorReply(r.status()));
    const resp::Protocol p = g->protocol;
    switch (g->kind) {
      case Gather::Kind::kKeys: {
        for (auto& k : r->keys) g->keys.push_back(std::move(k));
        if (g->keys.size() > kMaxKeysReply) {
          return g->done(Err("KEYS would return more than " + std::to_string(kMaxKeysReply) +
                             " keys; use SCAN with MATCH to iterate over them"));
        }
        if (r->cursor != 0) break;
        std::string out;
        resp::RespWriter w(&out, p);
        w.ArrayHeader(g->keys.size());
        for (const auto& k : g->keys) w.Bulk(k);
        return g->done(std::move(out));
      }
      case Gather::Kind::kRandom: {
        if (!r->keys.empty()) {
          std::string out;
          resp::RespWriter(&out, p).Bulk(r->keys.front());
          return g->done(std::move(out));
        }
        const bool at_end = r->cursor == 0;
        // Past the start again after wrapping: every token was looked at, the cluster is empty.
        if ((g->wrapped && (at_end || r->cursor > g->start)) || (at_end && g->start == 0)) {
          std::string out;
          resp::RespWriter(&out, p).Null();
          return g->done(std::move(out));
        }
        if (at_end) g->wrapped = true;
        g->cursor = r->cursor;
        return more();
      }
      case Gather::Kind::kFlush: {
        g->cursor = r->cursor;
        return DeleteBatch(g, std::move(r->keys), more);
      }
    }
    g->cursor = r->cursor;
    more();
  });
}

void ScanCommands::DeleteBatch(const std::shared_ptr<Gather>& g, std::vector<std::string> keys,
                               std::function<void()> more) {
  auto finish = [g, more] {
    if (g->cursor == 0) return g->done("+OK\r\n");
    more();
  };
  if (keys.empty()) return finish();
  struct Pending {
    std::atomic<size_t> left{0};
    common::Mutex mu;
    std::string error;
  };
  auto pending = std::make_shared<Pending>();
  pending->left = keys.size();
  for (auto& key : keys) {
    net::OpOptions options;
    options.consistency = g->consistency;
    c_->ops->Delete(options, net::DeleteRequest{0, std::move(key)},
                    [g, pending, finish](StatusOr<net::DeleteResponse> r) {
                      if (!r.ok()) {
                        common::MutexLock lock(&pending->mu);
                        if (pending->error.empty()) pending->error = ErrorReply(r.status());
                      }
                      if (pending->left.fetch_sub(1) != 1) return;
                      std::string error;
                      {
                        common::MutexLock lock(&pending->mu);
                        error = pending->error;
                      }
                      if (!error.empty()) return g->done(error);
                      finish();
                    });
  }
}

}  // namespace shardkv::redis
