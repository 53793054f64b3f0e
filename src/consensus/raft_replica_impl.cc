// RaftReplica::Impl's work on the loop (raft_replica_impl.h): libraft's FSM callbacks, the
// housekeeping that starts libraft again after a store error, and membership changes with their
// deadlines.
#include "consensus/raft_replica_impl.h"

#include <spdlog/spdlog.h>

#include <cstring>

namespace shardkv::consensus {
namespace {

// How often the loop checks for a failed store and for changes past their deadline.
constexpr std::chrono::milliseconds kHousekeeping{100};

int64_t Ms(Clock::duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

}  // namespace

Status FromRaft(int rv, raft* r, const std::string& what) {
  std::string detail = raft_strerror(rv);
  if (r != nullptr) {
    const char* msg = raft_errmsg(r);
    if (msg != nullptr && *msg != '\0' && detail != msg) detail += std::string(": ") + msg;
  }
  const std::string m = what + ": " + detail;
  switch (rv) {
    case RAFT_NOTLEADER:
      return Status::FailedPrecondition(m);
    case RAFT_LEADERSHIPLOST:
      return Status::Aborted(m);
    case RAFT_SHUTDOWN:
    case RAFT_NOCONNECTION:
      return Status::Unavailable(m);
    case RAFT_CANTBOOTSTRAP:
    case RAFT_CANTCHANGE:
    case RAFT_BUSY:
      return Status::FailedPrecondition(m);
    case RAFT_BADID:
    case RAFT_DUPLICATEID:
    case RAFT_DUPLICATEADDRESS:
    case RAFT_BADROLE:
    case RAFT_INVALID:
    case RAFT_NOTFOUND:
      return Status::InvalidArgument(m);
    case RAFT_IOERR:
    case RAFT_NOSPACE:
      return Status::IOError(m);
    default:
      return Status::Internal(m);
  }
}

// raft_init resets these, so a start after a store error sets them again.
Status RaftReplica::Impl::Configure() {
  raft_set_heartbeat_timeout(&r, static_cast<unsigned>(options.heartbeat_timeout.count()));
  raft_set_election_timeout(&r, static_cast<unsigned>(options.election_timeout.count()));
  raft_set_snapshot_threshold(&r, options.snapshot_threshold);
  raft_set_snapshot_trailing(&r, options.snapshot_trailing);
  raft_set_max_catch_up_round_duration(&r, static_cast<unsigned>(options.catch_up_timeout.count()));
  raft_set_pre_vote(&r, true);  // a server that was partitioned away does not disrupt a leader
  const int rv = raft_start(&r);
  if (rv != 0) return FromRaft(rv, &r, "raft_start");
  return Status::OK();
}

void RaftReplica::Impl::ArmHousekeeping() {
  housekeeping.expires_after(kHousekeeping);
  housekeeping.async_wait([this](const std::error_code& ec) {
    if (ec || phase == Phase::kStopped) return;
    Housekeeping();
    ArmHousekeeping();
  });
}

void RaftReplica::Impl::Housekeeping() {
  const auto now = Clock::now();
  if (phase == Phase::kRunning && io.failed()) {
    // libraft does not recover from a failed write by itself (raft_io.h): close it and start
    // it again from the store once the store takes writes.
    phase = Phase::kClosing;
    down_since = now;
    raft_close(&r, [](raft* closing) { Of(closing)->Closed(); });
  }
  if (phase == Phase::kDown && now >= next_try) TryStartAgain();
  GiveUpLateChanges(now);
}

// libraft closed after a store error.
void RaftReplica::Impl::Closed() {
  initialised = false;
  if (stop_requested) return Finish();
  io.Reset();
  machine->Reset();
  phase = Phase::kDown;
  next_try = Clock::now() + options.recovery_interval;
}

void RaftReplica::Impl::TryStartAgain() {
  next_try = Clock::now() + options.recovery_interval;
  if (!store.Probe().ok()) return;  // still failing; the first error was logged
  Status s = Init();
  if (s.ok()) s = Configure();
  if (!s.ok()) {
    spdlog::warn("shardkv raft: server {}: starting again: {}", options.id, s.ToString());
    if (initialised) {
      phase = Phase::kClosing;
      raft_close(&r, [](raft* closing) { Of(closing)->Closed(); });
    }
    return;
  }
  phase = Phase::kRunning;
  ++recoveries;
  spdlog::info(
      "shardkv raft: server {}: its store takes writes again; it takes part in consensus again "
      "(out for {} ms), from its stored log",
      options.id, Ms(Clock::now() - down_since));
}

void RaftReplica::Impl::Finish() {
  closed = true;
  phase = Phase::kStopped;
  housekeeping.cancel();
  work.reset();
}

std::string RaftReplica::Impl::Pending(const ChangeRequest& c) {
  if (phase != Phase::kRunning) return "this server is out of the group after a store error";
  if (raft_state(&r) != RAFT_LEADER) return "this server no longer leads";
  if (r.leader_state.promotee_id == c.id) {
    return "server " + std::to_string(c.id) + " has not caught up with the log";
  }
  if (r.configuration_uncommitted_index != 0) {
    return "the configuration appended at index " +
           std::to_string(r.configuration_uncommitted_index) +
           " is not committed: too few of its voters stored it";
  }
  return "libraft has not reported its outcome";
}

void RaftReplica::Impl::GiveUpLateChanges(Clock::time_point now) {
  for (auto& [seq, c] : changes) {
    if (c->answered || now < c->deadline) continue;
    c->answered = true;
    ++changes_given_up;
    const std::string why = Pending(*c);
    spdlog::warn("shardkv raft: server {}: gave up {} after {} ms: {}", options.id, c->what,
                 options.change_deadline.count(), why);
    c->done(Status::Timeout("gave up " + c->what + " after " +
                            std::to_string(options.change_deadline.count()) + " ms: " + why +
                            " (it may still take effect)"));
  }
}

// The outcome libraft reported for a change.
Status RaftReplica::Impl::Outcome(int status, const ChangeRequest& c) const {
  if (status == 0) return Status::OK();
  if (status == RAFT_NOCONNECTION && c.promoting) {
    // libraft aborts a promotion whose server did not catch up within a round's bound.
    return Status::Unavailable("gave up " + c.what + ": server " + std::to_string(c.id) +
                               " did not catch up with the log within " +
                               std::to_string(options.catch_up_timeout.count()) +
                               " ms; nothing changed");
  }
  return FromRaft(status, nullptr, c.what);
}

int RaftReplica::Impl::ApplyCb(raft_fsm* fsm, const raft_buffer* buf, void** result) {
  auto* self = static_cast<Impl*>(fsm->data);
  *result = nullptr;
  const uint64_t index = raft_last_applied(&self->r) + 1;
  self->machine->Apply(index, std::string_view(static_cast<const char*>(buf->base), buf->len));
  return 0;
}

int RaftReplica::Impl::SnapshotCb(raft_fsm* fsm, raft_buffer* bufs[], unsigned* n) {
  auto* self = static_cast<Impl*>(fsm->data);
  const std::string data = self->machine->Snapshot();
  auto* out = static_cast<raft_buffer*>(raft_malloc(sizeof(raft_buffer)));
  if (out == nullptr) return RAFT_NOMEM;
  out->base = raft_malloc(data.empty() ? 1 : data.size());
  if (out->base == nullptr) {
    raft_free(out);
    return RAFT_NOMEM;
  }
  if (!data.empty()) std::memcpy(out->base, data.data(), data.size());
  out->len = data.size();
  *bufs = out;
  *n = 1;
  return 0;
}

int RaftReplica::Impl::RestoreCb(raft_fsm* fsm, raft_buffer* buf) {
  auto* self = static_cast<Impl*>(fsm->data);
  Status s =
      self->machine->Restore(std::string_view(static_cast<const char*>(buf->base), buf->len));
  if (!s.ok()) {
    spdlog::error("shardkv raft: restoring a snapshot failed: {}", s.ToString());
    return RAFT_MALFORMED;
  }
  raft_free(buf->base);  // the FSM owns the buffer once it restored it
  return 0;
}

Status RaftReplica::Impl::NotLeader() {
  raft_id id = 0;
  const char* address = nullptr;
  raft_leader(&r, &id, &address);
  std::string m = "not the leader (server " + std::to_string(options.id) + ")";
  if (id != 0) {
    m += "; the leader is server " + std::to_string(id) +
         (address != nullptr ? std::string(" at ") + address : std::string());
  } else {
    m += "; no leader is known";
  }
  return Status::FailedPrecondition(m);
}

namespace {

std::string RoleWord(int role) {
  switch (role) {
    case RAFT_VOTER:
      return "voter";
    case RAFT_STANDBY:
      return "standby";
    default:
      return "spare";
  }
}

void ChangeDone(raft_change* c, int status) {
  auto* self = static_cast<ChangeRequest*>(c->data);
  RaftReplica::Impl* m = self->impl;
  if (status == 0 && self->then_assign && !self->answered) {
    self->then_assign = false;
    self->promoting = self->role == RAFT_VOTER;
    self->what = "making server " + std::to_string(self->id) + " a " + RoleWord(self->role);
    const int rv = raft_assign(&m->r, &self->req, self->id, self->role, ChangeDone);
    if (rv == 0) return;
    status = rv;
  }
  m->changes.erase(self->seq);
  if (!self->answered) self->done(m->Outcome(status, *self));
  delete self;
}

// Starts one membership change on the loop: `start` calls libraft with the request.
template <typename F>
void StartChange(RaftReplica::Impl& m, ChangeRequest* req, F start) {
  req->impl = &m;
  req->seq = m.next_change++;
  req->deadline = Clock::now() + m.options.change_deadline;
  req->req.data = req;
  const int rv = start(req);
  if (rv != 0) {
    req->done(FromRaft(rv, &m.r, req->what));
    delete req;
    return;
  }
  m.changes[req->seq] = req;
}

}  // namespace

void RaftReplica::AddServer(RaftServer server, Done done) {
  Impl& m = *impl_;
  m.Run(
      [&m, server = std::move(server), done]() mutable {
        if (m.Refuse(done)) return;
        if (raft_state(&m.r) != RAFT_LEADER) return done(m.NotLeader());
        auto* req = new ChangeRequest;
        req->id = server.id;
        req->role = static_cast<int>(server.role);
        req->then_assign = server.role != RaftRole::kSpare;
        req->what = "adding server " + std::to_string(server.id);
        req->done = std::move(done);
        StartChange(m, req, [&](ChangeRequest* r) {
          return raft_add(&m.r, &r->req, server.id, server.address.c_str(), ChangeDone);
        });
      },
      done);
}

void RaftReplica::RemoveServer(uint64_t id, Done done) {
  Impl& m = *impl_;
  m.Run(
      [&m, id, done]() mutable {
        if (m.Refuse(done)) return;
        if (raft_state(&m.r) != RAFT_LEADER) return done(m.NotLeader());
        auto* req = new ChangeRequest;
        req->id = id;
        req->what = "removing server " + std::to_string(id);
        req->done = std::move(done);
        StartChange(m, req,
                    [&](ChangeRequest* r) { return raft_remove(&m.r, &r->req, id, ChangeDone); });
      },
      done);
}

void RaftReplica::AssignRole(uint64_t id, RaftRole role, Done done) {
  Impl& m = *impl_;
  m.Run(
      [&m, id, role, done]() mutable {
        if (m.Refuse(done)) return;
        if (raft_state(&m.r) != RAFT_LEADER) return done(m.NotLeader());
        auto* req = new ChangeRequest;
        req->id = id;
        req->role = static_cast<int>(role);
        req->promoting = role == RaftRole::kVoter;
        req->what = "making server " + std::to_string(id) + " a " + RoleWord(req->role);
        req->done = std::move(done);
        StartChange(m, req, [&](ChangeRequest* r) {
          return raft_assign(&m.r, &r->req, id, static_cast<int>(role), ChangeDone);
        });
      },
      done);
}

}  // namespace shardkv::consensus
