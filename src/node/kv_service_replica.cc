// KvService's node-to-node operations: replica reads and writes (fenced by epoch) and a
// replica's range of a scan.
#include <utility>
#include <vector>

#include "cluster/wire_envelope.h"
#include "node/kv_service.h"
#include "node/kv_service_internal.h"

namespace shardkv::node {

using internal::Error;

Status KvService::CheckFence(const ClusterMap& map, uint64_t sender_epoch, uint64_t token) const {
  // Fencing (design.md "Fencing"): a sender behind our epoch may only touch tokens we still hold,
  // so a node paused or partitioned through a change cannot write into ranges that have moved.
  if (sender_epoch >= map.epoch()) return Status::OK();
  if (map.Holds(d_.self_id, token)) return Status::OK();
  return Status::StaleEpoch("node " + std::to_string(d_.self_id) +
                            " does not hold this token at epoch " + std::to_string(map.epoch()));
}

net::ResponseBody KvService::ReplicaWrite(const ClusterMap& map, uint64_t sender_epoch,
                                          const net::ReplicaWriteRequest& r) {
  if (Status s = CheckFence(map, sender_epoch, r.token); !s.ok()) return Error(s);
  auto written = d_.storage->Write(
      r.token, r.key, cluster::EnvelopeFromWire(r.ts, r.node_id, r.tombstone, r.value, r.expiry));
  if (!written.ok()) return Error(written.status());
  // A superseded write's reply needs no extra clock move for re-stamping: every stored version
  // moved this clock when it was stored (Storage::Write), so the reply's ts already covers it.
  return net::ReplicaWriteResponse{static_cast<uint8_t>(written->outcome)};
}

net::ResponseBody KvService::ReplicaWriteBatch(const ClusterMap& map, uint64_t sender_epoch,
                                               const net::ReplicaWriteBatchRequest& r) {
  // Each write is fenced on its own token, as a replicaWrite would be; the rest go to storage in
  // one batch (one WAL append), each answered as its own Write would have been.
  net::ReplicaWriteBatchResponse out;
  out.results.resize(r.writes.size());
  std::vector<storage::RangeEntry> entries;
  std::vector<size_t> at;
  entries.reserve(r.writes.size());
  at.reserve(r.writes.size());
  for (size_t i = 0; i < r.writes.size(); ++i) {
    const net::ReplicaWriteRequest& w = r.writes[i];
    if (Status s = CheckFence(map, sender_epoch, w.token); !s.ok()) {
      out.results[i].status = std::move(s);
      continue;
    }
    entries.push_back(storage::RangeEntry{
        w.token, w.key,
        cluster::EnvelopeFromWire(w.ts, w.node_id, w.tombstone, w.value, w.expiry)});
    at.push_back(i);
  }
  std::vector<StatusOr<storage::WriteResult>> written = d_.storage->WriteMany(entries);
  for (size_t j = 0; j < written.size(); ++j) {
    net::ReplicaWriteResult& result = out.results[at[j]];
    if (written[j].ok()) {
      result.outcome = static_cast<uint8_t>(written[j]->outcome);
    } else {
      result.status = written[j].status();
    }
  }
  return out;
}

net::ResponseBody KvService::ReplicaRead(const ClusterMap& map, uint64_t sender_epoch,
                                         const net::ReplicaReadRequest& r) {
  if (Status s = CheckFence(map, sender_epoch, r.token); !s.ok()) return Error(s);
  // Its answer could carry a value whose delete the other replicas already purged.
  if (d_.repair != nullptr) {
    if (Status s = d_.repair->Refusal("replica reads"); !s.ok()) return Error(s);
  }
  auto env = d_.storage->GetEnvelope(r.token, r.key);
  if (env.ok()) {
    net::ReplicaReadResponse read;
    read.found = true;
    read.ts = env->timestamp;
    read.node_id = env->node_id;
    read.tombstone = env->tombstone;
    read.value = std::move(env->value);
    read.expiry = cluster::ExpiryToWire(*env);
    return read;
  }
  if (env.status().IsNotFound()) return net::ReplicaReadResponse{};
  return Error(env.status());
}

net::ResponseBody KvService::ReplicaScan(const ClusterMap& map, uint64_t sender_epoch,
                                         const net::ReplicaScanRequest& r) {
  // Stricter than the point ops' fence: the sender chose the range under its map, and under a
  // newer one this node may hold only part of it. The refusal carries the newer map, and the
  // scan coordinator reads the range again under it.
  if (sender_epoch < map.epoch()) {
    return Error(Status::StaleEpoch("node " + std::to_string(d_.self_id) + " is at epoch " +
                                    std::to_string(map.epoch()) + ", the scan at " +
                                    std::to_string(sender_epoch)));
  }
  if (r.match.size() > limits_.max_key_bytes) {
    return Error(Status::InvalidArgument("scan pattern too long"));
  }
  if (d_.repair != nullptr) {
    if (Status s = d_.repair->Refusal("replica reads"); !s.ok()) return Error(s);
  }
  auto out = cluster::ReadReplicaRange(d_.storage, r);
  if (!out.ok()) return Error(out.status());
  return std::move(out).value();
}

}  // namespace shardkv::node
