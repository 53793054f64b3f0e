#include "consensus/raft_replica.h"

#include <spdlog/spdlog.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/post.hpp>
#include <atomic>
#include <cstring>
#include <future>
#include <thread>

#include "consensus/libraft.h"
#include "consensus/raft_codec.h"
#include "consensus/raft_io.h"
#include "consensus/raft_log_store.h"

namespace shardkv::consensus {
namespace {

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

Status Wait(std::future<Status> f, std::chrono::milliseconds timeout, const std::string& what) {
  if (f.wait_for(timeout) != std::future_status::ready) {
    return Status::Timeout(what + ": no outcome after " + std::to_string(timeout.count()) +
                           " ms (it may still take effect)");
  }
  return f.get();
}

}  // namespace

struct RaftReplica::Impl {
  RaftReplicaOptions options;
  StateMachine* machine;
  asio::io_context loop{1};
  asio::executor_work_guard<asio::io_context::executor_type> work{loop.get_executor()};
  std::thread thread;
  std::thread::id loop_thread;
  RaftLogStore store;
  RaftIo io;
  raft r{};
  raft_fsm fsm{};
  bool initialised = false;
  bool started = false;
  std::atomic<bool> stopped{false};
  bool closed = false;

  Impl(RaftReplicaOptions o, storage::Storage* storage, StateMachine* m, RaftTransport* t)
      : options(std::move(o)),
        machine(m),
        store(storage),
        io(loop, &store, t,
           options.seed != 0 ? options.seed : static_cast<uint32_t>(options.id * 2654435761u)) {
    fsm.version = 1;
    fsm.data = this;
    fsm.apply = ApplyCb;
    fsm.snapshot = SnapshotCb;
    fsm.restore = RestoreCb;
  }

  bool OnLoop() const { return std::this_thread::get_id() == loop_thread; }

  static int ApplyCb(raft_fsm* fsm, const raft_buffer* buf, void** result) {
    auto* self = static_cast<Impl*>(fsm->data);
    *result = nullptr;
    const uint64_t index = raft_last_applied(&self->r) + 1;
    self->machine->Apply(index, std::string_view(static_cast<const char*>(buf->base), buf->len));
    return 0;
  }

