// MapConsensus (map_consensus.h): the leader keeps the Raft configuration in line with the
// applied map, one change at a time, each with a deadline; and what it reports of it.
#include <spdlog/spdlog.h>

#include "cluster/map_consensus.h"
#include "cluster/voter_reconciler.h"

namespace shardkv::cluster {
namespace {

using Clock = std::chrono::steady_clock;

int64_t Seconds(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::seconds>(d).count();
}

}  // namespace

struct MapConsensus::Step {
  ConfigurationStep step;
};

void MapConsensus::Reconcile(const consensus::RaftStatus& st, const ClusterMap& applied) {
  auto r = Replica();
  if (!r) return;
  ConfigurationView view;
  view.self_id = options_.self_id;
  view.have = st.configuration;
  view.want = DesiredConfiguration(applied, options_.max_voters);
  view.heard = [this](uint64_t id) {
    return id <= UINT32_MAX && HeardWithin(static_cast<uint32_t>(id), options_.lease);
  };
  bool hand_on = false;
  {
    common::MutexLock lock(&mu_);
    if (inflight_) return;  // one change at a time; it ends by its deadline
    const auto now = Clock::now();
    for (auto it = backoff_.begin(); it != backoff_.end();) {
      it = now >= it->second ? backoff_.erase(it) : std::next(it);
    }
    for (const auto& [id, until] : backoff_) view.backing_off.insert(id);
    if (hand_on_if_uncommitted_) {
      hand_on_if_uncommitted_ = false;
      hand_on = st.uncommitted_configuration_index != 0;
    }
  }
  Step step;
  if (hand_on) {
    // A change given up at its deadline left a configuration this leader cannot commit; Raft
    // cannot take an appended configuration back, but another leader whose log lacks it drops
    // it (and one that has it commits it if it can).
    step.step.kind = ConfigurationStep::Kind::kHandOn;
    step.step.what = "handing leadership on: the configuration appended at index " +
                     std::to_string(st.uncommitted_configuration_index) +
                     " was given up and is still not committed";
  } else {
    step.step = NextConfigurationStep(view);  // (HeardWithin takes mu_)
  }
  uint64_t gen = 0;
  {
    common::MutexLock lock(&mu_);
    if (step.step.kind == ConfigurationStep::Kind::kNone) {
      if (step.step.waiting != waiting_ && !step.step.waiting.empty()) {
        spdlog::warn(
            "consensus: the voters differ from the map's, and no change can be made now: {}",
            step.step.waiting);
      }
      waiting_ = step.step.waiting;
      return;
    }
    waiting_.clear();
    gen = next_gen_++;
    inflight_ = InFlight{gen, step.step.what, Clock::now()};
  }
  auto done = [this, gen, step](Status s) { StepDone(gen, step, s); };
  const consensus::RaftServer& server = step.step.server;
  switch (step.step.kind) {
    case ConfigurationStep::Kind::kRemove:
      r->RemoveServer(server.id, done);
      break;
    case ConfigurationStep::Kind::kAdd:
      r->AddServer(server, done);
      break;
    case ConfigurationStep::Kind::kAssign:
      r->AssignRole(server.id, server.role, done);
      break;
    case ConfigurationStep::Kind::kHandOn:
      r->TransferLeadership(0, done);
      break;
    case ConfigurationStep::Kind::kNone:
      break;
  }
}

// On the Raft loop (or inline when the replica refused at once): must not block.
void MapConsensus::StepDone(uint64_t gen, const Step& step, const Status& s) {
  common::MutexLock lock(&mu_);
  if (!inflight_ || inflight_->gen != gen) return;
  inflight_.reset();
  const uint64_t id = step.step.server.id;
  if (s.ok()) {
    spdlog::info("consensus: {}", step.step.what);
    last_reconcile_error_.clear();
    backoff_.erase(id);
    return;
  }
  // Given up: not done by its deadline (outcome unknown), or a server being made a voter that
  // did not catch up (nothing changed). Not a lost leadership or a busy configuration.
  const bool promotion = step.step.kind == ConfigurationStep::Kind::kAssign &&
                         step.step.server.role == consensus::RaftRole::kVoter;
  const bool gave_up = s.code() == Status::Code::kTimeout ||
                       (promotion && s.code() == Status::Code::kUnavailable && leader_);
  if (!gave_up) {
    if (s.ToString() != last_reconcile_error_) {
      // (The replica's errors mostly name the step already.)
      const bool named = s.message().find(step.step.what) != std::string::npos;
      spdlog::warn("consensus: {}{}", named ? "" : step.step.what + ": ", s.ToString());
      last_reconcile_error_ = s.ToString();
    }
    return;
  }
  ++changes_given_up_;
  given_up_ = GivenUp{step.step.what, s.message(), Clock::now()};
  if (step.step.kind != ConfigurationStep::Kind::kHandOn) {
    backoff_[id] = Clock::now() + options_.backoff;
  }
  if (s.code() == Status::Code::kTimeout) hand_on_if_uncommitted_ = true;
  spdlog::warn(
      "consensus: gave up {}: {}; the other configuration changes go ahead, and changes of server "
      "{} wait {} s",
      step.step.what, s.message(), id, Seconds(options_.backoff));
}

ConsensusReport MapConsensus::Report() const {
  ConsensusReport out;
  common::MutexLock lock(&mu_);
  const auto now = Clock::now();
  out.voters = voters_;
  if (inflight_) {
    out.pending_change = inflight_->what + " (for " +
                         std::to_string(Seconds(now - inflight_->since)) + " s; given up after " +
                         std::to_string(Seconds(options_.change_deadline)) + " s)";
  } else if (!waiting_.empty()) {
    out.pending_change = "waiting: " + waiting_;
  }
  if (given_up_) {
    out.given_up = given_up_->what + " (" + std::to_string(Seconds(now - given_up_->when)) +
                   " s ago): " + given_up_->why;
  }
  if (!store_error_.empty()) {
    out.store_error = store_error_ + "; out of the consensus group until its store takes writes";
  }
  out.store_errors = store_errors_;
  out.recoveries = recoveries_;
  out.changes_given_up = changes_given_up_;
  return out;
}

}  // namespace shardkv::cluster
