// Encoding and decoding of requests: the header every request carries and each op's body. The
// rebalancer's ops are in codec_stream.cc and codec_admin.cc; framing, limits and exception
// handling are in codec.cc, which calls these.
#include <capnp/message.h>

#include <string>
#include <utility>
#include <vector>

#include "net/codec_internal.h"
#include "net/codec_repair.h"

namespace shardkv::net::codec_internal {
namespace {

wire::Consistency ToWire(Consistency c) {
  switch (c) {
    case Consistency::kOne:
      return wire::Consistency::ONE;
    case Consistency::kQuorum:
      return wire::Consistency::QUORUM;
    case Consistency::kAll:
      return wire::Consistency::ALL;
    case Consistency::kDefault:
      break;
  }
  return wire::Consistency::DEFAULT;
}

}  // namespace

void FillRequest(const Request& r, wire::Request::Builder b) {
  b.setId(r.id);
  b.setEpoch(r.epoch);
  b.setClusterId(r.cluster_id);
  b.setClientTs(r.client_ts);
  b.setDeadlineMs(r.deadline_ms);
  b.setForwarded(r.forwarded);
  b.setConsistency(ToWire(r.consistency));
  auto body = b.getBody();
  std::visit(Overloaded{
                 [&](const PingRequest&) { body.setPing(); },
                 [&](const GetRequest& g) {
                   auto k = body.initGet();
                   k.setToken(g.token);
                   k.setKey(AsData(g.key));
                 },
                 [&](const PutRequest& p) {
                   auto kv = body.initPut();
                   kv.setToken(p.token);
                   kv.setKey(AsData(p.key));
                   kv.setValue(AsData(p.value));
                   kv.setTtlMs(p.ttl_ms);
                   kv.setKeepTtl(p.keep_ttl);
                 },
                 [&](const DeleteRequest& d) {
                   auto k = body.initDelete();
                   k.setToken(d.token);
                   k.setKey(AsData(d.key));
                 },
                 [&](const MultiGetRequest& m) {
                   auto list = body.initMultiGet(static_cast<unsigned>(m.keys.size()));
                   for (unsigned i = 0; i < m.keys.size(); ++i) {
                     list[i].setToken(m.keys[i].token);
                     list[i].setKey(AsData(m.keys[i].key));
                   }
                 },
                 [&](const MultiPutRequest& m) {
                   auto list = body.initMultiPut(static_cast<unsigned>(m.items.size()));
                   for (unsigned i = 0; i < m.items.size(); ++i) {
                     list[i].setToken(m.items[i].token);
                     list[i].setKey(AsData(m.items[i].key));
                     list[i].setValue(AsData(m.items[i].value));
                     list[i].setTtlMs(m.items[i].ttl_ms);
                     list[i].setKeepTtl(m.items[i].keep_ttl);
                   }
                 },
                 [&](const StatsRequest&) { body.setStats(); },
                 [&](const GetClusterMapRequest&) { body.setGetClusterMap(); },
                 [&](const ReplicaWriteRequest& w) { FillRecord(w, body.initReplicaWrite()); },
                 [&](const ReplicaReadRequest& rr) {
                   auto k = body.initReplicaRead();
                   k.setToken(rr.token);
                   k.setKey(AsData(rr.key));
                 },
                 [&](const InstallMapRequest& m) {
                   auto out = body.initInstallMap();
                   out.setMap(AsData(m.map));
                   out.setExpectedEpoch(m.expected_epoch);
                   out.setAdopt(m.adopt);
                   out.setCommitted(m.committed);
                 },
                 [&](const StreamScanRequest& s) { FillStreamScan(s, body.initStreamScan()); },
                 [&](const StreamRangeRequest& s) { FillStreamRange(s, body.initStreamRange()); },
                 [&](const CountRangesRequest& c) {
                   FillCountRanges(c, body.initCountRanges(static_cast<unsigned>(c.ranges.size())));
                 },
                 [&](const AdminRequest& a) { FillChangeCommand(a, body.initChange()); },
                 [&](const ExpireRequest& e) {
                   auto out = body.initExpire();
                   out.setToken(e.token);
                   out.setKey(AsData(e.key));
                   out.setExpiresAtMs(e.expires_at_ms);
                 },
                 [&](const HashWriteRequest& h) {
                   auto out = body.initHashWrite();
                   out.setToken(h.token);
                   out.setKey(AsData(h.key));
                   auto set = out.initSet(static_cast<unsigned>(h.set.size()));
                   for (unsigned i = 0; i < h.set.size(); ++i) {
                     set[i].setName(AsData(h.set[i].name));
                     set[i].setValue(AsData(h.set[i].value));
                   }
                   auto remove = out.initRemove(static_cast<unsigned>(h.remove.size()));
                   for (unsigned i = 0; i < h.remove.size(); ++i)
                     remove.set(i, AsData(h.remove[i]));
                   out.setOnlyNew(h.only_new);
                 },
                 [&](const HashReadRequest& h) {
                   auto k = body.initHashRead();
                   k.setToken(h.token);
                   k.setKey(AsData(h.key));
                 },
                 [&](const SetWriteRequest& s) {
                   auto out = body.initSetWrite();
                   out.setToken(s.token);
                   out.setKey(AsData(s.key));
                   auto add = out.initAdd(static_cast<unsigned>(s.add.size()));
                   for (unsigned i = 0; i < s.add.size(); ++i) add.set(i, AsData(s.add[i]));
                   auto remove = out.initRemove(static_cast<unsigned>(s.remove.size()));
                   for (unsigned i = 0; i < s.remove.size(); ++i)
                     remove.set(i, AsData(s.remove[i]));
                 },
                 [&](const SetReadRequest& s) {
                   auto k = body.initSetRead();
                   k.setToken(s.token);
                   k.setKey(AsData(s.key));
                 },
                 [&](const IncrRequest& e) {
                   auto out = body.initIncr();
                   out.setToken(e.token);
                   out.setKey(AsData(e.key));
                   out.setDelta(e.delta);
                 },
                 [&](const ScanRequest& s) { FillScan(s, body.initScan()); },
                 [&](const ReplicaScanRequest& s) { FillReplicaScan(s, body.initReplicaScan()); },
                 [&](const RaftMessageRequest& m) { body.setRaftMessage(AsData(m.data)); },
                 [&](const AntiEntropyRequest& a) { FillAntiEntropy(a, body.initAntiEntropy()); },
                 [&](const ReplicaWriteBatchRequest& batch) {
                   auto list =
                       body.initReplicaWriteBatch(static_cast<unsigned>(batch.writes.size()));
                   for (unsigned i = 0; i < batch.writes.size(); ++i) {
                     FillRecord(batch.writes[i], list[i]);
                   }
                 },
             },
             r.body);
}

StatusOr<Request> ReadRequest(wire::Request::Reader root, uint64_t* request_id) {
  Request r;
  r.id = root.getId();
  if (request_id != nullptr) *request_id = r.id;
  r.epoch = root.getEpoch();
  r.cluster_id = root.getClusterId();
  r.client_ts = root.getClientTs();
  r.deadline_ms = root.getDeadlineMs();
  r.forwarded = root.getForwarded();
  switch (root.getConsistency()) {
    case wire::Consistency::DEFAULT:
      r.consistency = Consistency::kDefault;
      break;
    case wire::Consistency::ONE:
      r.consistency = Consistency::kOne;
      break;
    case wire::Consistency::QUORUM:
      r.consistency = Consistency::kQuorum;
      break;
    case wire::Consistency::ALL:
      r.consistency = Consistency::kAll;
      break;
    default:
      return Status::NotSupported("unknown consistency level " +
                                  std::to_string(static_cast<int>(root.getConsistency())));
  }
  auto body = root.getBody();
  switch (body.which()) {
    case wire::Request::Body::PING:
      r.body = PingRequest{};
      break;
    case wire::Request::Body::GET: {
      auto k = body.getGet();
      r.body = GetRequest{k.getToken(), ToString(k.getKey())};
      break;
    }
    case wire::Request::Body::PUT: {
      auto kv = body.getPut();
      r.body = PutRequest{kv.getToken(), ToString(kv.getKey()), ToString(kv.getValue()),
                          kv.getTtlMs(), kv.getKeepTtl()};
      break;
    }
    case wire::Request::Body::DELETE: {
      auto k = body.getDelete();
      r.body = DeleteRequest{k.getToken(), ToString(k.getKey())};
      break;
    }
    case wire::Request::Body::MULTI_GET: {
      MultiGetRequest m;
      auto list = body.getMultiGet();
      m.keys.reserve(list.size());
      for (auto k : list) m.keys.push_back(GetRequest{k.getToken(), ToString(k.getKey())});
      r.body = std::move(m);
      break;
    }
    case wire::Request::Body::MULTI_PUT: {
      MultiPutRequest m;
      auto list = body.getMultiPut();
      m.items.reserve(list.size());
      for (auto kv : list) {
        m.items.push_back(PutRequest{kv.getToken(), ToString(kv.getKey()), ToString(kv.getValue()),
                                     kv.getTtlMs(), kv.getKeepTtl()});
      }
      r.body = std::move(m);
      break;
    }
    case wire::Request::Body::STATS:
      r.body = StatsRequest{};
      break;
    case wire::Request::Body::GET_CLUSTER_MAP:
      r.body = GetClusterMapRequest{};
      break;
    case wire::Request::Body::REPLICA_WRITE: {
      ReplicaWriteRequest w;
      ReadRecord(body.getReplicaWrite(), &w);
      r.body = std::move(w);
      break;
    }
    case wire::Request::Body::REPLICA_WRITE_BATCH: {
      ReplicaWriteBatchRequest batch;
      auto list = body.getReplicaWriteBatch();
      batch.writes.resize(list.size());
      for (unsigned i = 0; i < list.size(); ++i) ReadRecord(list[i], &batch.writes[i]);
      r.body = std::move(batch);
      break;
    }
    case wire::Request::Body::EXPIRE: {
      auto e = body.getExpire();
      r.body = ExpireRequest{e.getToken(), ToString(e.getKey()), e.getExpiresAtMs()};
      break;
    }
    case wire::Request::Body::HASH_WRITE: {
      auto h = body.getHashWrite();
      HashWriteRequest out{h.getToken(), ToString(h.getKey()), {}, {}, h.getOnlyNew()};
      out.set.reserve(h.getSet().size());
      for (auto f : h.getSet()) {
        out.set.push_back(HashFieldValue{ToString(f.getName()), ToString(f.getValue())});
      }
      out.remove.reserve(h.getRemove().size());
      for (auto name : h.getRemove()) out.remove.push_back(ToString(name));
      r.body = std::move(out);
      break;
    }
    case wire::Request::Body::HASH_READ: {
      auto k = body.getHashRead();
      r.body = HashReadRequest{k.getToken(), ToString(k.getKey())};
      break;
    }
    case wire::Request::Body::SET_WRITE: {
      auto s = body.getSetWrite();
      SetWriteRequest out{s.getToken(), ToString(s.getKey()), {}, {}};
      out.add.reserve(s.getAdd().size());
      for (auto m : s.getAdd()) out.add.push_back(ToString(m));
      out.remove.reserve(s.getRemove().size());
      for (auto m : s.getRemove()) out.remove.push_back(ToString(m));
      r.body = std::move(out);
      break;
    }
    case wire::Request::Body::SET_READ: {
      auto k = body.getSetRead();
      r.body = SetReadRequest{k.getToken(), ToString(k.getKey())};
      break;
    }
    case wire::Request::Body::INCR: {
      auto e = body.getIncr();
      r.body = IncrRequest{e.getToken(), ToString(e.getKey()), e.getDelta()};
      break;
    }
    case wire::Request::Body::REPLICA_READ: {
      auto k = body.getReplicaRead();
      r.body = ReplicaReadRequest{k.getToken(), ToString(k.getKey())};
      break;
    }
    case wire::Request::Body::INSTALL_MAP: {
      auto m = body.getInstallMap();
      r.body = InstallMapRequest{ToString(m.getMap()), m.getExpectedEpoch(), m.getAdopt(),
                                 m.getCommitted()};
      break;
    }
    case wire::Request::Body::STREAM_SCAN:
      r.body = ReadStreamScan(body.getStreamScan());
      break;
    case wire::Request::Body::STREAM_RANGE:
      r.body = ReadStreamRange(body.getStreamRange());
      break;
    case wire::Request::Body::COUNT_RANGES:
      r.body = ReadCountRanges(body.getCountRanges());
      break;
    case wire::Request::Body::ADMIN:
      return RefuseTextAdmin(body.getAdmin());
    case wire::Request::Body::CHANGE: {
      auto command = ReadChangeCommand(body.getChange());
      if (!command.ok()) return command.status();
      r.body = std::move(*command);
      break;
    }
    case wire::Request::Body::SCAN:
      r.body = ReadScan(body.getScan());
      break;
    case wire::Request::Body::REPLICA_SCAN:
      r.body = ReadReplicaScan(body.getReplicaScan());
      break;
    case wire::Request::Body::RAFT_MESSAGE:
      r.body = RaftMessageRequest{ToString(body.getRaftMessage())};
      break;
    case wire::Request::Body::ANTI_ENTROPY: {
      auto ae = ReadAntiEntropy(body.getAntiEntropy());
      if (!ae.ok()) return ae.status();
      r.body = std::move(*ae);
      break;
    }
    default:
      return Status::NotSupported("unknown request op " +
                                  std::to_string(static_cast<int>(body.which())));
  }
  return r;
}

}  // namespace shardkv::net::codec_internal
