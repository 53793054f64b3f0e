// What the hash and set writes (kv_service_hash.cc, kv_service_set.cc) share: the record they
// start from and the merge write that ends them.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "cluster/coordinator.h"
#include "net/operations.h"
#include "storage/value_envelope.h"

namespace shardkv::node {

// The record a hash or set write starts from: its entries alone (no value, no opinion on the
// expiry). For an add (`adds`) over a record that expired (`read`, at wall-clock `now_ms`), the
// tombstone the expiry amounts to instead (Envelope::ExpiryDeath, as an increment writes), with
// *ts raised above it, so that the new entries are not under the old expiry.
inline storage::Envelope CollectionBase(const StatusOr<storage::Envelope>& read, uint64_t now_ms,
                                        bool adds, uint64_t* ts) {
  if (adds && read.ok() && read->ExpiredAt(now_ms)) {
    const storage::Version death = read->ExpiryDeath();
    if (*ts <= death.timestamp) *ts = death.timestamp + 1;
    return storage::Envelope::Plain(death, true, "");
  }
  storage::Envelope record;
  record.value_absent = true;
  record.SetExpiry(storage::Version{}, 0);
  return record;
}

// Writes `record` as a merge (never re-stamped) at consistency `c` and answers Response{changed};
// a record with nothing to write answers at once.
template <typename Response>
void WriteCollection(const std::shared_ptr<cluster::Coordinator>& coordinator,
                     const std::shared_ptr<const ClusterMap>& map, uint64_t token, std::string key,
                     storage::Envelope record, net::Consistency c, uint32_t changed,
                     net::OpDone<Response> done) {
  if (record.hash.empty() && record.set.empty() && !record.tombstone) {
    return done(Response{changed});
  }
  cluster::WriteSpec spec;
  spec.kind = cluster::WriteSpec::Kind::kMerge;
  spec.record = std::move(record);
  coordinator->Write(map, token, std::move(key), std::move(spec), c,
                     [changed, done = std::move(done)](StatusOr<uint64_t> written) {
                       if (!written.ok()) return done(written.status());
                       done(Response{changed});
                     });
}

}  // namespace shardkv::node
