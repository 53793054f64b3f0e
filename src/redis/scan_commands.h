// ScanCommands: SCAN, KEYS, RANDOMKEY, FLUSHDB and FLUSHALL (design.md "Scans"), on the node's
// `scan` op: an unordered scan of the whole cluster, not of this node, except on a node-scoped
// connection (RedisSession::node_scoped), whose SCAN and KEYS cover this node's emulated slots.
//
// - SCAN's cursor encodes a token position (0: start, and 0 again at the end; see
//   ScanCursor below). It stays valid across membership changes and restarts; a key may be
//   returned twice around a change, never skipped (as Redis's guarantee across a rehash), and
//   exactly once from a quiet cluster. MATCH filters on the replicas; COUNT is the hint of work
//   per call; TYPE string returns the keys, any other type none (every key is a string).
// - KEYS is a full scan gathered into one reply (node-scoped: of this node's slots), refused
//   once more than kMaxKeysReply keys match (use SCAN for more).
// - RANDOMKEY scans from a random cursor, wrapping once; nil when the cluster is empty.
// - FLUSHDB / FLUSHALL delete every key of the cluster (scan, then a tombstone per key), only
//   when the node allows it (CommandContext::allow_flush). Not atomic: a key written during the
//   wipe may survive it.
//
// Thread-safety: thread-safe; replies may arrive on any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "redis/command_context.h"
#include "redis/redis_session.h"
#include "shardkv/cluster_map.h"

namespace shardkv::redis {

inline constexpr size_t kMaxKeysReply = 100000;

// The Redis SCAN cursor. At most 53 bits, so that a client that reads it as a double (node-redis
// 4: `Number(cursor)`) sends it back exactly. E is the number of tokens the map places (2^64 in
// ring mode, shards << 32 in jump mode), unit(b) = ceil(E / 2^b) tokens per position:
//  - plain:  P < 2^52: resume at token P * unit(52) (4096 tokens in ring mode, 1 in jump mode
//    below 2^20 shards), to the end of the token space;
//  - scoped: 2^52 | S << 38 | P with P < 2^38: resume at token P * unit(38), up to the last token
//    of emulated slot S. The end travels in the cursor, so a scan keeps the range it began with
//    when the slot table changes under it;
//  - 2^53 and above: a raw token, the cursor of releases before this one (plain).
// A batch that ends inside a position's tokens gives back the keys of that position (the next
// call returns them), or reads on to the next position, so no key is returned twice.
inline constexpr uint64_t kScopedCursorFlag = uint64_t{1} << 52;
inline constexpr int kPlainPositionBits = 52;
inline constexpr int kScopedPositionBits = 38;

struct ScanCursor {
  uint64_t token = 0;  // the first token to read
  uint64_t last = 0;   // the last token of the scan's range (inclusive)
  uint64_t unit = 1;   // tokens per cursor position
  bool scoped = false;
  uint32_t end_slot = 0;  // scoped: the emulated slot `last` ends
};

// The last token `map` places: UINT64_MAX in ring mode, (shards << 32) - 1 in jump mode.
uint64_t LastToken(const ClusterMap& map);
// Emulated slot `slot`'s tokens as a scan divides them: [slot * W, slot * W + W - 1] with
// W = (last_token + 1) / 16384.
uint64_t SlotFirstToken(uint64_t last_token, uint32_t slot);
uint64_t SlotLastToken(uint64_t last_token, uint32_t slot);
// What `cursor` stands for (0: a plain scan from the start).
ScanCursor DecodeCursor(uint64_t cursor, uint64_t last_token);
// A scoped scan of slots [first, last] from its start.
ScanCursor ScopedStart(uint64_t last_token, uint32_t first, uint32_t last);
// The cursor that resumes `c`'s scan at position `position` (tokens position * c.unit on).
uint64_t EncodeCursor(const ScanCursor& c, uint64_t position);

class ScanCommands {
 public:
  explicit ScanCommands(const CommandContext* context) : c_(context) {}

  // `args` passed the arity check and authentication; args[0] names the command (any case).
  void Handle(const RedisSession& session, Args args, ReplyDone done);

 private:
  struct Gather;
  struct Walk;
  void Scan(const RedisSession& session, const Args& args, ReplyDone done);
  void Keys(const RedisSession& session, const Args& args, ReplyDone done);
  void RandomKey(const RedisSession& session, ReplyDone done);
  void Flush(const RedisSession& session, const Args& args, ReplyDone done);
  // Runs the batches of a multi-batch command (KEYS, RANDOMKEY, FLUSH*) from gather's cursor
  // until one of them answers the command.
  void Next(const std::shared_ptr<Gather>& gather);
  // One batch; calls `more` when another one is needed.
  void Batch(const std::shared_ptr<Gather>& gather, std::function<void()> more);
  // SCAN's batches from walk's cursor until one ends at a new cursor position or the range ends.
  void WalkNext(const std::shared_ptr<Walk>& walk);
  void WalkBatch(const std::shared_ptr<Walk>& walk, std::function<void()> more);
  void DeleteBatch(const std::shared_ptr<Gather>& gather, std::vector<std::string> keys,
                   std::function<void()> more);

  const CommandContext* c_;
};

}  // namespace shardkv::redis
