#include "redis/scan_commands.h"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <random>
#include <utility>

#include "common/mutex.h"
#include "redis/ascii_case.h"
#include "redis/cluster_commands.h"
#include "redis/key_commands.h"
#include "resp/resp_writer.h"

namespace shardkv::redis {
namespace {

// Entries a batch of KEYS, RANDOMKEY or FLUSH* examines: large enough for few round trips, small
// enough that one batch's reply stays far below the frame limit.
constexpr uint32_t kInternalCount = 1000;
// Batches one SCAN call may read to reach the next cursor position: a position holds 4096 tokens
// in ring mode, so a single batch almost always passes one; this only bounds a pathological case.
constexpr size_t kMaxWalkBatches = 10000;

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

uint64_t Unit(uint64_t last_token, int bits) { return (last_token >> bits) + 1; }

std::string ScanReply(resp::Protocol p, uint64_t next, const std::vector<std::string>& keys) {
  std::string out;
  resp::RespWriter w(&out, p);
  w.ArrayHeader(2);
  w.Bulk(std::to_string(next));
  w.ArrayHeader(keys.size());
  for (const auto& k : keys) w.Bulk(k);
  return out;
}

}  // namespace

uint64_t LastToken(const ClusterMap& map) {
  if (map.ring() != nullptr) return UINT64_MAX;
  return (uint64_t{map.params().shards} << 32) - 1;
}

// log2(kClusterSlots): a slot's tokens are the token space's 16384th.
constexpr int kSlotBits = 14;
static_assert(kClusterSlots == 1u << kSlotBits);

uint64_t SlotFirstToken(uint64_t last_token, uint32_t slot) {
  return slot * ((last_token >> kSlotBits) + 1);
}

uint64_t SlotLastToken(uint64_t last_token, uint32_t slot) {
  // slot * W + (W - 1): never past last_token, so no overflow at the end of a 2^64 space.
  const uint64_t width = (last_token >> kSlotBits) + 1;
  return slot * width + (width - 1);
}

ScanCursor DecodeCursor(uint64_t cursor, uint64_t last_token) {
  ScanCursor c;
  c.last = last_token;
  if (cursor >= (uint64_t{1} << 53)) {  // a raw token, from a release before this one
    c.unit = Unit(last_token, kPlainPositionBits);
    c.token = cursor;
    return c;
  }
  if ((cursor & kScopedCursorFlag) == 0) {
    c.unit = Unit(last_token, kPlainPositionBits);
    c.token = cursor * c.unit;
    return c;
  }
  c.scoped = true;
  c.end_slot = static_cast<uint32_t>((cursor >> kScopedPositionBits) & (kClusterSlots - 1));
  c.last = SlotLastToken(last_token, c.end_slot);
  c.unit = Unit(last_token, kScopedPositionBits);
  c.token = (cursor & ((uint64_t{1} << kScopedPositionBits) - 1)) * c.unit;
  return c;
}

ScanCursor ScopedStart(uint64_t last_token, uint32_t first, uint32_t last) {
  ScanCursor c;
  c.scoped = true;
  c.end_slot = last;
  c.token = SlotFirstToken(last_token, first);
  c.last = SlotLastToken(last_token, last);
  c.unit = Unit(last_token, kScopedPositionBits);
  return c;
}

uint64_t EncodeCursor(const ScanCursor& c, uint64_t position) {
  if (!c.scoped) return position;
  return kScopedCursorFlag | (uint64_t{c.end_slot} << kScopedPositionBits) | position;
}

// The state of one SCAN call: the batches it reads to end at a cursor position.
struct ScanCommands::Walk {
  ScanCursor cursor;
  std::shared_ptr<const ClusterMap> map;  // tokens of the keys (TokenOf)
  uint64_t start_position = 0;  // the position the call began in: the next must be past it
  uint64_t next_token = 0;      // where the next batch reads from
  uint32_t count = 0;
  std::string match;
  bool typed = false;  // SCAN ... TYPE
  net::ValueKind type = net::ValueKind::kString;
  net::Consistency consistency = net::Consistency::kDefault;
  resp::Protocol protocol = resp::Protocol::kResp2;
  std::vector<std::pair<uint64_t, std::string>> keys;  // by token, as the batches found them
  size_t batches = 0;
  ReplyDone done;
};

// The state of a command that runs several scan batches.
struct ScanCommands::Gather {
  enum class Kind { kKeys, kRandom, kFlush } kind = Kind::kKeys;
  resp::Protocol protocol = resp::Protocol::kResp2;
  net::Consistency consistency = net::Consistency::kDefault;
  std::string match;
  uint64_t cursor = 0;
  uint64_t start = 0;    // RANDOMKEY: where it began
  bool wrapped = false;  // RANDOMKEY: passed the end and went on from 0
  // KEYS of a node-scoped connection: the last token of its range, and the map that gives the
  // keys' tokens (null: the whole cluster).
  uint64_t last = UINT64_MAX;
  std::shared_ptr<const ClusterMap> map;
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
      // Redis's type names; one shardkv has no keys of (list, zset, stream) finds nothing.
      const std::string type = Lower(args[i + 1]);
      scan.typed = true;
      if (type == "string") {
        scan.type = net::ValueKind::kString;
      } else if (type == "hash") {
        scan.type = net::ValueKind::kHash;
      } else if (type == "set") {
        scan.type = net::ValueKind::kSet;
      } else {
        other_type = true;
      }
    } else {
      return done(Err(kSyntax));
    }
  }
  const resp::Protocol p = session.protocol();
  if (other_type) return done(ScanReply(p, 0, {}));
  auto map = c_->view->Map();
  if (map == nullptr) {
    // Unformed: the scan op answers why. (The command layer's tests run without a map, with
    // the op's cursor as it is.)
    return CallScan(c_, session.consistency(), std::move(scan),
                    [p, done = std::move(done)](StatusOr<net::ScanResponse> r) {
                      if (!r.ok()) return done(ErrorReply(r.status()));
                      done(ScanReply(p, r->cursor, r->keys));
                    });
  }
  auto walk = std::make_shared<Walk>();
  walk->map = map;
  walk->count = scan.count;
  walk->match = std::move(scan.match);
  walk->typed = scan.typed;
  walk->type = scan.type;
  walk->consistency = session.consistency();
  walk->protocol = p;
  walk->done = std::move(done);
  const uint64_t last_token = LastToken(*map);
  auto begin = [this, walk](ScanCursor c) {
    walk->cursor = c;
    walk->start_position = c.token / c.unit;
    walk->next_token = c.token;
    WalkNext(walk);
  };
  if (cursor != 0 || !session.node_scoped()) return begin(DecodeCursor(cursor, last_token));
  // A node-scoped scan begins with this node's slots, as CLUSTER SLOTS gives them now; its
  // cursors carry the end, so the range stays the one it began with.
  c_->view->Fetch([this, walk, begin, last_token](std::vector<NodeView> nodes) {
    uint32_t first = 0, last = 0;
    if (!OwnSlotRange(nodes, c_->self_id, &first, &last)) {
      return walk->done(ScanReply(walk->protocol, 0, {}));
    }
    begin(ScopedStart(last_token, first, last));
  });
}

