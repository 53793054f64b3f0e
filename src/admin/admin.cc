// Admin (include/shardkv/admin.h): typed calls over the rebalancer's change commands
// (net::AdminRequest, answered by src/rebalance/change_frontend.cc with a ChangeReport).
#include "shardkv/admin.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <random>
#include <set>
#include <thread>

#include "admin/admin_transport.h"
#include "admin/formation.h"
#include "admin/repair_driver.h"
#include "net/rpc_client.h"
#include "net/tls_context.h"
#include "shardkv/mutation_outcome.h"
#include "shardkv/stats.h"

namespace shardkv {

using admin::AdminTransport;
using admin::CallFailure;

namespace {

int64_t WallClockMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// The seeds and timeouts one call uses: AdminOptions' with the call's overrides.
struct Call {
  std::vector<std::string> seeds;
  std::chrono::milliseconds timeout;
  std::chrono::milliseconds plan_timeout;  // never below `timeout`
};

class Admin::Impl {
 public:
  Impl(AdminOptions o, net::ClientSecurity security)
      : options(std::move(o)),
        transport(options.cluster_id, options.cluster_origin, std::move(security)) {}

  // Reads only `options`, so Probe may resolve its call concurrently with another Probe.
  Call For(const AdminCallOptions& c) const {
    const uint32_t t = c.timeout_ms != 0 ? c.timeout_ms : options.timeout_ms;
    const uint32_t plan = c.plan_timeout_ms != 0 ? c.plan_timeout_ms : options.plan_timeout_ms;
    return Call{c.seeds.empty() ? options.seeds : c.seeds, std::chrono::milliseconds(t),
                std::chrono::milliseconds(std::max(plan, t))};
  }

  AdminReply Send(const std::string& address, const net::ChangeCommand& command,
                  std::chrono::milliseconds t) {
    AdminReply out;
    out.address = address;
    CallFailure failure;
    auto body = transport.Call(address, net::AdminRequest{command}, t, &failure);
    out.unreachable = failure.unreachable;
    out.foreign = failure.foreign;
    if (!body.ok()) {
      out.status = body.status();
      return out;
    }
    const auto* reply = std::get_if<net::AdminResponse>(&*body);
    if (reply == nullptr) {
      out.status = Status::Corruption(address + " sent an unexpected reply to '" +
                                      std::string(net::ChangeCommandName(command)) + "'");
      return out;
    }
    out.report = reply->report;
    if (out.report.from_driver) last_driver = address;
    return out;
  }

  // The first of `addresses` that answers (an error reply counts as an answer).
  AdminReply SendFirst(const std::vector<std::string>& addresses, const net::ChangeCommand& command,
                       std::chrono::milliseconds t) {
    std::string tried;
    bool foreign = false, down = false;
    for (const std::string& a : addresses) {
      AdminReply r = Send(a, command, t);
      if (!r.unreachable && !r.foreign) return r;
      foreign = foreign || r.foreign;
      down = down || r.unreachable;
      tried += (tried.empty() ? "" : "; ") + r.status.message();
    }
    AdminReply none;
    none.unreachable = down || !foreign;  // an empty list counts as unreachable
    none.foreign = foreign;
    none.status = Status::Unavailable(
        addresses.empty() ? "no node to ask" : transport.NoNode() + " answered (" + tried + ")");
    return none;
  }

  AdminReply StatusFrom(const std::string& preferred, const Call& call) {
    std::vector<std::string> order;
    const std::string first_choice = !preferred.empty() ? preferred : last_driver;
    if (!first_choice.empty()) order.push_back(first_choice);
    for (const auto& a : call.seeds) {
      if (a != first_choice) order.push_back(a);
    }
    AdminReply first = SendFirst(order, net::ChangeStatusCommand{}, call.timeout);
    if (!first.status.ok() || first.report.from_driver || first.report.driver_address.empty() ||
        first.report.driver_address == first.address) {
      return first;
    }
    AdminReply driver = Send(first.report.driver_address, net::ChangeStatusCommand{}, call.timeout);
    // A driver that answers with an older map than the first node (it was replaced, or it is a
    // removed node that learns nothing more) does not win.
    if (driver.status.ok() && driver.report.epoch >= first.report.epoch) return driver;
    return first;
  }

