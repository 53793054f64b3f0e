// MapCommitter: a compare-and-set of the next epoch on every member (see map_committer.h).
#include "cluster/map_committer.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <future>
#include <random>
#include <set>
#include <thread>

#include "clustermap/cluster_map_builder.h"

namespace shardkv::cluster {

// ---- Commits -----------------------------------------------------------------------------

namespace {

bool Unreachable(const Status& s) {
  return s.code() == Status::Code::kUnavailable || s.code() == Status::Code::kTimeout ||
         s.code() == Status::Code::kIOError;
}

// The refusal Membership::Install gives when our expected epoch is behind the peer's.
bool StaleRefusal(const Status& s) {
  return s.code() == Status::Code::kAborted && s.Is(Status::Reason::kUnexpectedEpoch);
}

// The committer names itself claimant. One that is not in the map it commits (the joining node
// cancelling its own add) names the lowest remaining member: it will not be there to drive.
uint32_t Claimant(const ClusterMap& next, uint32_t self_id) {
  if (next.FindNode(self_id) != nullptr || next.nodes().empty()) return self_id;
  uint32_t claimant = next.nodes().front().id;
  for (const ClusterNode& n : next.nodes()) claimant = std::min(claimant, n.id);
  return claimant;
}

std::string Ids(const std::vector<uint32_t>& ids) {
  std::string out;
  for (uint32_t id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

}  // namespace

MapCommitter::MapCommitter(uint32_t self_id, std::chrono::milliseconds rpc_timeout, MapStore* maps,
                           net::PeerPool* peers, Membership* membership, MapConsensus* consensus)
    : self_id_(self_id),
      rpc_timeout_(rpc_timeout),
      maps_(maps),
      peers_(peers),
      membership_(membership),
      consensus_(consensus) {}

void MapCommitter::Stop() {
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.notify_all();
}

Status MapCommitter::Commit(const std::function<StatusOr<ClusterMap>(const ClusterMap&)>& make,
                            Acks acks) {
  if (consensus_ != nullptr && consensus_->running()) return CommitByConsensus(make, acks);
  common::MutexLock commit_lock(&commit_mu_);
  for (int attempt = 0;; ++attempt) {
    auto current = maps_->Current();
    if (!current) return Status::Unavailable("node has no cluster map");
    auto content = make(*current);
    if (!content.ok()) return content.status();
    const ClusterMap next =
        clustermap::WithEpoch(*content, current->epoch() + 1, Claimant(*content, self_id_));
    bool stale = false;
    Status s = InstallEverywhere(*current, next, &stale);
    if (!stale || attempt >= 1) return s;
    // Every refusal said this node's map is behind and nothing took effect: pull the newest
    // map and decide again on it (`make` re-checks whatever it depends on).
    spdlog::info("epoch {} refused as stale ({}); fetching the newest map", next.epoch(),
                 s.ToString());
    membership_->FetchNewestMap(rpc_timeout_);
  }
}

Status MapCommitter::InstallEverywhere(const ClusterMap& current, const ClusterMap& next,
                                       bool* stale) {
  *stale = false;
  const std::string bytes = next.Encode();
  const bool self_in_next = next.FindNode(self_id_) != nullptr;
  // Sends the proposal to `targets` in parallel; one status per target.
  auto send = [&](const std::vector<ClusterNode>& targets) {
    std::vector<std::future<Status>> replies;
    for (const ClusterNode& n : targets) {
      auto promise = std::make_shared<std::promise<Status>>();
      replies.push_back(promise->get_future());
      net::Request req;
      req.epoch = current.epoch();
      req.body = net::InstallMapRequest{bytes, current.epoch(), current.FindNode(n.id) == nullptr};
      const uint32_t id = n.id;
      peers_->Call(n.address, std::move(req), rpc_timeout_,
                   [promise, id](StatusOr<net::Response> reply) {
                     Status s = reply.ok() ? reply->status() : reply.status();
                     promise->set_value(s.ok() ? s : s.WithContext("node " + std::to_string(id)));
                   });
    }
    std::vector<Status> out;
    for (auto& r : replies) out.push_back(r.get());
    return out;
  };
  // Every member of the next map (a removed node learns nothing more). A member that cannot be
  // reached is tolerated only once gossip also finds it down; it pulls the map when it is back.
  std::vector<ClusterNode> targets;
  for (const ClusterNode& n : next.nodes()) {
    if (n.id != self_id_) targets.push_back(n);
  }
  std::vector<Status> results = send(targets);
  std::string refusals;
  std::vector<uint32_t> accepted, refused;
  bool all_stale = true;
  for (size_t i = 0; i < results.size(); ++i) {
    const auto& s = results[i];
    if (s.ok()) {
      accepted.push_back(targets[i].id);
    } else if (!Unreachable(s)) {
      refused.push_back(targets[i].id);
      all_stale = all_stale && StaleRefusal(s);
      refusals += (refusals.empty() ? "" : "; ") + s.ToString();
    }
  }
  const std::string name = "epoch " + std::to_string(next.epoch());
  if (!refused.empty()) {
    if (accepted.empty()) {
      // A refusal (another map with this epoch, another cluster) means this proposal lost and
      // nobody installed it: nothing took effect.
      *stale = all_stale;
      return Status::Aborted(name + " refused: " + refusals);
    }
    return Status(Status::Code::kTimeout, Status::Reason::kOutcomeUnknown,
                  name + " outcome unknown: nodes " + Ids(accepted) + " accepted it, nodes " +
                      Ids(refused) + " refused it (" + refusals +
                      "); check `shardkv rebalance status`");
  }
  if (self_in_next) {
    net::InstallMapRequest local{bytes, current.epoch(), false};
    net::ResponseBody mine = membership_->InstallNow(local);
    if (const auto* e = std::get_if<net::ErrorResponse>(&mine)) {
      Status s = e->ToStatus();
      const bool passed = maps_->Current() && maps_->Current()->epoch() >= next.epoch();
      if (passed && accepted.size() == targets.size()) {
        // Every other member installed it, and this node already pulled it and what was built
        // on it through gossip while the proposal was in flight (a slow member): it took effect.
        spdlog::info("{}: this node is already past it ({})", name, s.ToString());
      } else if (s.code() != Status::Code::kTimeout) {
        // (A Timeout is the epoch barrier: the map is installed, older requests still drain.)
        if (accepted.empty()) return s.WithContext("installing " + name + " locally");
        return Status(Status::Code::kTimeout, Status::Reason::kOutcomeUnknown,
                      name + " outcome unknown: nodes " + Ids(accepted) +
                          " accepted it, but this node refused it: " + s.ToString());
      }
    }
  } else {
    // This node leaves with this map (its own add cancelled): it keeps the map as a departing
    // node, so it stops driving and serving, instead of refusing what the others accepted.
    Status s = maps_->Install(next);
    if (!s.ok()) spdlog::warn("{}: installing as a departing node: {}", name, s.ToString());
  }
  ++commits_;
  // Committed. The next stage may start only once every live member acknowledged, so keep
  // re-sending to the ones that did not until they do or are found down.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    std::vector<ClusterNode> again;
    std::string waiting;
    for (size_t i = 0; i < targets.size(); ++i) {
      if (results[i].ok()) continue;
      if (membership_->Settled() && !membership_->IsAlive(targets[i].id)) continue;
      again.push_back(targets[i]);
      waiting += (waiting.empty() ? "" : "; ") + results[i].ToString();
    }
    if (again.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      // It took effect (installed here, members pull it through gossip): say so, not failure.
      spdlog::warn("{} committed but not acknowledged yet: {}", name, waiting);
      return Status::OK();
    }
    {
      common::MutexLock lock(&mu_);
      const auto pause_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
      while (!stopping_) {
        if (!lock.WaitUntil(wake_, pause_end)) break;
      }
      if (stopping_) return Status::OK();  // committed; the rest learn it by gossip
    }
    std::vector<Status> retried = send(again);
    results.assign(targets.size(), Status::OK());
    for (size_t i = 0, j = 0; i < targets.size() && j < again.size(); ++i) {
      if (targets[i].id == again[j].id) results[i] = retried[j++];
    }
  }
  spdlog::info("committed {} ({} members)", name, targets.size() + (self_in_next ? 1 : 0));
  return Status::OK();
}

// ---- Commits by consensus ------------------------------------------------------------------

namespace {

// Sends `bytes` as a committed map to every target in parallel; one status per target.
std::vector<Status> SendCommitted(net::PeerPool* peers, const ClusterMap& current,
                                  const std::string& bytes, const std::vector<ClusterNode>& targets,
                                  std::chrono::milliseconds timeout) {
  std::vector<std::future<Status>> replies;
  for (const ClusterNode& n : targets) {
    auto promise = std::make_shared<std::promise<Status>>();
    replies.push_back(promise->get_future());
    net::Request req;
    req.epoch = current.epoch();
    // A member new in this map is adopted (it joins the consensus group too).
    req.body = net::InstallMapRequest{bytes, current.epoch(), current.FindNode(n.id) == nullptr,
                                      /*committed=*/true};
    const uint32_t id = n.id;
    peers->Call(n.address, std::move(req), timeout, [promise, id](StatusOr<net::Response> reply) {
      Status s = reply.ok() ? reply->status() : reply.status();
      promise->set_value(s.ok() ? s : s.WithContext("node " + std::to_string(id)));
    });
  }
  std::vector<Status> out;
  for (auto& r : replies) out.push_back(r.get());
  return out;
}

}  // namespace

void MapCommitter::CountReachableVoters(size_t* reachable, size_t* voters) const {
  const std::vector<uint32_t> ids = consensus_->Voters();
  *voters = ids.size();
  *reachable = 0;
  const bool leads = consensus_->IsLeader();
  for (uint32_t id : ids) {
    // The leader hears every voter's answers to its heartbeats (ten a second); within the lease,
    // as everywhere else, so that a node starved of CPU for a second (planning 100,000 vnodes on
    // two cores) does not refuse a change its voters would accept. Elsewhere Raft traffic is
    // sparse (a follower hears only its leader), so gossip counts too. This is only the early
    // refusal: the commit itself still needs a Raft majority.
    const bool heard = consensus_->HeardWithin(id, consensus_->lease()) ||
                       (!leads && membership_->Settled() && membership_->IsAlive(id));
    *reachable += heard ? 1 : 0;
  }
}

Status MapCommitter::CheckMajority() const {
  if (consensus_ == nullptr || !consensus_->running()) return Status::OK();
  // A follower hears only its leader: one heard from within the lease judges for it.
  const uint32_t leader = consensus_->LeaderId();
  if (!consensus_->IsLeader() && leader != 0 &&
      consensus_->HeardWithin(leader, consensus_->lease())) {
    return Status::OK();
  }
  size_t reachable = 0, voters = 0;
  CountReachableVoters(&reachable, &voters);
  if (voters == 0) {
    return Status(Status::Code::kUnavailable, Status::Reason::kNoMajority,
                  "no majority: this node does not know the voters yet");
  }
  if (reachable * 2 <= voters) {
    return Status(Status::Code::kUnavailable, Status::Reason::kNoMajority,
                  "no majority: " + std::to_string(reachable) + " of " + std::to_string(voters) +
                      " voters reachable");
  }
  return Status::OK();
}

Status MapCommitter::CommitByConsensus(
    const std::function<StatusOr<ClusterMap>(const ClusterMap&)>& make, Acks acks) {
  common::MutexLock commit_lock(&commit_mu_);
  for (int attempt = 0;; ++attempt) {
    SHARDKV_RETURN_IF_ERROR(CheckMajority());
    // A leader may be being elected, or may not have applied the group's first map yet.
    const auto wait_end = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    while (!(consensus_->IsLeader() && consensus_->Applied()) &&
           std::chrono::steady_clock::now() < wait_end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!consensus_->IsLeader()) {
      const uint32_t leader = consensus_->LeaderId();
      return Status::FailedPrecondition("not the leader: " +
                                        (leader != 0 ? "node " + std::to_string(leader) + " leads"
                                                     : std::string("no leader is elected yet")));
    }
    auto applied = consensus_->Applied();
    if (!applied) return Status::Unavailable("the consensus group has no cluster map yet");
    auto content = make(*applied);
    if (!content.ok()) return content.status();
    const ClusterMap next =
        clustermap::WithEpoch(*content, applied->epoch() + 1, Claimant(*content, self_id_));
    const std::string name = "epoch " + std::to_string(next.epoch());
    Status s = consensus_->Propose(next, rpc_timeout_);
    if (s.ok()) {
      ++commits_;
      // Committed: every member applies it from the log (and learns it by gossip).
      if (acks == Acks::kSkip) return Status::OK();
      return AwaitAcknowledgements(*applied, next);
    }
    // Not the leader (any more) when proposing: nothing was appended, nothing took effect.
    if (s.code() == Status::Code::kFailedPrecondition) return s;
    if (s.code() == Status::Code::kAborted && s.Is(Status::Reason::kSuperseded) && attempt < 2) {
      spdlog::info("{}: {}; deciding again on the newer map", name, s.ToString());
      continue;
    }
    // Appended but not known to be committed: it may still commit under a later leader.
    return Status(Status::Code::kTimeout, Status::Reason::kOutcomeUnknown,
                  name + " outcome unknown: " + s.message() + "; check `shardkv rebalance status`");
  }
}

Status MapCommitter::AwaitAcknowledgements(const ClusterMap& current, const ClusterMap& next) {
  const std::string bytes = next.Encode();
  const std::string name = "epoch " + std::to_string(next.epoch());
  if (next.FindNode(self_id_) != nullptr) {
    // Here first: installs it if the installer has not yet, then the epoch barrier.
    net::ResponseBody mine =
        membership_->InstallNow(net::InstallMapRequest{bytes, 0, false, /*committed=*/true});
    if (const auto* e = std::get_if<net::ErrorResponse>(&mine)) {
      spdlog::warn("{}: installing it here: {}", name, e->ToStatus().ToString());
    }
  }
  std::vector<ClusterNode> targets;
  for (const ClusterNode& n : next.nodes()) {
    if (n.id != self_id_) targets.push_back(n);
  }
  // The stage rule (design.md "Consensus"): the next stage may start only once every member
  // acknowledged this map after its epoch barrier, or was silent for longer than the lease (it
  // has fenced itself: it does not coordinate with an older map).
  const auto silent_after = consensus_->lease() + std::chrono::milliseconds(500);
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::seconds(60);
  std::vector<bool> acked(targets.size(), false);
  std::string waiting;
  for (;;) {
    std::vector<ClusterNode> again;
    std::vector<size_t> where;
    const bool long_enough = std::chrono::steady_clock::now() - start > silent_after;
    for (size_t i = 0; i < targets.size(); ++i) {
      if (acked[i]) continue;
      if (long_enough && !consensus_->HeardWithin(targets[i].id, silent_after)) continue;
      again.push_back(targets[i]);
      where.push_back(i);
    }
    if (again.empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      spdlog::warn("{} committed but not acknowledged yet: {}", name, waiting);
      return Status::OK();
    }
    std::vector<Status> results = SendCommitted(peers_, current, bytes, again, rpc_timeout_);
    waiting.clear();
    for (size_t j = 0; j < results.size(); ++j) {
      if (results[j].ok()) {
        acked[where[j]] = true;
      } else {
        waiting += (waiting.empty() ? "" : "; ") + results[j].ToString();
      }
    }
    if (waiting.empty()) continue;
    common::MutexLock lock(&mu_);
    const auto pause_end = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (!stopping_) {
      if (!lock.WaitUntil(wake_, pause_end)) break;
    }
    if (stopping_) return Status::OK();  // committed; the rest learn it by Raft and gossip
  }
  spdlog::info("committed {} by consensus ({} members)", name, next.nodes().size());
  return Status::OK();
}

}  // namespace shardkv::cluster