void ScanCommands::WalkNext(const std::shared_ptr<Walk>& walk) {
  // A loop, not recursion, as Next below.
  while (true) {
    auto arrivals = std::make_shared<std::atomic<int>>(0);
    WalkBatch(walk, [this, walk, arrivals] {
      if (arrivals->fetch_add(1) == 1) WalkNext(walk);
    });
    if (arrivals->fetch_add(1) == 0) return;
  }
}

void ScanCommands::WalkBatch(const std::shared_ptr<Walk>& walk, std::function<void()> more) {
  auto finish = [walk](uint64_t next, uint64_t below) {
    std::vector<std::string> keys;
    for (auto& [token, key] : walk->keys) {
      if (token < below) keys.push_back(std::move(key));
    }
    walk->done(ScanReply(walk->protocol, next, keys));
  };
  const ScanCursor& c = walk->cursor;
  if (walk->next_token > c.last) return finish(0, 0);
  if (++walk->batches > kMaxWalkBatches) {
    return walk->done(Err("SCAN read " + std::to_string(kMaxWalkBatches) +
                          " batches without passing one cursor position; use a larger COUNT"));
  }
  net::ScanRequest scan{walk->next_token, walk->count, walk->match, walk->typed, walk->type};
  CallScan(c_, walk->consistency, std::move(scan),
           [walk, finish, more](StatusOr<net::ScanResponse> r) {
             if (!r.ok()) return walk->done(ErrorReply(r.status()));
             const ScanCursor& c = walk->cursor;
             for (auto& key : r->keys) {
               const uint64_t token = walk->map->TokenOf(key);
               if (token <= c.last) walk->keys.emplace_back(token, std::move(key));
             }
             // Every token below r->cursor has been read: past the range's end, the scan is
             // done (keys past it were left out above).
             if (r->cursor == 0 || r->cursor > c.last) return finish(0, UINT64_MAX);
             const uint64_t position = r->cursor / c.unit;
             // The keys of `position`'s tokens read so far are left for the next call, which
             // reads from the position's first token: so none is returned twice.
             if (position > walk->start_position) {
               return finish(EncodeCursor(c, position), position * c.unit);
             }
             walk->next_token = r->cursor;  // still inside the position the call began in
             more();
           });
}

void ScanCommands::Keys(const RedisSession& session, const Args& args, ReplyDone done) {
  auto g = std::make_shared<Gather>();
  g->kind = Gather::Kind::kKeys;
  g->protocol = session.protocol();
  g->consistency = session.consistency();
  g->match = args[1] == "*" ? "" : args[1];
  g->done = std::move(done);
  auto map = c_->view->Map();
  if (!session.node_scoped() || map == nullptr) return Next(g);
  // Node-scoped: this node's slots only, as SCAN (KEYS needs no cursor across calls).
  c_->view->Fetch([this, g, map](std::vector<NodeView> nodes) {
    uint32_t first = 0, last = 0;
    if (!OwnSlotRange(nodes, c_->self_id, &first, &last)) {
      std::string out;
      resp::RespWriter(&out, g->protocol).ArrayHeader(0);
      return g->done(std::move(out));
    }
    const ScanCursor c = ScopedStart(LastToken(*map), first, last);
    g->map = map;
    g->cursor = c.token;
    g->last = c.last;
    Next(g);
  });
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
        for (auto& k : r->keys) {
          if (g->map == nullptr || g->map->TokenOf(k) <= g->last) g->keys.push_back(std::move(k));
        }
        if (r->cursor > g->last) r->cursor = 0;  // past a node-scoped range: done
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