  AdminReply SendToDriver(const net::ChangeCommand& command, const std::string& address,
                          const Call& call) {
    if (!address.empty()) return Send(address, command, call.plan_timeout);
    AdminReply status = StatusFrom("", call);
    if (!status.status.ok()) return status;
    return Send(status.address, command, call.plan_timeout);
  }

  // The seeds to ask for a plan or begin: never the node being removed (it cannot drive its own
  // removal) nor the node being added.
  // A remove of the only member is refused here: the only node to ask is the one removed.
  StatusOr<std::vector<std::string>> Askees(const ChangeRequest& c, uint32_t node_id,
                                            const Call& call) {
    std::vector<std::string> out;
    std::optional<ClusterMap> map;
    if (c.kind == ChangeKind::kRemove) {
      if (auto m = Newest(call); m.ok()) map = std::move(*m);
      if (map && map->nodes().size() == 1 && map->FindNode(node_id) != nullptr) {
        return Status::InvalidArgument("cannot remove the last node");
      }
    }
    for (const auto& a : call.seeds) {
      if (c.kind != ChangeKind::kRemove && a == c.address) continue;
      if (map) {
        const ClusterNode* n = map->FindNodeByAddress(a);
        if (n != nullptr && n->id == node_id) continue;
      }
      out.push_back(a);
    }
    return out;
  }

  StatusOr<ClusterMap> Newest(const Call& call) {
    std::optional<ClusterMap> best;
    std::string errors;
    bool refused = false;
    for (const auto& a : call.seeds) {
      auto body = transport.Call(a, net::GetClusterMapRequest{}, call.timeout, nullptr);
      if (!body.ok()) {
        refused = refused || body.status().code() == Status::Code::kUnauthenticated;
        errors += (errors.empty() ? "" : "; ") + body.status().message();
        continue;
      }
      const auto* m = std::get_if<net::GetClusterMapResponse>(&*body);
      if (m == nullptr) continue;
      auto map = ClusterMap::Decode(m->map);
      if (!map.ok()) continue;
      if (transport.cluster_id() != 0 && map->cluster_id() != transport.cluster_id()) {
        errors += (errors.empty() ? "" : "; ") + a + " belongs to cluster " +
                  std::to_string(map->cluster_id()) + ", not to cluster " +
                  std::to_string(transport.cluster_id());
        continue;
      }
      if (!best || map->epoch() > best->epoch()) {
        best = std::move(map).value();
        newest_from = a;
      }
    }
    if (best) return std::move(*best);
    // A seed refused this Admin's secret: that, not "no node answered", is what to fix.
    if (refused) return Status::Unauthenticated(errors);
    const std::string who =
        transport.cluster_id() != 0 ? transport.NoNode() : std::string("no node of the cluster");
    return Status::Unavailable(who + " answered" +
                               (errors.empty() ? std::string() : " (" + errors + ")"));
  }

  // The change as sent: join resolves node id 0 from the node itself.
  StatusOr<ChangeRequest> Resolve(const ChangeRequest& c, const Call& call) {
    ChangeRequest out = c;
    if (c.kind == ChangeKind::kJoin && c.node_id == 0) {
      NodeProbe p = Probe(c.address, call);
      if (!p.reachable || !p.error.ok()) return p.error;
      int64_t reported = 0;
      if (p.stats) {
        if (auto it = p.stats->counters.find(std::string(stats::node_id));
            it != p.stats->counters.end()) {
          reported = it->second;
        }
      }
      if (reported <= 0 || reported > UINT32_MAX) {
        return Status::InvalidArgument(c.address + " did not report its node id");
      }
      out.node_id = static_cast<uint32_t>(reported);
    }
    if (c.kind == ChangeKind::kRemove || c.kind == ChangeKind::kParams) {
      out.address.clear();
      out.weight = 1.0;
    }
    if (c.kind == ChangeKind::kParams) out.node_id = 0;
    return out;
  }