  static int SnapshotCb(raft_fsm* fsm, raft_buffer* bufs[], unsigned* n) {
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

  static int RestoreCb(raft_fsm* fsm, raft_buffer* buf) {
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

  // Runs `fn` on the loop (or inline before the loop starts / on it).
  template <typename F>
  void Run(F fn, const Done& done) {
    if (stopped.load()) {
      done(Status::Unavailable("raft replica " + std::to_string(options.id) + " is stopped"));
      return;
    }
    asio::post(loop, std::move(fn));
  }

  Status NotLeader() {
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
};

namespace {

struct ApplyRequest {
  struct raft_apply req {};
  RaftReplica::Done done;
};
struct ChangeRequest {
  raft_change req{};
  RaftReplica::Impl* impl = nullptr;
  uint64_t id = 0;
  int role = RAFT_VOTER;
  bool then_assign = false;
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
  if (!m.initialised) {
    const int rv = raft_init(&m.r, m.io.io(), &m.fsm, m.options.id, m.options.address.c_str());
    if (rv != 0) return FromRaft(rv, nullptr, "raft_init");
    m.initialised = true;
  }
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
  if (!m.initialised) {
    const int rv = raft_init(&m.r, m.io.io(), &m.fsm, m.options.id, m.options.address.c_str());
    if (rv != 0) return FromRaft(rv, nullptr, "raft_init");
    m.initialised = true;
  }
  raft_set_heartbeat_timeout(&m.r, static_cast<unsigned>(m.options.heartbeat_timeout.count()));
  raft_set_election_timeout(&m.r, static_cast<unsigned>(m.options.election_timeout.count()));
  raft_set_snapshot_threshold(&m.r, m.options.snapshot_threshold);
  raft_set_snapshot_trailing(&m.r, m.options.snapshot_trailing);
  raft_set_pre_vote(&m.r, true);  // a server that was partitioned away does not disrupt a leader
  const int rv = raft_start(&m.r);
  if (rv != 0) return FromRaft(rv, &m.r, "raft_start");
  m.started = true;
  std::promise<void> running;
  m.thread = std::thread([&m, &running] {
    m.loop_thread = std::this_thread::get_id();
    running.set_value();
    m.loop.run();
  });
  running.get_future().wait();
  return Status::OK();
}

void RaftReplica::Stop() {
  Impl& m = *impl_;
  if (m.stopped.exchange(true)) return;
  if (!m.initialised) return;
  auto close = [&m] {
    raft_close(&m.r, [](raft* r) {
      auto* impl = static_cast<Impl*>(static_cast<raft_fsm*>(r->fsm)->data);
      impl->closed = true;
      impl->work.reset();
    });
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
        if (m.closed) return done(Status::Unavailable("raft replica is stopped"));
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

namespace {

void ChangeDone(raft_change* c, int status) {
  auto* self = static_cast<ChangeRequest*>(c->data);
  if (status == 0 && self->then_assign) {
    self->then_assign = false;
    raft* r = &self->impl->r;
    const int rv = raft_assign(r, &self->req, self->id, self->role, ChangeDone);
    if (rv == 0) return;
    status = rv;
  }
  self->done(status == 0 ? Status::OK() : FromRaft(status, nullptr, "raft membership change"));
  delete self;
}

}  // namespace

void RaftReplica::AddServer(RaftServer server, Done done) {
  Impl& m = *impl_;
  m.Run(
      [&m, server = std::move(server), done]() mutable {
        if (m.closed) return done(Status::Unavailable("raft replica is stopped"));
        if (raft_state(&m.r) != RAFT_LEADER) return done(m.NotLeader());
        auto* req = new ChangeRequest;
        req->impl = &m;
        req->id = server.id;
        req->role = static_cast<int>(server.role);
        req->then_assign = server.role != RaftRole::kSpare;
        req->done = std::move(done);
        req->req.data = req;
        const int rv = raft_add(&m.r, &req->req, server.id, server.address.c_str(), ChangeDone);
        if (rv != 0) {
          req->done(FromRaft(rv, &m.r, "raft_add server " + std::to_string(server.id)));
          delete req;
        }
      },
      done);
}

void RaftReplica::RemoveServer(uint64_t id, Done done) {
  Impl& m = *impl_;
  m.Run(
      [&m, id, done]() mutable {
        if (m.closed) return done(Status::Unavailable("raft replica is stopped"));
        if (raft_state(&m.r) != RAFT_LEADER) return done(m.NotLeader());
        auto* req = new ChangeRequest;
        req->impl = &m;
        req->id = id;
        req->done = std::move(done);
        req->req.data = req;
        const int rv = raft_remove(&m.r, &req->req, id, ChangeDone);
        if (rv != 0) {
          req->done(FromRaft(rv, &m.r, "raft_remove server " + std::to_string(id)));
          delete req;
        }
      },
      done);
}

void RaftReplica::AssignRole(uint64_t id, RaftRole role, Done done) {
  Impl& m = *impl_;
  m.Run(
      [&m, id, role, done]() mutable {
        if (m.closed) return done(Status::Unavailable("raft replica is stopped"));
        if (raft_state(&m.r) != RAFT_LEADER) return done(m.NotLeader());
        auto* req = new ChangeRequest;
        req->impl = &m;
        req->id = id;
        req->role = static_cast<int>(role);
        req->then_assign = false;
        req->done = std::move(done);
        req->req.data = req;
        const int rv = raft_assign(&m.r, &req->req, id, static_cast<int>(role), ChangeDone);
        if (rv != 0) {
          req->done(FromRaft(rv, &m.r, "raft_assign server " + std::to_string(id)));
          delete req;
        }
      },
      done);
}

void RaftReplica::TransferLeadership(uint64_t id, Done done) {
  Impl& m = *impl_;
  m.Run(
      [&m, id, done]() mutable {
        if (m.closed) return done(Status::Unavailable("raft replica is stopped"));
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
    if (!m.initialised || m.closed) return s;
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
