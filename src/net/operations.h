// ClientOperations: the client data operations as typed calls inside one process (design.md
// "Operation table"). The node's KvService implements them; the Redis front end calls them. A
// native request (net::Request, decoded from a frame) and a Redis command reach the same
// handlers through the same guards: no request is encoded, decoded or wrapped in a
// net::Request/net::Response on the Redis path, and a handler's answer is a typed StatusOr.
//
// Each call takes its request by value (callers move it in) and answers through `done` exactly
// once, from any thread, possibly before the call returns. An error (a guard's refusal, a failed
// quorum) is the StatusOr's status, with its reason; per-key failures of a batch stay in its
// results, as on the wire.
//
// Thread-safety: implementations are thread-safe.
#pragma once

#include <functional>

#include "net/messages.h"
#include "shardkv/status.h"

namespace shardkv::net {

template <typename T>
using OpDone = std::function<void(StatusOr<T>)>;

// What a native request's header would say about a call made in this process. Only the
// consistency: an in-process caller has no map epoch, cluster id, client timestamp or deadline
// of its own, so the guards that read those find nothing to check (as for a native request that
// leaves them 0).
struct OpOptions {
  Consistency consistency = Consistency::kDefault;
};

class ClientOperations {
 public:
  virtual ~ClientOperations() = default;

  virtual void Get(OpOptions options, GetRequest request, OpDone<GetResponse> done) = 0;
  virtual void Put(OpOptions options, PutRequest request, OpDone<PutResponse> done) = 0;
  virtual void Delete(OpOptions options, DeleteRequest request, OpDone<DeleteResponse> done) = 0;
  virtual void MultiGet(OpOptions options, MultiGetRequest request,
                        OpDone<MultiGetResponse> done) = 0;
  virtual void MultiPut(OpOptions options, MultiPutRequest request,
                        OpDone<MultiPutResponse> done) = 0;
  // Sets (0: clears) a live key's expiry; NotFound if the key is missing. Answers the write's
  // timestamp, as the wire's expire reply (a PutResponse) does.
  virtual void Expire(OpOptions options, ExpireRequest request, OpDone<PutResponse> done) = 0;
  virtual void Scan(OpOptions options, ScanRequest request, OpDone<ScanResponse> done) = 0;
  // Adds request.delta to a counter (INCRBY; design.md "Counters"): the value after it.
  virtual void Incr(OpOptions options, IncrRequest request, OpDone<IncrResponse> done) = 0;
  // Sets or deletes fields of a hash (HSET, HSETNX, HDEL; design.md "Hashes"); FailedPrecondition
  // with reason kWrongType when the key holds a string.
  virtual void HashWrite(OpOptions options, HashWriteRequest request,
                         OpDone<HashWriteResponse> done) = 0;
  // The whole hash (found = false when the key is missing); kWrongType for a string.
  virtual void HashRead(OpOptions options, HashReadRequest request,
                        OpDone<HashReadResponse> done) = 0;
  // Adds or removes members of a set (SADD, SREM; design.md "Sets"); kWrongType when the key
  // holds another kind of value.
  virtual void SetWrite(OpOptions options, SetWriteRequest request,
                        OpDone<SetWriteResponse> done) = 0;
  // The whole set (found = false when the key is missing); kWrongType for another kind.
  virtual void SetRead(OpOptions options, SetReadRequest request, OpDone<SetReadResponse> done) = 0;
};

}  // namespace shardkv::net