  NodeProbe Probe(const std::string& address, const Call& call) {
    NodeProbe p;
    p.address = address;
    bool down = false;
    auto ping = transport.CallAnyCluster(address, net::PingRequest{}, call.timeout, &down);
    if (!ping.ok() && (down || ping.status().code() == Status::Code::kUnauthenticated)) {
      p.reachable = !down;  // a node that refused the secret did answer
      p.error = ping.status();
      return p;
    }
    p.reachable = true;
    if (auto map = transport.MapOf(address, call.timeout, nullptr); map.ok()) {
      p.map = std::move(*map);
    } else {
      p.unformed = admin::IsUnformedError(map.status());
    }
    const int64_t sent_ms = WallClockMs();
    auto body = transport.CallAnyCluster(address, net::StatsRequest{}, call.timeout, nullptr);
    const int64_t received_ms = WallClockMs();
    if (body.ok()) {
      if (const auto* s = std::get_if<net::StatsResponse>(&*body)) {
        p.stats = NodeStatsSnapshot{address, s->counters, s->gauges, s->info};
        if (auto it = s->counters.find(std::string(stats::wall_clock_ms));
            it != s->counters.end()) {
          p.round_trip_ms = received_ms - sent_ms;
          // The node read its clock somewhere in the round trip; the midpoint is the best guess.
          p.clock_offset_ms = it->second - (sent_ms + received_ms) / 2;
        }
        if (auto it = s->counters.find(std::string(admin::kFormedCounter));
            it != s->counters.end() && it->second == 0) {
          p.unformed = true;
        }
      }
    }
    return p;
  }

  // Probes every address in parallel (Probe sends no cluster id: safe to run concurrently).
  std::vector<NodeProbe> ProbeAll(const std::vector<std::string>& addresses, const Call& call) {
    std::vector<std::future<NodeProbe>> pending;
    for (const auto& a : addresses) {
      pending.push_back(
          std::async(std::launch::async, [this, a, &call] { return Probe(a, call); }));
    }
    std::vector<NodeProbe> out;
    for (auto& f : pending) out.push_back(f.get());
    return out;
  }

