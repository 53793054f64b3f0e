// ScanCommands: SCAN, KEYS, RANDOMKEY, FLUSHDB and FLUSHALL (design.md "Scans"), on the node's
// `scan` op: an unordered scan of the whole cluster, not of this node.
//
// - SCAN's cursor is the scan's token position as an unsigned decimal (0: start, and 0 again at
//   the end). It stays valid across membership changes; a key may be returned twice, never
//   skipped (as Redis's guarantee across a rehash). MATCH filters on the replicas; COUNT is the
//   hint of work per call; TYPE string returns the keys, any other type none (every key is a
//   string).
// - KEYS is a full scan gathered into one reply, refused once more than kMaxKeysReply keys match
//   (use SCAN for more).
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

namespace shardkv::redis {

inline constexpr size_t kMaxKeysReply = 100000;

class ScanCommands {
 public:
  explicit ScanCommands(const CommandContext* context) : c_(context) {}

  // `args` passed the arity check and authentication; args[0] names the command (any case).
  void Handle(const RedisSession& session, Args args, ReplyDone done);

 private:
  struct Gather;
  void Scan(const RedisSession& session, const Args& args, ReplyDone done);
  void Keys(const RedisSession& session, const Args& args, ReplyDone done);
  void RandomKey(const RedisSession& session, ReplyDone done);
  void Flush(const RedisSession& session, const Args& args, ReplyDone done);
  // Runs the batches of a multi-batch command (KEYS, RANDOMKEY, FLUSH*) from gather's cursor
  // until one of them answers the command.
  void Next(const std::shared_ptr<Gather>& gather);
  // One batch; calls `more` when another one is needed.
  void Batch(const std::shared_ptr<Gather>& gather, std::function<void()> more);
  void DeleteBatch(const std::shared_ptr<Gather>& gather, std::vector<std::string> keys,
                   std::function<void()> more);

  const CommandContext* c_;
};

}  // namespace shardkv::redis
