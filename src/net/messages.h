// Plain C++ mirrors of the wire schema (shardkv.capnp), so that nothing outside src/net includes
// a Cap'n Proto header. codec.h converts between these structs and framed bytes.
//
// A Request is one operation plus the header every request carries: an id for pipelining, the
// sender's cluster map epoch, the cluster id, the highest HLC timestamp the client has seen and
// a consistency level. A Response echoes the id and carries either the op's result or an
// ErrorResponse (a shardkv::Status code and message).
//
// Byte strings (keys, values, maps) are std::string holding arbitrary bytes.
//
// Adding an op: add the capnp union member, a struct here, an alternative at the END of
// RequestBody / ResponseBody (the variant index is not on the wire, but keeping the order stable
// keeps switch statements and logs readable), and the two cases in codec.cc.
//
// Thread-safety: value types; distinct objects may be used from distinct threads.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "net/repair_messages.h"
#include "net/versioned_record.h"
#include "shardkv/change.h"
#include "shardkv/options.h"
#include "shardkv/status.h"

namespace shardkv::net {

// What a found key holds, for the commands of one type (Redis's TYPE and WRONGTYPE, SCAN's TYPE).
enum class ValueKind : uint8_t { kString = 0, kHash = 1, kSet = 2 };

// The public per-request consistency (shardkv/options.h), carried as is.
using Consistency = ::shardkv::Consistency;

// ---- Requests ----

struct PingRequest {};

struct GetRequest {
  uint64_t token = 0;  // the key's placement hash, computed by the sender
  std::string key;
};

struct PutRequest {
  uint64_t token = 0;
  std::string key;
  std::string value;
  uint64_t ttl_ms = 0;    // 0 = no expiry (and a plain put clears one)
  bool keep_ttl = false;  // write the value only, keeping the key's expiry
};

// Client: set or clear (expires_at_ms 0) a key's expiry; answered with a PutResponse.
struct ExpireRequest {
  uint64_t token = 0;
  std::string key;
  uint64_t expires_at_ms = 0;
};

// Client: add `delta` (negative: subtract) to the counter `key` (INCRBY, DECRBY; design.md
// "Counters"); answered with an IncrResponse, the counter's value after it.
struct IncrRequest {
  uint64_t token = 0;
  std::string key;
  int64_t delta = 0;
};

// Client: set (HSET, HSETNX with only_new) or delete (HDEL) fields of the hash `key` (design.md
// "Hashes"); answered with a HashWriteResponse. FailedPrecondition with reason kWrongType when
// the key holds a string.
struct HashFieldValue {
  std::string name;
  std::string value;
  friend bool operator==(const HashFieldValue&, const HashFieldValue&) = default;
};
struct HashWriteRequest {
  uint64_t token = 0;
  std::string key;
  std::vector<HashFieldValue> set;  // fields to set
  std::vector<std::string> remove;  // fields to delete (not together with `set`)
  bool only_new = false;            // HSETNX: set only fields the read does not show
};

// Client: the whole hash `key` (HGETALL; HGET, HMGET, HKEYS ... are cut from it).
struct HashReadRequest {
  uint64_t token = 0;
  std::string key;
};

// Client: add (SADD) or remove (SREM) members of the set `key` (design.md "Sets"); answered
// with a SetWriteResponse. FailedPrecondition with reason kWrongType when the key holds another
// kind of value.
struct SetWriteRequest {
  uint64_t token = 0;
  std::string key;
  std::vector<std::string> add;     // members to add
  std::vector<std::string> remove;  // members to remove (not together with `add`)
};

// Client: the whole set `key` (SMEMBERS; SISMEMBER, SCARD ... are cut from it).
struct SetReadRequest {
  uint64_t token = 0;
  std::string key;
};

struct DeleteRequest {
  uint64_t token = 0;
  std::string key;
};

struct MultiGetRequest {
  std::vector<GetRequest> keys;
};

struct MultiPutRequest {
  std::vector<PutRequest> items;
};

struct StatsRequest {};

struct GetClusterMapRequest {};

// Node to node: store this version of a key (LWW), as replica of the sender's write.
struct ReplicaWriteRequest : VersionedRecord {};

// A coordinator's replica writes to one replica, applied in one storage batch (node to node).
struct ReplicaWriteBatchRequest {
  std::vector<ReplicaWriteRequest> writes;
};

// Node to node: the stored version of a key, tombstones included.
struct ReplicaReadRequest {
  uint64_t token = 0;
  std::string key;
};

// Admin: install a cluster map (compare-and-set on expected_epoch, or adopt for formation).
struct InstallMapRequest {
  std::string map;
  uint64_t expected_epoch = 0;
  bool adopt = false;
  // The map was committed by consensus (design.md "Consensus"): install it if it is newer,
  // whatever the local epoch, then run the epoch barrier and acknowledge.
  bool committed = false;
};

// Node to node: one Raft message (consensus/raft_codec.h bytes, which name the sender); answered
// with a ping reply. Best effort: Raft resends what is lost.
struct RaftMessageRequest {
  std::string data;
};

struct TokenSpan {
  uint64_t first = 0;
  uint64_t last = 0;
};

// Node to node, during a membership change: the destination of a stream pulls one batch of a
// token range (inclusive) from a source, read through a source-side snapshot named stream_id.
struct StreamScanRequest {
  uint64_t stream_id = 0;
  uint64_t first = 0;
  uint64_t last = 0;
  std::string cursor;  // continue strictly after this (empty: from the start of the range)
  uint32_t max_entries = 0;
  uint64_t max_bytes = 0;
  // When non-empty, the scan covers these ranges in order instead of [first, last], starting in
  // ranges[range_index] strictly after cursor; one batch may span several of them, so a task of
  // many small ranges costs one round trip per batch, not one per range.
  std::vector<TokenSpan> ranges;
  uint32_t range_index = 0;
};

// Rebalancer driver to a stream's destination: run one stream task for up to slice_ms.
struct StreamRangeRequest {
  uint64_t change_id = 0;
  uint64_t task_id = 0;
  uint64_t first = 0;
  uint64_t last = 0;
  std::vector<uint32_t> source_ids;  // the preferred source first, then the other old replicas
  std::vector<std::string> source_addresses;  // same order
  uint32_t merge_count = 1;  // old replicas to merge from when the preferred one is unreachable
  uint64_t rate_bytes_per_s = 0;  // 0 = unthrottled
  uint32_t slice_ms = 1000;
  // When non-empty, the task's ranges in token order (first/last are then ignored).
  std::vector<TokenSpan> ranges;
};

// Rebalancer driver to a replica: exact counts of live keys, tombstones and bytes per range.
struct CountRangesRequest {
  std::vector<TokenSpan> ranges;
};

// Admin (src/admin) to a node: one typed change command for the rebalancer. Plan and begin
// carry the change and its stream limits; throttle carries the limits to change (nullopt keeps
// one). The answer is an AdminResponse with the node's ChangeReport.
struct PlanChangeCommand {
  ChangeRequest change;
  ChangeThrottle throttle;
};
struct BeginChangeCommand {
  ChangeRequest change;
  ChangeThrottle throttle;
};
struct ChangeStatusCommand {};
struct CancelChangeCommand {};
struct ResumeChangeCommand {};
struct ThrottleChangeCommand {
  std::optional<uint64_t> rate_bytes_per_s;
  std::optional<uint32_t> streams_per_node;
};
using ChangeCommand = std::variant<PlanChangeCommand, BeginChangeCommand, ChangeStatusCommand,
                                   CancelChangeCommand, ResumeChangeCommand, ThrottleChangeCommand>;
struct AdminRequest {
  ChangeCommand command;
  bool forwarded = false;  // sent on by a node that does not lead; never forwarded again
};
// "plan", "begin", "status", "cancel", "resume", "throttle" (for logs and errors).
std::string_view ChangeCommandName(const ChangeCommand& command);

// Client op: one batch of an unordered scan of the whole cluster (design.md "Scans"). `cursor`
// is a token: every key with a smaller token has been returned; 0 starts a scan. `count` is a
// hint (entries examined, as Redis's COUNT); `match` a Redis glob (empty: every key); with
// `typed`, only the keys holding `type` (Redis's SCAN ... TYPE).
struct ScanRequest {
  uint64_t cursor = 0;
  uint32_t count = 0;
  std::string match;
  bool typed = false;
  ValueKind type = ValueKind::kString;
};

// Node to node, for a scan: the versions one replica holds in [first, last] (inclusive), at
// most about max_entries examined (a batch always ends at a token boundary), matching `match`.
struct ReplicaScanRequest {
  uint64_t first = 0;
  uint64_t last = 0;
  uint32_t max_entries = 0;
  uint64_t max_bytes = 0;
  std::string match;
};

using RequestBody =
    std::variant<PingRequest, GetRequest, PutRequest, DeleteRequest, MultiGetRequest,
                 MultiPutRequest, StatsRequest, GetClusterMapRequest, ReplicaWriteRequest,
                 ReplicaReadRequest, InstallMapRequest, StreamScanRequest, StreamRangeRequest,
                 CountRangesRequest, AdminRequest, ExpireRequest, ScanRequest, ReplicaScanRequest,
                 RaftMessageRequest, AntiEntropyRequest, ReplicaWriteBatchRequest, IncrRequest,
                 HashWriteRequest, HashReadRequest, SetWriteRequest, SetReadRequest>;

struct Request {
  uint64_t id = 0;          // set by RpcClient; 0 is reserved for "unknown" in error replies
  uint64_t epoch = 0;       // the sender's cluster map epoch (0 = none yet)
  uint64_t cluster_id = 0;  // 0 = unknown
  uint64_t client_ts = 0;   // highest HLC timestamp the client has seen
  // Wall-clock ms after which the sender stops waiting (0 = none); see shardkv.capnp.
  uint64_t deadline_ms = 0;
  Consistency consistency = Consistency::kDefault;
  bool forwarded = false;  // sent on by a node with a skewed clock; never sent on again
  RequestBody body;
};

// ---- Responses ----

// A failed request. `code` is never kOk on the wire (the decoder maps it to kInternal).
struct ErrorResponse {
  Status::Code code = Status::Code::kInternal;
  std::string message;
  Status::Reason reason = Status::Reason::kNone;