  AdminOptions options;
  AdminTransport transport;
  std::string last_driver;  // the last node that answered as the change's driver
  std::string newest_from;  // the node whose map Newest() returned
};

StatusOr<std::unique_ptr<Admin>> Admin::Create(AdminOptions options) {
  for (const auto& s : options.seeds) {
    std::string host;
    uint16_t port = 0;
    if (Status st = net::ParseHostPort(s, &host, &port); !st.ok()) return st;
  }
  if (options.timeout_ms == 0) return Status::InvalidArgument("timeout_ms must be positive");
  auto security = net::LoadClientSecurity(
      options.auth_secret_file,
      net::TlsFiles{options.tls_ca_file, options.tls_cert_file, options.tls_key_file});
  if (!security.ok()) return security.status();
  return std::unique_ptr<Admin>(
      new Admin(std::make_unique<Impl>(std::move(options), std::move(*security))));
}

Admin::Admin(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Admin::~Admin() = default;

uint64_t Admin::cluster_id() const { return impl_->transport.cluster_id(); }
void Admin::SetSeeds(std::vector<std::string> seeds) { impl_->options.seeds = std::move(seeds); }
const std::vector<std::string>& Admin::seeds() const { return impl_->options.seeds; }
void Admin::SetTimeouts(uint32_t timeout_ms, uint32_t plan_timeout_ms) {
  if (timeout_ms != 0) impl_->options.timeout_ms = timeout_ms;
  if (plan_timeout_ms != 0) impl_->options.plan_timeout_ms = plan_timeout_ms;
}

StatusOr<ClusterMap> Admin::FormCluster(const std::vector<ClusterNode>& nodes,
                                        const ClusterParams& params, uint64_t cluster_id,
                                        const AdminCallOptions& options) {
  const Call call = impl_->For(options);
  if (nodes.empty()) return Status::InvalidArgument("a cluster needs at least one node");
  if (cluster_id == 0) {
    std::random_device rd;
    cluster_id = ((uint64_t{rd()} << 32) | rd()) | 1;
  }
  if (Status s = admin::CheckDistinct(nodes); !s.ok()) return s;
  auto map = ClusterMap::Create(cluster_id, params, nodes, nodes.front().id);
  if (!map.ok()) return map.status();
  // Every check before any install: a refusal leaves every node as it was.
  std::vector<std::string> addresses;
  for (const ClusterNode& n : map->nodes()) addresses.push_back(n.address);
  if (Status s = admin::CheckFormation(*map, impl_->ProbeAll(addresses, call)); !s.ok()) {
    return s.WithContext("not forming the cluster (nothing changed)")
        .WithReason(Status::Reason::kNotApplied);
  }
  const std::string encoded = map->Encode();
  bool first = true;
  for (const ClusterNode& n : map->nodes()) {
    bool unreachable = false;
    auto r = impl_->transport.CallAnyCluster(
        n.address, net::InstallMapRequest{encoded, 0, /*adopt=*/true}, call.timeout, &unreachable);
    const std::string who = "node " + std::to_string(n.id) + " (" + n.address + ")";
    const auto* installed = r.ok() ? std::get_if<net::InstallMapResponse>(&*r) : nullptr;
    if (installed == nullptr || !installed->accepted) {
      Status s = !r.ok() ? r.status().WithContext(who + " did not take the cluster map")
                         : Status::Aborted(who + " refused the cluster map");
      // The nodes before this one hold the map already: the cluster is partly formed. At the
      // first node, only a definite refusal changed nothing.
      if (!first || ClassifyMutation(s) != MutationOutcome::kNotApplied) {
        s = s.WithReason(Status::Reason::kOutcomeUnknown);
      }
      return s;
    }
    first = false;
  }
  impl_->transport.Adopt(cluster_id, "the cluster formed by this Admin");
  return map;
}

StatusOr<ClusterMap> Admin::NewestMap(const AdminCallOptions& options) {
  return impl_->Newest(impl_->For(options));
}

StatusOr<RepairSummary> Admin::Repair(const RepairOptions& repair, const RepairProgressFn& progress,
                                      const AdminCallOptions& options) {
  const Call call = impl_->For(options);
  auto map = impl_->Newest(call);
  if (!map.ok()) return map.status();
  return admin::RunRepair(&impl_->transport, *map, repair, progress, call.timeout);
}

StatusOr<ClusterDescription> Admin::Describe(const AdminCallOptions& options) {
  const Call call = impl_->For(options);
  auto map = impl_->Newest(call);
  if (!map.ok()) return map.status();
  ClusterDescription d{*map, impl_->newest_from, {}};
  std::vector<std::string> addresses;
  for (const ClusterNode& n : map->nodes()) addresses.push_back(n.address);
  std::vector<NodeProbe> probes = impl_->ProbeAll(addresses, call);
  for (size_t i = 0; i < map->nodes().size(); ++i) {
    ClusterDescription::Member m;
    m.node = map->nodes()[i];
    m.probe = std::move(probes[i]);
    m.foreign = m.probe.map && m.probe.map->cluster_id() != map->cluster_id();
    d.members.push_back(std::move(m));
  }
  std::sort(d.members.begin(), d.members.end(),
            [](const auto& a, const auto& b) { return a.node.id < b.node.id; });
  return d;
}

NodeProbe Admin::Probe(const std::string& address, const AdminCallOptions& options) {
  return impl_->Probe(address, impl_->For(options));
}

StatusOr<ClusterMap> Admin::MapOf(const std::string& address, const AdminCallOptions& options) {
  return impl_->transport.MapOf(address, impl_->For(options).timeout, nullptr);
}

Status Admin::Ping(const std::string& address, const AdminCallOptions& options) {
  auto r = impl_->transport.CallAnyCluster(address, net::PingRequest{}, impl_->For(options).timeout,
                                           nullptr);
  return r.ok() ? Status::OK() : r.status();
}

StatusOr<NodeStatsSnapshot> Admin::NodeStats(const std::string& address,
                                             const AdminCallOptions& options) {
  auto body =
      impl_->transport.Call(address, net::StatsRequest{}, impl_->For(options).timeout, nullptr);
  if (!body.ok()) return body.status();
  const auto* s = std::get_if<net::StatsResponse>(&*body);
  if (s == nullptr) return Status::Corruption(address + " sent an unexpected reply to stats");
  return NodeStatsSnapshot{address, s->counters, s->gauges, s->info};
}

AdminReply Admin::Plan(const ChangeRequest& change, const AdminCallOptions& options) {
  const Call call = impl_->For(options);
  auto resolved = impl_->Resolve(change, call);
  if (!resolved.ok()) return AdminReply{resolved.status(), false, false, change.address, {}};
  auto askees = impl_->Askees(*resolved, resolved->node_id, call);
  if (!askees.ok()) return AdminReply{askees.status(), false, false, "", {}};
  return impl_->SendFirst(*askees, net::PlanChangeCommand{*resolved, ChangeThrottle{}},
                          call.plan_timeout);
}

AdminReply Admin::Begin(const ChangeRequest& change, const ChangeThrottle& throttle,
                        const std::string& address, const AdminCallOptions& options) {
  const Call call = impl_->For(options);
  auto resolved = impl_->Resolve(change, call);
  if (!resolved.ok()) return AdminReply{resolved.status(), false, false, change.address, {}};
  const net::ChangeCommand begin = net::BeginChangeCommand{*resolved, throttle};
  if (!address.empty()) return impl_->Send(address, begin, call.plan_timeout);
  auto askees = impl_->Askees(*resolved, resolved->node_id, call);
  if (!askees.ok()) return AdminReply{askees.status(), false, false, "", {}};
  return impl_->SendFirst(*askees, begin, call.plan_timeout);
}

AdminReply Admin::SetParams(uint32_t replicas, uint32_t write_quorum, uint32_t read_quorum,
                            const ChangeThrottle& throttle, const AdminCallOptions& options) {
  ChangeRequest change;
  change.kind = ChangeKind::kParams;
  change.replicas = replicas;
  change.write_quorum = write_quorum;
  change.read_quorum = read_quorum;
  return Begin(change, throttle, "", options);
}

AdminReply Admin::ChangeStatus(const std::string& preferred, const AdminCallOptions& options) {
  return impl_->StatusFrom(preferred, impl_->For(options));
}
AdminReply Admin::Cancel(const std::string& address, const AdminCallOptions& options) {
  return impl_->SendToDriver(net::CancelChangeCommand{}, address, impl_->For(options));
}
AdminReply Admin::Resume(const std::string& address, const AdminCallOptions& options) {
  return impl_->SendToDriver(net::ResumeChangeCommand{}, address, impl_->For(options));
}

AdminReply Admin::SetThrottle(std::optional<uint64_t> rate_bytes_per_s,
                              std::optional<uint32_t> streams_per_node, const std::string& address,
                              const AdminCallOptions& options) {
  if (!rate_bytes_per_s && !streams_per_node) {
    return AdminReply{Status::InvalidArgument("throttle needs a rate and/or a stream count"),
                      false,
                      false,
                      "",
                      {}};
  }
  return impl_->SendToDriver(net::ThrottleChangeCommand{rate_bytes_per_s, streams_per_node},
                             address, impl_->For(options));
}

std::optional<AdminReply> Admin::AwaitEffect(const ChangeEffect& effect,
                                             std::chrono::milliseconds wait,
                                             const AdminCallOptions& options) {
  const Call call = impl_->For(options);
  const auto deadline = std::chrono::steady_clock::now() + wait;
  for (;;) {
    AdminReply r = impl_->StatusFrom("", call);
    if (r.status.ok() && effect.ShownBy(r.report)) return r;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) return std::nullopt;
    // Polled: a commit that landed shows within a gossip round or two.
    std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
        std::chrono::milliseconds(250), deadline - now));
  }
}

