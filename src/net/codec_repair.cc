// Encoding and decoding of the anti-entropy ops (design.md "Anti-entropy"): tree queries, pushed
// entries and the repair command, requests and replies.
#include "net/codec_repair.h"

#include <capnp/message.h>

#include <string>
#include <utility>
#include <vector>

#include "net/codec_internal.h"

namespace shardkv::net::codec_internal {
namespace {

void FillSpans(const std::vector<AeSpan>& spans, capnp::List<wire::AeSpan>::Builder list) {
  for (unsigned i = 0; i < spans.size(); ++i) {
    list[i].setFirst(spans[i].first);
    list[i].setLast(spans[i].last);
  }
}

}  // namespace

void FillAntiEntropy(const AntiEntropyRequest& r, wire::AntiEntropyRequest::Builder b) {
  std::visit(Overloaded{
                 [&](const TreeQuery& q) {
                   auto out = b.initTree();
                   out.setSession(q.session);
                   out.setFirst(q.first);
                   out.setLast(q.last);
                   FillSpans(q.spans, out.initSpans(static_cast<unsigned>(q.spans.size())));
                   out.setRelease(q.release);
                   out.setRepairedMs(q.repaired_ms);
                   if (!q.replicas.empty()) {
                     auto ids = out.initReplicas(static_cast<unsigned>(q.replicas.size()));
                     for (unsigned i = 0; i < q.replicas.size(); ++i) ids.set(i, q.replicas[i]);
                   }
                 },
                 [&](const ApplyEntries& a) {
                   auto list = b.initApply(static_cast<unsigned>(a.entries.size()));
                   for (unsigned i = 0; i < a.entries.size(); ++i) {
                     const RepairEntry& e = a.entries[i];
                     auto o = list[i];
                     o.setToken(e.token);
                     o.setKey(AsData(e.key));
                     o.setTs(e.ts);
                     o.setNodeId(e.node_id);
                     o.setTombstone(e.tombstone);
                     if (!e.value.empty()) o.setValue(AsData(e.value));
                     o.setExpExplicit(e.expiry.explicit_expiry);
                     o.setExpValueAbsent(e.expiry.value_absent);
                     o.setExpTs(e.expiry.ts);
                     o.setExpNodeId(e.expiry.node_id);
                     o.setExpiresAtMs(e.expiry.expires_at_ms);
                     if (!e.expiry.counter.empty()) {
                       FillCounter(e.expiry.counter,
                                   o.initCounter(static_cast<unsigned>(e.expiry.counter.size())));
                     }
                     if (!e.expiry.hash.empty()) {
                       FillHash(e.expiry.hash,
                                o.initHash(static_cast<unsigned>(e.expiry.hash.size())));
                     }
                     if (!e.expiry.set.empty()) {
                       FillSet(e.expiry.set, o.initSet(static_cast<unsigned>(e.expiry.set.size())));
                     }
                   }
                 },
                 [&](const RepairCommand& c) {
                   auto out = b.initRepair();
                   out.setAll(c.all);
                   out.setFrom(c.from);
                   out.setFirst(c.first);
                   out.setLast(c.last);
                   out.setBudgetMs(c.budget_ms);
                 },
             },
             r.op);
}

StatusOr<AntiEntropyRequest> ReadAntiEntropy(wire::AntiEntropyRequest::Reader r) {
  AntiEntropyRequest out;
  switch (r.which()) {
    case wire::AntiEntropyRequest::TREE: {
      auto q = r.getTree();
      TreeQuery t;
      t.session = q.getSession();
      t.first = q.getFirst();
      t.last = q.getLast();
      for (auto s : q.getSpans()) t.spans.push_back({s.getFirst(), s.getLast()});
      t.release = q.getRelease();
      t.repaired_ms = q.getRepairedMs();
      for (uint32_t id : q.getReplicas()) t.replicas.push_back(id);
      out.op = std::move(t);
      break;
    }
    case wire::AntiEntropyRequest::APPLY: {
      ApplyEntries a;
      for (auto e : r.getApply()) {
        a.entries.push_back(RepairEntry{
            e.getToken(), ToString(e.getKey()), e.getTs(), e.getNodeId(), e.getTombstone(),
            ToString(e.getValue()),
            ExpiryRegister{e.getExpExplicit(), e.getExpValueAbsent(), e.getExpTs(),
                           e.getExpNodeId(), e.getExpiresAtMs(), ReadCounter(e.getCounter()),
                           ReadHash(e.getHash()), ReadSet(e.getSet())}});
      }
      out.op = std::move(a);
      break;
    }
    case wire::AntiEntropyRequest::REPAIR: {
      auto c = r.getRepair();
      out.op = RepairCommand{c.getAll(), c.getFrom(), c.getFirst(), c.getLast(), c.getBudgetMs()};
      break;
    }
    default:
      return Status::NotSupported("unknown anti-entropy op " +
                                  std::to_string(static_cast<int>(r.which())));
  }
  return out;
}

void FillAntiEntropy(const AntiEntropyResponse& r, wire::AntiEntropyReply::Builder b) {
  std::visit(Overloaded{
                 [&](const TreeReply& t) {
                   auto list = b.initTree(static_cast<unsigned>(t.nodes.size()));
                   for (unsigned i = 0; i < t.nodes.size(); ++i) {
                     list[i].setHash(t.nodes[i].hash);
                     list[i].setCount(t.nodes[i].count);
                   }
                 },
                 [&](const ApplyCounts& a) {
                   auto out = b.initApply();
                   out.setApplied(a.applied);
                   out.setSuperseded(a.superseded);
                   out.setDuplicate(a.duplicate);
                 },
                 [&](const RepairReport& p) {
                   auto out = b.initRepair();
                   out.setRangesCompared(p.ranges_compared);
                   out.setRangesDiffered(p.ranges_differed);
                   out.setRangesSkipped(p.ranges_skipped);
                   out.setRangesFailed(p.ranges_failed);
                   out.setLeavesDiffered(p.leaves_differed);
                   out.setKeysFetched(p.keys_fetched);
                   out.setBytesFetched(p.bytes_fetched);
                   out.setTreeBytes(p.tree_bytes);
                   auto streamed = out.initStreamed(static_cast<unsigned>(p.streamed.size()));
                   for (unsigned i = 0; i < p.streamed.size(); ++i) {
                     streamed[i].setNodeId(p.streamed[i].node_id);
                     streamed[i].setKeys(p.streamed[i].keys);
                     streamed[i].setBytes(p.streamed[i].bytes);
                   }
                   auto failures = out.initFailures(static_cast<unsigned>(p.failures.size()));
                   for (unsigned i = 0; i < p.failures.size(); ++i) {
                     failures.set(i, AsText(p.failures[i]));
                   }
                   out.setNext(p.next);
                   out.setDone(p.done);
                   out.setRangesTotal(p.ranges_total);
                 },
             },
             r.reply);
}

StatusOr<AntiEntropyResponse> ReadAntiEntropy(wire::AntiEntropyReply::Reader r) {
  AntiEntropyResponse out;
  switch (r.which()) {
    case wire::AntiEntropyReply::TREE: {
      TreeReply t;
      for (auto n : r.getTree()) t.nodes.push_back({n.getHash(), n.getCount()});
      out.reply = std::move(t);
      break;
    }
    case wire::AntiEntropyReply::APPLY: {
      auto a = r.getApply();
      out.reply = ApplyCounts{a.getApplied(), a.getSuperseded(), a.getDuplicate()};
      break;
    }
    case wire::AntiEntropyReply::REPAIR: {
      auto p = r.getRepair();
      RepairReport rep;
      rep.ranges_compared = p.getRangesCompared();
      rep.ranges_differed = p.getRangesDiffered();
      rep.ranges_skipped = p.getRangesSkipped();
      rep.ranges_failed = p.getRangesFailed();
      rep.leaves_differed = p.getLeavesDiffered();
      rep.keys_fetched = p.getKeysFetched();
      rep.bytes_fetched = p.getBytesFetched();
      rep.tree_bytes = p.getTreeBytes();
      for (auto s : p.getStreamed()) {
        rep.streamed.push_back({s.getNodeId(), s.getKeys(), s.getBytes()});
      }
      for (auto f : p.getFailures()) rep.failures.push_back(ToString(f));
      rep.next = p.getNext();
      rep.done = p.getDone();
      rep.ranges_total = p.getRangesTotal();
      out.reply = std::move(rep);
      break;
    }
    default:
      return Status::NotSupported("unknown anti-entropy reply " +
                                  std::to_string(static_cast<int>(r.which())));
  }
  return out;
}

}  // namespace shardkv::net::codec_internal
