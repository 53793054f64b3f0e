// RaftReplica's public methods; the loop's work is in raft_replica_impl.cc.
#include "consensus/raft_replica.h"

#include <spdlog/spdlog.h>

#include <future>
#include <thread>

#include "consensus/raft_replica_impl.h"

namespace shardkv::consensus {
namespace {

Status Wait(std::future<Status> f, std::chrono::milliseconds timeout, const std::string& what) {
  if (f.wait_for(timeout) != std::future_status::ready) {
    return Status::Timeout(what + ": no outcome after " + std::to_string(timeout.count()) +
                           " ms (it may still take effect)");
  }
  return f.get();
}

struct ApplyRequest {
  struct raft_apply req {};
  RaftReplica::Done done;
};
struct TransferRequest {
  struct raft_transfer req {};
  RaftReplica::Impl* impl = nullptr;
  uint64_t target = 0;
  RaftReplica::Done done;
};

}  // namespace

RaftReplica::RaftReplica(RaftReplicaOptions options, storage::Storage* storage,
                         StateMachine* machine, RaftTransport* transport)
    : impl_(std::make_unique<Impl>(std::move(options), storage, machine, transport)) {}

RaftReplica::~RaftReplica() { Stop(); }

Status RaftReplica::Bootstrap(const std::vector<RaftServer>& servers) {
  Impl& m = *impl_;
  if (m.started) return Status::FailedPrecondition("raft: Bootstrap after Start");
  SHARDKV_RETURN_IF_ERROR(m.Init());
  raft_configuration conf;
  raft_configuration_init(&conf);
  for (const RaftServer& s : servers) {
    const int rv = raft_configuration_add(&conf, s.id, s.address.c_str(), static_cast<int>(s.role));
    if (rv != 0) {
      raft_configuration_close(&conf);
      return FromRaft(rv, nullptr, "raft configuration: server " + std::to_string(s.id));
    }
  }
  const int rv = raft_bootstrap(&m.r, &conf);
  raft_configuration_close(&conf);
  if (rv != 0) return FromRaft(rv, &m.r, "raft_bootstrap");
  return Status::OK();
}

Status RaftReplica::Start() {
  Impl& m = *impl_;
  if (m.started) return Status::OK();
  SHARDKV_RETURN_IF_ERROR(m.Init());
  SHARDKV_RETURN_IF_ERROR(m.Configure());
  m.started = true;
  std::promise<void> running;
  m.thread = std::thread([&m, &running] {
    m.loop_thread = std::this_thread::get_id();
    running.set_value();
    m.loop.run();
  });
  running.get_future().wait();
  asio::post(m.loop, [&m] { m.ArmHousekeeping(); });
  return Status::OK();
}

void RaftReplica::Stop() {
  Impl& m = *impl_;
  if (m.stopped.exchange(true)) return;
  if (!m.started && !m.initialised) return;
  auto close = [&m] {
    switch (m.phase) {
      case Impl::Phase::kRunning:
        raft_close(&m.r, [](raft* r) { Impl::Of(r)->Finish(); });
        break;
      case Impl::Phase::kClosing:
        m.stop_requested = true;  // Closed() finishes
        break;
      case Impl::Phase::kDown:
        m.Finish();
        break;
      case Impl::Phase::kStopped:
        break;
    }
  };
  if (m.thread.joinable()) {
    asio::post(m.loop, close);
    m.thread.join();
  } else {
    close();
    m.loop.restart();
    m.loop.run();
  }
}

void RaftReplica::Receive(std::string message) {
  Impl& m = *impl_;
  if (m.stopped.load() || !m.started) return;
  asio::post(m.loop, [&m, message = std::move(message)] {
    if (!m.closed) m.io.Receive(message);
  });
}

void RaftReplica::Propose(std::string command, Done done) {
  Impl& m = *impl_;
  m.Run(
      [&m, command = std::move(command), done]() mutable {
        if (m.Refuse(done)) return;
        if (raft_state(&m.r) != RAFT_LEADER) return done(m.NotLeader());
        raft_buffer buf;
        buf.len = command.size();
        buf.base = raft_malloc(command.empty() ? 1 : command.size());
        if (buf.base == nullptr) return done(Status::ResourceExhausted("raft: out of memory"));
        if (!command.empty()) std::memcpy(buf.base, command.data(), command.size());
        auto* req = new ApplyRequest;
        req->done = std::move(done);
        req->req.data = req;
        const int rv =
            raft_apply(&m.r, &req->req, &buf, 1, [](struct raft_apply* a, int status, void*) {
              auto* self = static_cast<ApplyRequest*>(a->data);
              self->done(status == 0 ? Status::OK() : FromRaft(status, nullptr, "raft apply"));
              delete self;
            });
        if (rv != 0) {
          raft_free(buf.base);
          Status s = rv == RAFT_NOTLEADER ? m.NotLeader() : FromRaft(rv, &m.r, "raft_apply");
          req->done(s);
          delete req;
        }
      },
      done);
}

void RaftReplica::TransferLeadership(uint64_t id, Done done) {
  Impl& m = *impl_;
  m.Run(
      [&m, id, done]() mutable {
        if (m.Refuse(done)) return;
        if (raft_state(&m.r) != RAFT_LEADER) return done(m.NotLeader());
        auto* req = new TransferRequest;
        req->impl = &m;
        req->target = id;
        req->done = std::move(done);
        req->req.data = req;
        const int rv = raft_transfer(&m.r, &req->req, id, [](struct raft_transfer* t) {
          auto* self = static_cast<TransferRequest*>(t->data);
          raft_id leader = 0;
          const char* address = nullptr;
          raft_leader(&self->impl->r, &leader, &address);
          const bool moved = leader != 0 && leader != self->impl->options.id &&
                             (self->target == 0 || leader == self->target);
          self->done(moved ? Status::OK()
                           : Status::Aborted("leadership transfer did not complete (leader is " +
                                             std::to_string(leader) + ")"));
          delete self;
        });
        if (rv != 0) {
          req->done(FromRaft(rv, &m.r, "raft_transfer"));
          delete req;
        }
      },
      done);
}

RaftStatus RaftReplica::status() const {
  Impl& m = *impl_;
  auto compute = [&m] {
    RaftStatus s;
    const RaftIoStats& io = m.io.stats();
    s.messages_sent = io.sent;
    s.messages_received = io.received;
    s.malformed_messages = io.malformed;
    s.last_error = m.io.last_error();
    s.disk_errors = io.disk_errors;
    s.recoveries = m.recoveries.load();
    s.changes_given_up = m.changes_given_up.load();
    s.recovering = m.started && !m.closed && m.phase != Impl::Phase::kRunning;
    if (!m.initialised || m.closed || m.phase != Impl::Phase::kRunning) return s;
    switch (raft_state(&m.r)) {
      case RAFT_FOLLOWER:
        s.state = RaftStatus::State::kFollower;
        break;
      case RAFT_CANDIDATE:
        s.state = RaftStatus::State::kCandidate;
        break;
      case RAFT_LEADER:
        s.state = RaftStatus::State::kLeader;
        break;
      default:
        s.state = RaftStatus::State::kUnavailable;
    }
    s.term = m.r.current_term;
    raft_id leader = 0;
    const char* address = nullptr;
    raft_leader(&m.r, &leader, &address);
    s.leader_id = leader;
    if (address != nullptr) s.leader_address = address;
    s.last_index = raft_last_index(&m.r);
    s.last_applied = raft_last_applied(&m.r);
    s.configuration_index = m.r.configuration_index;
    s.uncommitted_configuration_index = m.r.configuration_uncommitted_index;
    if (raft_state(&m.r) == RAFT_LEADER) s.promotee_id = m.r.leader_state.promotee_id;
    for (unsigned i = 0; i < m.r.configuration.n; ++i) {
      const raft_server& srv = m.r.configuration.servers[i];
      s.configuration.push_back(
          {srv.id, srv.address == nullptr ? "" : srv.address, static_cast<RaftRole>(srv.role)});
    }
    return s;
  };
  if (m.stopped.load()) return RaftStatus{};  // the loop may still be closing libraft
  if (!m.thread.joinable() || m.OnLoop()) return compute();
  auto p = std::make_shared<std::promise<RaftStatus>>();
  auto f = p->get_future();
  asio::post(m.loop, [p, compute] { p->set_value(compute()); });
  if (f.wait_for(std::chrono::seconds(5)) != std::future_status::ready) return RaftStatus{};
  return f.get();
}

namespace {

template <typename Start>
Status SyncCall(Start start, std::chrono::milliseconds timeout, const std::string& what) {
  auto p = std::make_shared<std::promise<Status>>();
  auto f = p->get_future();
  start([p](Status s) { p->set_value(std::move(s)); });
  return Wait(std::move(f), timeout, what);
}

}  // namespace

Status RaftReplica::ProposeSync(std::string command, std::chrono::milliseconds timeout) {
  return SyncCall([&](Done d) { Propose(std::move(command), std::move(d)); }, timeout,
                  "raft proposal");
}
Status RaftReplica::AddServerSync(RaftServer server, std::chrono::milliseconds timeout) {
  return SyncCall([&](Done d) { AddServer(std::move(server), std::move(d)); }, timeout,
                  "adding a raft server");
}
Status RaftReplica::RemoveServerSync(uint64_t id, std::chrono::milliseconds timeout) {
  return SyncCall([&](Done d) { RemoveServer(id, std::move(d)); }, timeout,
                  "removing a raft server");
}
Status RaftReplica::AssignRoleSync(uint64_t id, RaftRole role, std::chrono::milliseconds timeout) {
  return SyncCall([&](Done d) { AssignRole(id, role, std::move(d)); }, timeout,
                  "assigning a raft role");
}
Status RaftReplica::TransferLeadershipSync(uint64_t id, std::chrono::milliseconds timeout) {
  return SyncCall([&](Done d) { TransferLeadership(id, std::move(d)); }, timeout,
                  "transferring leadership");
}

}  // namespace shardkv::consensus