  // The error that `s` is, reason included (an OK `s` becomes kInternal: an error was meant).
  static ErrorResponse Of(const Status& s) {
    return ErrorResponse{s.ok() ? Status::Code::kInternal : s.code(), s.message(), s.reason()};
  }
  Status ToStatus() const { return Status(code, reason, message); }
};

struct PingResponse {};

// A command on a key of the other kind: FailedPrecondition, reason kWrongType, with Redis's
// WRONGTYPE message (the node's hash and counter ops, the Redis front end and the client).
inline Status WrongTypeError() {
  return Status(Status::Code::kFailedPrecondition, Status::Reason::kWrongType,
                "Operation against a key holding the wrong kind of value");
}

struct GetResponse {
  bool found = false;
  std::string value;
  uint64_t ts = 0;                      // the version's HLC timestamp when found
  uint64_t expires_at_ms = 0;           // when found: Unix ms it expires at, 0 = no expiry
  ValueKind kind = ValueKind::kString;  // when found; a hash's or set's value is empty
};

struct PutResponse {
  uint64_t ts = 0;  // the write's HLC timestamp
};

struct DeleteResponse {
  uint64_t ts = 0;  // the tombstone's HLC timestamp
};

struct HashWriteResponse {
  uint32_t changed = 0;  // fields added (HSET, HSETNX) or removed (HDEL) as the read saw them
};

struct HashReadResponse {
  bool found = false;                  // a live hash
  std::vector<HashFieldValue> fields;  // by name
  uint64_t expires_at_ms = 0;          // the key's expiry, 0 = none
};

struct SetWriteResponse {
  uint32_t changed = 0;  // members added (SADD) or removed (SREM) as the read saw them
};

struct SetReadResponse {
  bool found = false;                // a live set
  std::vector<std::string> members;  // ascending
  uint64_t expires_at_ms = 0;        // the key's expiry, 0 = none
};

struct IncrResponse {
  int64_t value = 0;  // the counter's value after the increment, as the coordinator read it
};

// One key of a multi-key op. A non-OK `status` fails only that key.
struct ItemResult {
  Status status;
  bool found = false;  // multiGet only
  std::string value;   // multiGet only
  uint64_t ts = 0;
  ValueKind kind = ValueKind::kString;  // multiGet only, when found
};

struct MultiGetResponse {
  std::vector<ItemResult> results;  // one per requested key, same order
};

struct MultiPutResponse {
  std::vector<ItemResult> results;  // one per item, same order
};

struct StatsResponse {
  std::map<std::string, int64_t> counters;
  std::map<std::string, double> gauges;
  std::map<std::string, std::string> info;  // text stats (shardkv/stats.h SHARDKV_NODE_INFO)
};

struct GetClusterMapResponse {
  std::string map;  // the serialized cluster map (opaque to src/net)
};

struct ReplicaWriteResponse {
  uint8_t outcome = 0;  // storage WriteOutcome: 0 applied, 1 superseded, 2 duplicate
};

// One result per write of a ReplicaWriteBatchRequest, in its order.
struct ReplicaWriteResult {
  Status status;        // this write's own failure (fenced, refused by storage); OK otherwise
  uint8_t outcome = 0;  // as ReplicaWriteResponse::outcome, when status is OK
};
struct ReplicaWriteBatchResponse {
  std::vector<ReplicaWriteResult> results;
};

// The replica's version of the key asked for (token and key are not sent back: the asker has
// them).
struct ReplicaReadResponse : VersionedRecord {
  bool found = false;  // false: the replica has no version at all
};

struct InstallMapResponse {
  bool accepted = false;
  uint64_t epoch = 0;  // the responder's epoch after the call
};

struct StreamEntry : VersionedRecord {};

struct StreamScanResponse {
  std::vector<StreamEntry> entries;
  std::string cursor;             // pass back to continue
  bool done = false;              // the range is exhausted
  bool snapshot_renewed = false;  // the source took a new snapshot for this call
  uint32_t range_index = 0;       // with request.ranges: the range `cursor` belongs to
};

// Cumulative progress of the task (from its checkpoint), not just this slice.
struct StreamRangeResponse {
  bool done = false;
  uint64_t copies = 0;      // live keys streamed
  uint64_t tombstones = 0;  // tombstones streamed
  uint64_t bytes = 0;       // key + value bytes streamed
  bool resumed = false;     // this call continued from a checkpoint left by an earlier run
  uint32_t source_id = 0;   // the source used (0 when merging)
  uint32_t sources_merged = 0;
  uint64_t ranges_done = 0;  // of the task's ranges, those fully copied from the preferred source
  // Of `copies`, those whose version was written after the change began (joint writes that were
  // also streamed): why a change can move more copies than its plan counted.
  uint64_t copies_during_change = 0;
};

struct RangeCount {
  uint64_t live = 0;
  uint64_t tombstones = 0;
  uint64_t bytes = 0;
};

struct CountRangesResponse {
  std::vector<RangeCount> counts;  // one per requested range, same order
};

struct AdminResponse {
  ChangeReport report;
};

struct ScanResponse {
  std::vector<std::string> keys;
  uint64_t cursor = 0;  // pass back to continue; 0: the scan is complete
};

// One key's newest local version inside a replica scan batch: its version (for the merge of
// several replicas) and whether a read would hide it (a tombstone; later, an expired record).
struct ScanEntry {
  uint64_t token = 0;
  std::string key;
  uint64_t ts = 0;
  uint32_t node_id = 0;
  bool hidden = false;
  uint64_t expiry_ts = 0;  // the expiry register's version
  uint32_t expiry_node_id = 0;
  ValueKind kind = ValueKind::kString;  // what the key holds on this replica, when not hidden
};

struct ReplicaScanResponse {
  std::vector<ScanEntry> entries;  // token order; only the keys that match
  // Every key with a token below `next` in the request's range has been examined. Equal to
  // last + 1 (or done) once the range is exhausted.
  uint64_t next = 0;
  bool done = false;      // the range [first, last] is exhausted
  uint32_t examined = 0;  // entries read, matching or not (the work COUNT bounds)
};

using ResponseBody =
    std::variant<ErrorResponse, PingResponse, GetResponse, PutResponse, DeleteResponse,
                 MultiGetResponse, MultiPutResponse, StatsResponse, GetClusterMapResponse,
                 ReplicaWriteResponse, ReplicaReadResponse, InstallMapResponse, StreamScanResponse,
                 StreamRangeResponse, CountRangesResponse, AdminResponse, ScanResponse,
                 ReplicaScanResponse, AntiEntropyResponse, ReplicaWriteBatchResponse, IncrResponse,
                 HashWriteResponse, HashReadResponse, SetWriteResponse, SetReadResponse>;

// A failed request's response body (the rebalancer's and repair's services answer with it).
inline ResponseBody ErrorBody(const Status& s) { return ErrorResponse::Of(s); }

struct Response {
  uint64_t id = 0;     // the request's id; 0 if the request could not be parsed
  uint64_t epoch = 0;  // the responder's cluster map epoch
  uint64_t ts = 0;     // the responder's HLC timestamp
  // Non-empty when the request carried an older epoch: the responder's newer map, so the
  // sender can refresh without another round trip.
  std::string cluster_map;
  uint64_t wall_clock_ms = 0;  // the responder's wall clock as it answered (0: not said)
  ResponseBody body;

  bool ok() const { return !std::holds_alternative<ErrorResponse>(body); }
  // OK, or the carried error as a Status.
  Status status() const {
    if (const auto* e = std::get_if<ErrorResponse>(&body)) return e->ToStatus();
    return Status::OK();
  }
};

// An error Response for request `id`. REQUIRES: !status.ok().
inline Response MakeErrorResponse(uint64_t id, const Status& status) {
  Response r;
  r.id = id;
  r.body = ErrorResponse::Of(status);
  return r;
}

// Short op names for logs and stats ("get", "multiPut", ...).
std::string_view OpName(const RequestBody& body);
std::string_view OpName(const ResponseBody& body);

}  // namespace shardkv::net
