#include "rebalance/range_repair.h"

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <utility>

#include "net/codec.h"
#include "shardkv/hash.h"
#include "storage/range_hash_tree.h"
#include "storage/value_envelope.h"

namespace shardkv::rebalance {
namespace {

using storage::RangeHashTree;

// Spans per tree query: bounds a request at 16 bytes a span.
constexpr size_t kSpansPerQuery = 4096;

uint64_t NewSession(uint32_t self, const TokenRange& range) {
  static std::atomic<uint64_t> counter{0};
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return hash::Xxh3("repair/" + std::to_string(self) + "/" + std::to_string(range.first) + "/" +
                    std::to_string(counter.fetch_add(1)) + "/" + std::to_string(now));
}

uint64_t EntryBytes(const storage::RangeEntry& e) { return e.key.size() + e.envelope.value.size(); }

}  // namespace

void RangeRepair::Fail(Peer* peer, const Status& s, RangeRepairResult* result) {
  peer->live = false;
  const Status named = s.WithContext("node " + std::to_string(peer->id));
  if (result->status.ok()) result->status = named;
}

StatusOr<net::ResponseBody> RangeRepair::Call(const ClusterMap& map, const Peer& peer,
                                              net::RequestBody body, uint64_t* frame_bytes) {
  net::Request req;
  req.epoch = map.epoch();
  req.cluster_id = map.cluster_id();
  req.body = std::move(body);
  if (frame_bytes != nullptr) {
    std::string frame;
    if (net::EncodeRequest(req, &frame).ok()) *frame_bytes += frame.size();
  }
  auto reply = d_.peers->CallSync(peer.address, std::move(req), d_.timeout);
  if (!reply.ok()) return reply.status();
  if (!reply->ok()) return reply->status();
  if (frame_bytes != nullptr) {
    std::string frame;
    if (net::EncodeResponse(*reply, &frame).ok()) *frame_bytes += frame.size();
  }
  return std::move(reply->body);
}

StatusOr<std::vector<storage::RangeEntry>> RangeRepair::Entries(
    const ClusterMap& map, const Peer& peer, uint64_t stream_id,
    const std::vector<TokenRange>& leaves) {
  net::StreamScanRequest scan;
  scan.stream_id = stream_id;
  for (const TokenRange& l : leaves) scan.ranges.push_back({l.first, l.last});
  scan.max_entries = 8192;
  scan.max_bytes = uint64_t{8} << 20;
  std::vector<storage::RangeEntry> out;
  for (;;) {
    net::ResponseBody body;
    if (peer.address.empty()) {
      body = d_.stream_source->Scan(scan);
      if (const auto* e = std::get_if<net::ErrorResponse>(&body)) return e->ToStatus();
    } else {
      auto reply = Call(map, peer, scan, nullptr);
      if (!reply.ok()) return reply.status();
      body = std::move(*reply);
    }
    auto* batch = std::get_if<net::StreamScanResponse>(&body);
    if (batch == nullptr) return Status::Corruption("unexpected reply to a leaf scan");
    for (net::StreamEntry& e : batch->entries) {
      out.push_back(FromRepairEntry(net::RepairEntry(std::move(e))));  // the same record
    }
    if (batch->done) return out;
    scan.cursor = std::move(batch->cursor);
    scan.range_index = batch->range_index;
  }
}

Status RangeRepair::Push(const ClusterMap& map, const Peer& peer,
                         const std::vector<storage::RangeEntry>& entries) {
  if (peer.address.empty()) return d_.storage->ApplyBatch(entries).status();
  size_t i = 0;
  while (i < entries.size()) {
    net::ApplyEntries apply;
    uint64_t bytes = 0;
    while (i < entries.size() && apply.entries.size() < kApplyEntries && bytes < kApplyBytes) {
      bytes += EntryBytes(entries[i]);
      apply.entries.push_back(ToRepairEntry(entries[i++]));
    }
    auto body = Call(map, peer, net::AntiEntropyRequest{std::move(apply)}, nullptr);
    if (!body.ok()) return body.status();
  }
  return Status::OK();
}

std::vector<std::optional<StatusOr<std::vector<net::TreeNode>>>> RangeRepair::TreeAll(
    const ClusterMap& map, const std::vector<Peer>& peers, const net::TreeQuery& query,
    uint64_t* bytes) {
  using Reply = StatusOr<net::Response>;
  std::vector<std::optional<StatusOr<std::vector<net::TreeNode>>>> out(peers.size());
  std::vector<std::optional<std::future<Reply>>> pending(peers.size());
  for (size_t p = 0; p < peers.size(); ++p) {
    if (!peers[p].live || peers[p].address.empty()) continue;
    net::Request req;
    req.epoch = map.epoch();
    req.cluster_id = map.cluster_id();
    req.body = net::AntiEntropyRequest{query};
    if (bytes != nullptr) {
      std::string frame;
      if (net::EncodeRequest(req, &frame).ok()) *bytes += frame.size();
    }
    auto promise = std::make_shared<std::promise<Reply>>();
    pending[p] = promise->get_future();
    d_.peers->Call(peers[p].address, std::move(req), d_.timeout,
                   [promise](Reply reply) { promise->set_value(std::move(reply)); });
  }
  for (size_t p = 0; p < peers.size(); ++p) {
    if (peers[p].live && peers[p].address.empty()) out[p] = d_.trees->Tree(query);
  }
  for (size_t p = 0; p < peers.size(); ++p) {
    if (!pending[p]) continue;
    Reply reply = Status::Aborted("node " + std::to_string(peers[p].id) +
                                  ": I/O stopped before the tree query completed");
    try {
      reply = pending[p]->get();  // the pool answers every call, by its timeout at the latest
    } catch (const std::future_error&) {
      // The callback was destroyed without running: the pool's event loop was stopped.
    }
    if (!reply.ok()) {
      out[p] = reply.status();
      continue;
    }
    if (!reply->ok()) {
      out[p] = reply->status();
      continue;
    }
    if (bytes != nullptr) {
      std::string frame;
      if (net::EncodeResponse(*reply, &frame).ok()) *bytes += frame.size();
    }
    const auto* ae = std::get_if<net::AntiEntropyResponse>(&reply->body);
    const auto* tree = ae != nullptr ? std::get_if<net::TreeReply>(&ae->reply) : nullptr;
    if (tree == nullptr) {
      out[p] = Status::Corruption("unexpected reply to a tree query");
      continue;
    }
    out[p] = std::move(tree->nodes);
  }
  return out;
}

RangeRepairResult RangeRepair::Run(const ClusterMap& map, const TokenRange& range,
                                   const std::vector<uint32_t>& replicas,
                                   std::optional<uint64_t> horizon_ms) {
  RangeRepairResult result;
  std::vector<Peer> peers;
  for (uint32_t id : replicas) {
    Peer p;
    p.id = id;
    if (id != d_.self_id) {
      const ClusterNode* node = map.FindNode(id);
      if (node == nullptr) {
        result.status = Status::NotFound("node " + std::to_string(id) + " is not in the map");
        continue;
      }
      p.address = node->address;
    }
    peers.push_back(std::move(p));
  }
  const auto live_count = [&] {
    return std::count_if(peers.begin(), peers.end(), [](const Peer& p) { return p.live; });
  };
  const uint64_t session = NewSession(d_.self_id, range);

  // 1. Descend the trees while spans differ.
  std::vector<TokenRange> frontier{range};
  std::vector<TokenRange> leaves;
  while (!frontier.empty() && live_count() >= 2) {
    std::vector<TokenRange> next;
    for (size_t at = 0; at < frontier.size(); at += kSpansPerQuery) {
      const size_t end = std::min(frontier.size(), at + kSpansPerQuery);
      net::TreeQuery query{session, range.first, range.last, {}, false, 0, {}};
      for (size_t i = at; i < end; ++i)
        query.spans.push_back({frontier[i].first, frontier[i].last});
      std::vector<std::optional<std::vector<net::TreeNode>>> answers(peers.size());
      auto replies = TreeAll(map, peers, query, &result.tree_bytes);
      for (size_t p = 0; p < peers.size(); ++p) {
        if (!replies[p]) continue;
        auto& nodes = *replies[p];
        if (!nodes.ok() || nodes->size() != query.spans.size()) {
          Fail(&peers[p],
               nodes.ok() ? Status::Corruption("tree reply of the wrong size") : nodes.status(),
               &result);
          continue;
        }
        // The first round asks for the whole range: its count is this node's keys there.
        if (peers[p].address.empty() && frontier.size() == 1 && frontier[0] == range) {
          result.own_keys = nodes->front().count;
        }
        answers[p] = std::move(*nodes);
      }
      for (size_t i = at; i < end; ++i) {
        std::optional<net::TreeNode> seen;
        bool same = true;
        uint64_t most = 0;
        for (const auto& a : answers) {
          if (!a) continue;
          const net::TreeNode& n = (*a)[i - at];
          if (seen && !(n == *seen)) same = false;
          seen = n;
          most = std::max(most, n.count);
        }
        if (same) continue;
        const TokenRange& span = frontier[i];
        if (most <= RangeHashTree::kLeafKeys || span.first == span.last) {
          leaves.push_back(span);
        } else {
          for (const TokenRange& c :
               RangeHashTree::SplitSpan(span, 1u << RangeHashTree::kLevelsPerRound)) {
            next.push_back(c);
          }
        }
      }
    }
    frontier = std::move(next);
  }
  result.leaves_differed = leaves.size();
  result.differed = !leaves.empty();

  // 2. Merge the differing leaves, a batch of leaves at a time, and push what each one lacks.
  for (size_t at = 0; at < leaves.size() && live_count() >= 2; at += kLeavesPerBatch) {
    const std::vector<TokenRange> batch(
        leaves.begin() + at, leaves.begin() + std::min(leaves.size(), at + kLeavesPerBatch));
    // Per key (token order, then key), each replica's record.
    std::map<std::pair<uint64_t, std::string>, std::vector<std::optional<storage::Envelope>>> keys;
    for (size_t p = 0; p < peers.size(); ++p) {
      if (!peers[p].live) continue;
      auto entries = Entries(map, peers[p], session + at, batch);
      if (!entries.ok()) {
        Fail(&peers[p], entries.status(), &result);
        continue;
      }
      for (storage::RangeEntry& e : *entries) {
        ++result.keys_fetched;
        result.bytes_fetched += EntryBytes(e);
        auto& slot = keys[{e.token, std::move(e.key)}];
        slot.resize(peers.size());
        slot[p] = std::move(e.envelope);
      }
    }
    std::vector<std::vector<storage::RangeEntry>> push(peers.size());
    for (auto& [k, versions] : keys) {
      versions.resize(peers.size());
      std::optional<storage::Envelope> merged;
      for (const auto& v : versions) {
        if (v) merged = merged ? storage::Merge(*merged, *v) : *v;
      }
      for (size_t p = 0; p < peers.size(); ++p) {
        if (!peers[p].live || (versions[p] && *versions[p] == *merged)) continue;
        push[p].push_back({k.first, k.second, *merged});
      }
    }
    for (size_t p = 0; p < peers.size(); ++p) {
      if (!peers[p].live || push[p].empty()) continue;
      if (Status s = Push(map, peers[p], push[p]); !s.ok()) {
        Fail(&peers[p], s, &result);
        continue;
      }
      net::NodeStreamed& n = result.streamed[peers[p].id];
      n.node_id = peers[p].id;
      n.keys += push[p].size();
      for (const auto& e : push[p]) n.bytes += EntryBytes(e);
    }
  }
  if (result.status.ok() && live_count() < static_cast<long>(peers.size())) {
    result.status = Status::Unavailable("a replica failed");
  }
  // The trees are no longer needed (idle ones expire anyway), and the release tells the others a
  // complete repair's horizon. Best effort.
  net::TreeQuery release{session, range.first, range.last, {}, true, 0, {}};
  if (horizon_ms && result.status.ok()) {
    release.repaired_ms = *horizon_ms;
    release.replicas = replicas;
  }
  static_cast<void>(TreeAll(map, peers, release, nullptr));
  return result;
}

}  // namespace shardkv::rebalance
