// RespParser: splits a client's byte stream into RESP2 commands, as redis-server reads them.
//
// Used by the Redis front end (src/redis; design.md "RESP codec (groundwork)"). Two request
// forms are accepted, chosen per command by its first byte, as in redis-server's
// processInputBuffer:
//   - multibulk: "*<n>\r\n" then n times "$<len>\r\n<len bytes>\r\n" (binary-safe);
//   - inline: any other line, split into words with redis's sdssplitargs rules ("..." with
//     \n \r \t \b \a \xHH and \<c> escapes, '...' with only \' escaped; a closing quote must be
//     followed by a blank or the end of the line). Empty lines, "*0" and "*-1" are skipped.
//
// Why a hand-written incremental parser: a socket delivers arbitrary chunks, a client may
// pipeline many commands in one write, and a hostile client may announce a huge count or length
// and then stall. So bytes are buffered as they come, and an argument is materialised only when
// all its bytes are present. Memory is bounded by the bytes buffered plus the current command;
// a declared count or length reserves at most a small fixed amount up front (kMaxReserve*).
//
// Errors use redis-server's messages ("Protocol error: invalid bulk length", ...), so a front
// end can reply "-ERR <status().message()>\r\n" and close the connection, as redis does. After
// an error the parser is poisoned: Next() returns false and Feed() is ignored until Reset().
// Where redis is lax this parser is stricter: the CRLF after a bulk is checked (redis skips two
// bytes unseen), a count line must end in "\r\n", and an inline line longer than
// max_inline_bytes is an error even when its newline arrived in the same chunk.
//
// Example:
//   RespParser p;
//   p.Feed(chunk);
//   std::vector<std::string> args;
//   while (p.Next(&args)) Dispatch(args);
//   if (!p.status().ok()) { Send("-ERR " + p.status().message() + "\r\n"); Close(); }
//
// Thread-safety: not thread-safe; one parser per connection, used by one thread at a time.
// No exceptions are thrown for bad input (only std::bad_alloc can escape, as anywhere).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shardkv/status.h"

namespace shardkv::resp {

struct ParserLimits {
  // Most arguments in one multibulk command ("Protocol error: invalid multibulk length").
  int64_t max_multibulk_count = 1024 * 1024;
  // Longest bulk argument (redis's proto-max-bulk-len; "Protocol error: invalid bulk length").
  int64_t max_bulk_bytes = 512 * 1024 * 1024;
  // Longest inline command line, and longest "*<n>" / "$<len>" line (redis's
  // PROTO_INLINE_MAX_SIZE; "Protocol error: too big inline request").
  size_t max_inline_bytes = 64 * 1024;
};

// Caps on what a declared count or length reserves before its bytes arrive.
inline constexpr size_t kMaxReserveArgs = 1024;
inline constexpr size_t kMaxReserveBytes = 64 * 1024;

class RespParser {
 public:
  explicit RespParser(ParserLimits limits = {});
  RespParser(const RespParser&) = delete;
  RespParser& operator=(const RespParser&) = delete;

  // Appends `bytes` to the buffer; nothing is parsed until Next(). Ignored once poisoned.
  void Feed(std::string_view bytes);

  // If a complete command is buffered, replaces `*args` with its arguments (at least one) and
  // returns true. Returns false when more bytes are needed or on a protocol error; status()
  // tells which.
  bool Next(std::vector<std::string>* args);

  // OK, or the protocol error (InvalidArgument, redis's message). Sticky until Reset().
  const Status& status() const { return status_; }
  bool poisoned() const { return !status_.ok(); }

  // True if part of a command has been received: EOF now would truncate it.
  bool MidCommand() const;

  // Bytes received and not yet consumed by a returned or partly parsed command.
  size_t BufferedBytes() const { return buf_.size() - pos_; }

  const ParserLimits& limits() const { return limits_; }

  // Forgets buffered bytes, the partial command and any error (for a new connection).
  void Reset();

 private:
  enum class Step { kDone, kNeedMore, kError };

  Step ParseInline(std::vector<std::string>* args);
  Step ParseMultibulk(std::vector<std::string>* args);
  // Finds the "\r\n" ending a "*<n>" or "$<len>" line starting at pos_; on success sets *end
  // to the index of its '\r'. `too_big` is the message when no '\r' is within the limit.
  Step FindCountLine(size_t* end, const char* too_big, const char* invalid);
  Step Fail(std::string message);
  void Compact();

  const ParserLimits limits_;
  std::string buf_;
  size_t pos_ = 0;  // first unconsumed byte of buf_
  // Bytes after pos_ already searched in vain for the end of the current line, so a line fed
  // a byte at a time is scanned once, not once per byte.
  size_t scanned_ = 0;

  // The multibulk command being read: arguments still expected (0 = between commands), the
  // length of the next bulk (-1 = its "$<len>" line is not read yet), and the arguments so far.
  int64_t multibulk_left_ = 0;
  int64_t bulk_len_ = -1;
  std::vector<std::string> args_;

  Status status_;
};

// Splits an inline command line the way redis's sdssplitargs does (see the file comment). A
// NUL byte ends the line, as it does for sdssplitargs. Returns false on unbalanced quotes or a
// closing quote followed by a non-blank. Exposed for tests.
bool SplitInlineArgs(std::string_view line, std::vector<std::string>* args);

}  // namespace shardkv::resp