ChangeOutcome Admin::ResolveOutcome(const AdminReply& reply, const ChangeEffect& effect,
                                    std::chrono::milliseconds wait,
                                    const AdminCallOptions& options) {
  ChangeOutcome out;
  if (reply.status.ok()) {
    out.outcome = MutationOutcome::kApplied;
    out.report = reply.report;
    out.address = reply.address;
    return out;
  }
  // A node of another cluster refused it, or it could not apply to the change as it was: no
  // node of this cluster can have taken it.
  if (reply.foreign || !effect.Possible()) {
    out.outcome = MutationOutcome::kNotApplied;
    return out;
  }
  if (auto shown = AwaitEffect(effect, wait, options)) {
    out.outcome = MutationOutcome::kApplied;
    out.report = shown->report;
    out.address =
        shown->report.driver_address.empty() ? shown->address : shown->report.driver_address;
    out.confirmed = true;
    return out;
  }
  out.outcome = ClassifyMutation(reply.status);
  return out;
}

int64_t Admin::SumCounter(const std::string& name, const AdminCallOptions& options) {
  const Call call = impl_->For(options);
  int64_t sum = 0;
  for (const auto& a : call.seeds) {
    auto s = NodeStats(a, options);
    if (!s.ok()) continue;
    if (auto it = s->counters.find(name); it != s->counters.end()) sum += it->second;
  }
  return sum;
}

bool ChangeEnded(const ChangeReport& r) {
  const ChangeState s = r.record.state;
  return s == ChangeState::kDone || s == ChangeState::kFailed || s == ChangeState::kCancelled;
}

}  // namespace shardkv
