#include "client/client_core.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <vector>

#include "shardkv/mutation_outcome.h"

namespace shardkv {
namespace {

// Errors worth another attempt: the node could not be reached or did not answer in time, or it
// told us our map is stale. Anything else (bad input, not found, quorum failure reported by a
// coordinator that did run the request) goes back to the caller as is.
bool Transient(const Status& s) {
  switch (s.code()) {
    case Status::Code::kUnavailable:
    case Status::Code::kTimeout:
    case Status::Code::kStaleEpoch:
      return true;
    default:
      return false;
  }
}

// A node refusing a request for another cluster (src/node/kv_service.cc, reason kWrongCluster)
// says "request for cluster X reached node N of cluster Y". Returns Y (0 where the message does
// not name it: the id is only shown to the user), or nullopt for any other error.
std::optional<uint64_t> ForeignClusterIn(const Status& s) {
  if (!s.Is(Status::Reason::kWrongCluster)) return std::nullopt;
  const std::string& m = s.message();
  const std::string marker = " of cluster ";
  const size_t at = m.rfind(marker);
  if (at == std::string::npos) return 0;
  uint64_t id = 0;
  const char* first = m.data() + at + marker.size();
  const char* last = m.data() + m.size();
  auto [ptr, ec] = std::from_chars(first, last, id);
  if (ec != std::errc() || ptr == first) return 0;
  return id;
}

// A node refusing the timestamp this client relayed (src/node/kv_service.cc: "client timestamp
// rejected: HLC timestamp T is N ms ahead of the local clock ..."). Refused before anything ran.
bool TimestampRejected(const Status& s) {
  return s.code() == Status::Code::kInvalidArgument && s.Is(Status::Reason::kClockRejected);
}

// Requests that change data: their error must not hide an earlier attempt that may have landed.
bool Mutating(const net::Request& r) {
  return std::holds_alternative<net::PutRequest>(r.body) ||
         std::holds_alternative<net::DeleteRequest>(r.body) ||
         std::holds_alternative<net::MultiPutRequest>(r.body) ||
         std::holds_alternative<net::ExpireRequest>(r.body) ||
         std::holds_alternative<net::IncrRequest>(r.body) ||
         std::holds_alternative<net::HashWriteRequest>(r.body) ||
         std::holds_alternative<net::SetWriteRequest>(r.body);
}

// Requests that carry at least this many bytes of keys and values are "large" (see Dispatch).
constexpr size_t kLargeRequestBytes = size_t{1} << 20;

size_t PayloadBytes(const net::Request& req) {
  if (const auto* put = std::get_if<net::PutRequest>(&req.body)) {
    return put->key.size() + put->value.size();
  }
  if (const auto* multi = std::get_if<net::MultiPutRequest>(&req.body)) {
    size_t bytes = 0;
    for (const net::PutRequest& item : multi->items) bytes += item.key.size() + item.value.size();
    return bytes;
  }
  return 0;
}

}  // namespace

struct Client::Core::Attempt {
  net::Request request;
  std::optional<uint64_t> token;
  std::string fixed_address;
  Clock::time_point deadline;
  int tries = 0;
  size_t replica = 0;   // which replica of the token to try next
  std::string address;  // where the current attempt went
  Status last_error;
  // An error a node reported (say, a quorum failure naming the dead replicas) explains more than
  // a later "connection refused" from the next replica tried, so it is what the caller sees.
  Status server_error;
  // This attempt already dropped the client's session timestamp once (see OnReply).
  bool dropped_ts = false;
  // A mutation's first failed attempt that may have been applied (a timeout after sending, a
  // quorum miss): if a later attempt fails definitely (refused, unreachable), the caller must
  // still learn that the outcome is unknown, not that nothing happened.
  Status maybe_applied;
  ResponseCallback done;

  // Remembers `error` if it leaves this mutation's outcome open.
  void NoteFailure(const Status& error) {
    if (maybe_applied.ok() && Mutating(request) &&
        ClassifyMutation(error) == MutationOutcome::kIndeterminate) {
      maybe_applied = error;
    }
  }
  // `error`, or when an earlier attempt may have been applied and `error` says nothing was,
  // the same code with a message that says the outcome is unknown (mutation_outcome.h).
  Status Final(Status error) const {
    if (maybe_applied.ok() || ClassifyMutation(error) != MutationOutcome::kNotApplied) {
      return error;
    }
    return Status(error.code(), Status::Reason::kOutcomeUnknown,
                  std::string(kOutcomeUnknown) + ": an earlier attempt may have been applied (" +
                      maybe_applied.message() + "); then " + error.message());
  }
};

Client::Core::Core(ClientOptions options, net::ClientSecurity security)
    : options_(std::move(options)),
      auth_secret_(std::move(security.auth_secret)),
      tls_(std::move(security.tls)),
      io_(std::make_shared<net::IoContext>(std::max(1, options_.io_threads), "shardkv-client")) {
  cluster_id_.store(options_.cluster_id);
}

bool Client::Core::AcceptCluster(const std::string& address, uint64_t id) {
  uint64_t expected = 0;
  if (cluster_id_.compare_exchange_strong(expected, id)) {
    common::MutexLock lock(&mu_);
    adopted_from_ = address;
    return true;
  }
  return expected == id;
}

Status Client::Core::WrongCluster(const std::string& address, uint64_t theirs) const {
  std::string source = options_.cluster_id_source;
  if (source.empty()) {
    common::MutexLock lock(&mu_);
    if (!adopted_from_.empty())
      source = "the cluster this client first reached at " + adopted_from_;
  }
  return Status(Status::Code::kUnavailable, Status::Reason::kWrongCluster,
                address + " belongs to cluster " + std::to_string(theirs) + ", not cluster " +
                    std::to_string(cluster_id()) + (source.empty() ? "" : " (" + source + ")"));
}

Client::Core::~Core() { Close(); }

void Client::Core::Close() {
  std::map<std::string, std::unique_ptr<net::RpcClient>> rpcs;
  {
    common::MutexLock lock(&mu_);
    if (closed_) return;
    closed_ = true;
    rpcs.swap(rpcs_);
  }
  for (auto& [address, rpc] : rpcs) rpc->Close();
  rpcs.clear();
  io_->Stop();
}

net::Consistency Client::Core::WireConsistency(Consistency c) const {
  // One enum on both sides: kDefault becomes the client's own default, which may be kDefault (the
  // cluster's configured level).
  return c == Consistency::kDefault ? options_.consistency : c;
}

net::RpcClient* Client::Core::Rpc(const std::string& address) {
  common::MutexLock lock(&mu_);
  if (closed_) return nullptr;
  auto it = rpcs_.find(address);
  if (it == rpcs_.end()) {
    net::RpcClientOptions ro;
    ro.connect_timeout = std::chrono::milliseconds(std::min<uint32_t>(options_.timeout_ms, 3000));
    ro.connections = std::max(1, options_.connections_per_node);
    ro.auth_secret = auth_secret_;
    ro.tls = tls_;
    it = rpcs_.emplace(address, std::make_unique<net::RpcClient>(address, ro, io_)).first;
  }
  return it->second.get();
}

std::shared_ptr<const ClusterMap> Client::Core::map() const {
  common::MutexLock lock(&mu_);
  return map_;
}

bool Client::Core::Suspect(const std::string& address) {
  common::MutexLock lock(&mu_);
  auto it = suspect_until_.find(address);
  if (it == suspect_until_.end()) return false;
  if (Clock::now() < it->second) return true;
  suspect_until_.erase(it);
  return false;
}

void Client::Core::MarkSuspect(const std::string& address) {
  common::MutexLock lock(&mu_);
  suspect_until_[address] = Clock::now() + std::chrono::seconds(2);
}

void Client::Core::ObserveTimestamp(uint64_t ts) {
  uint64_t seen = max_seen_ts_.load(std::memory_order_relaxed);
  while (ts > seen && !max_seen_ts_.compare_exchange_weak(seen, ts, std::memory_order_relaxed)) {
  }
}

void Client::Core::OfferMap(const std::string& encoded) {
  auto decoded = ClusterMap::Decode(encoded);
  if (!decoded.ok()) return;  // a bad map in a reply is ignored; the reply itself still counts
  if (decoded->cluster_id() != cluster_id()) return;  // never another cluster's map
  common::MutexLock lock(&mu_);
  if (!map_ || (decoded->cluster_id() == map_->cluster_id() && decoded->epoch() > map_->epoch())) {
    map_ = std::make_shared<const ClusterMap>(std::move(decoded).value());
  }
}

Status Client::Core::RefreshMap() {
  std::vector<std::string> candidates;
  if (auto m = map()) {
    for (const ClusterNode& n : m->nodes()) candidates.push_back(n.address);
  }
  for (const std::string& s : options_.seeds) {
    if (std::find(candidates.begin(), candidates.end(), s) == candidates.end()) {
      candidates.push_back(s);
    }
  }
  if (candidates.empty()) return Status::InvalidArgument("no seed addresses given");
  std::string errors;
  std::map<uint64_t, std::vector<std::string>> foreign;  // cluster id -> addresses
  // A first map from a lone node (a fresh node nobody adopted yet, say one left behind by an
  // interrupted add-node) is used only if no seed belongs to a real cluster.
  std::optional<std::pair<std::string, ClusterMap>> lone;  // (address, map)
  const bool first_map = map() == nullptr;
  Status refused;  // the first node that refused this client's secret
  for (const std::string& address : candidates) {
    net::RpcClient* rpc = Rpc(address);
    if (rpc == nullptr) return Status::Aborted("client closed");
    net::Request req;
    req.body = net::GetClusterMapRequest{};
    auto reply = rpc->CallSync(std::move(req), std::chrono::milliseconds(options_.timeout_ms));
    Status s = reply.ok() ? reply->status() : reply.status();
    if (s.ok()) {
      const auto* body = std::get_if<net::GetClusterMapResponse>(&reply->body);
      if (body == nullptr) {
        s = Status::Corruption(address + ": unexpected reply to get-cluster-map");
      } else {
        auto decoded = ClusterMap::Decode(body->map);
        const uint64_t expected = cluster_id();
        if (decoded.ok() && expected != 0 && decoded->cluster_id() != expected) {
          MarkSuspect(address);
          foreign[decoded->cluster_id()].push_back(address);
          continue;
        }
        ObserveTimestamp(reply->ts);
        if (decoded.ok() && first_map && decoded->nodes().size() == 1 && candidates.size() > 1) {
          if (!lone) lone = std::make_pair(address, *decoded);
          continue;
        }
        if (decoded.ok() && !AcceptCluster(address, decoded->cluster_id())) {
          // Another refresh adopted a different id meanwhile.
          foreign[decoded->cluster_id()].push_back(address);
          continue;
        }
        if (decoded.ok()) {
          common::MutexLock lock(&mu_);
          if (!map_ || decoded->epoch() >= map_->epoch()) {
            map_ = std::make_shared<const ClusterMap>(std::move(decoded).value());
          }
          return Status::OK();
        }
        s = decoded.status().WithContext(address);
      }
    }
    // A refused secret is not an unreachable node: if no seed answers, that is the error.
    if (s.code() == Status::Code::kUnauthenticated && refused.ok()) refused = s;
    if (!errors.empty()) errors += "; ";
    errors += s.message();
  }
  if (lone && AcceptCluster(lone->first, lone->second.cluster_id())) {
    common::MutexLock lock(&mu_);
    if (!map_) map_ = std::make_shared<const ClusterMap>(std::move(lone->second));
    return Status::OK();
  }
  if (!refused.ok()) {
    return Status::Unauthenticated(candidates.size() > 1 ? errors : refused.message());
  }
  if (!foreign.empty()) {
    // "A and B belong to cluster X, not cluster Y (...)": the wrong-cluster answers first, as
    // they explain why nothing of the expected cluster answered.
    std::string message;
    for (const auto& [theirs, addresses] : foreign) {
      std::string who;
      for (size_t i = 0; i < addresses.size(); ++i) {
        who += (i == 0 ? "" : i + 1 == addresses.size() ? " and " : ", ") + addresses[i];
      }
      std::string one = WrongCluster(who, theirs).message();
      if (addresses.size() > 1) one.replace(who.size(), 8, " belong");  // " belongs"
      message += (message.empty() ? "" : "; ") + one;
    }
    return Status::Unavailable(message + (errors.empty() ? "" : "; other nodes: " + errors));
  }
  return Status::Unavailable("no node answered (" + errors + ")");
}

void Client::Core::Send(net::Request request, std::optional<uint64_t> token, std::string address,
                        ResponseCallback done) {
  auto attempt = std::make_shared<Attempt>();
  attempt->request = std::move(request);
  attempt->token = token;
  attempt->fixed_address = std::move(address);
  attempt->deadline = Clock::now() + std::chrono::milliseconds(options_.timeout_ms);
  attempt->done = std::move(done);
  Dispatch(std::move(attempt));
}

void Client::Core::Dispatch(std::shared_ptr<Attempt> attempt) {
  std::string address = attempt->fixed_address;
  auto current = map();
  if (address.empty()) {
    if (!current) {
      attempt->done(Status::Unavailable("no cluster map"));
      return;
    }
    const std::vector<uint32_t> replicas = current->ReadReplicas(*attempt->token);
    if (replicas.empty()) {
      attempt->done(Status::Internal("the cluster map places no replica for this key"));
      return;
    }
    // The first replica that is not suspect, starting from the attempt's position.
    for (size_t k = 0; k < replicas.size(); ++k) {
      address = current->FindNode(replicas[(attempt->replica + k) % replicas.size()])->address;
      if (!Suspect(address)) {
        attempt->replica += k;
        break;
      }
    }
  }
  attempt->address = address;
  net::Request& req = attempt->request;
  if (current) req.epoch = current->epoch();
  // The node refuses a request for another cluster (nonzero id): the check that matters when
  // this client's cluster stopped and another one took its ports.
  req.cluster_id = cluster_id();
  req.client_ts = max_seen_ts();
  ++attempt->tries;
  net::RpcClient* rpc = Rpc(address);
  if (rpc == nullptr) {
    attempt->done(Status::Aborted("client closed"));
    return;
  }
  // Each attempt gets a share of the budget, so a node that accepts connections but never
  // answers (paused, overloaded) leaves time to try another replica.
  // A large write is the exception: it takes its time on a healthy node (network, WAL and every
  // replica's copy), and sending it again after a share ran out only doubles that work (a 16 MiB
  // put failed after four resends of 1.25 s each). It gets the whole remaining budget.
  const auto per_attempt = std::chrono::milliseconds(std::max<uint32_t>(
      200, options_.timeout_ms / static_cast<uint32_t>(options_.max_retries + 1)));
  const auto attempt_deadline = PayloadBytes(req) >= kLargeRequestBytes
                                    ? attempt->deadline
                                    : std::min(attempt->deadline, Clock::now() + per_attempt);
  // The same deadline in wall-clock time, so a node that gets this request only after the client
  // gave up on it (it was paused) drops it instead of coordinating a stale write.
  req.deadline_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch() + (attempt_deadline - Clock::now()))
          .count());
  auto self = shared_from_this();
  // Past its share the attempt pings the node: a paused one is left for the next replica, a
  // slow but live one (a 16 MiB value on a loaded machine) may use the rest of the budget.
  rpc->Call(
      req, attempt_deadline, attempt->deadline,
      [self, attempt](StatusOr<net::Response> reply) { self->OnReply(attempt, std::move(reply)); });
}

void Client::Core::OnReply(std::shared_ptr<Attempt> attempt, StatusOr<net::Response> reply) {
  Status error;
  if (reply.ok()) {
    error = reply->status();
    const std::optional<uint64_t> theirs = ForeignClusterIn(error);
    if (!theirs) {  // another cluster's clock and map are nothing to this client
      ObserveTimestamp(reply->ts);
      if (!reply->cluster_map.empty()) OfferMap(reply->cluster_map);
    }
    if (theirs) {
      // The node belongs to another cluster (say, it took a stopped cluster's port, or it lost
      // its data and started afresh): skip it, like an unreachable node, and say so.
      MarkSuspect(attempt->address);
      error = WrongCluster(attempt->address, *theirs);
      attempt->server_error = error;
      if (!attempt->fixed_address.empty()) {
        attempt->done(std::move(error));
        return;
      }
    } else if (TimestampRejected(error) && !attempt->dropped_ts) {
      // The newest timestamp this client saw came from a clock too far ahead of this node's
      // (a skewed node answered it once). Relaying it would make every healthy node refuse this
      // client from now on, so it is dropped and the request sent again, once. The request was
      // refused before it ran. The order of this client's writes still holds where it matters:
      // a later write stamped below an earlier one is re-stamped by its coordinator, or fails
      // as not applied if that clock cannot pass it (design.md "Re-stamping").
      attempt->dropped_ts = true;
      max_seen_ts_.store(0, std::memory_order_relaxed);
      ObserveTimestamp(reply->ts);
      attempt->last_error = error;
      Dispatch(std::move(attempt));
      return;
    } else if (error.ok() || !Transient(error)) {
      if (!error.ok() && !attempt->maybe_applied.ok()) {
        Status final_error = attempt->Final(error);
        if (!(final_error == error)) return attempt->done(std::move(final_error));
      }
      attempt->done(std::move(reply));
      return;
    } else {
      attempt->server_error = error;
    }
  } else {
    error = reply.status();
    if (error.code() == Status::Code::kUnauthenticated) {
      // The node refused this client's secret: another attempt with the same secret, on this
      // node or the next replica, would be refused the same way.
      attempt->done(attempt->Final(std::move(error)));
      return;
    }
    if (error.code() == Status::Code::kUnavailable || error.code() == Status::Code::kTimeout) {
      MarkSuspect(attempt->address);
    }
  }
  attempt->last_error = error;
  attempt->NoteFailure(error);
  // An increment is not idempotent: once an attempt may have been applied, another could count
  // it twice. The caller learns that the outcome is unknown instead (Redis clients do not retry
  // INCR either).
  if (std::holds_alternative<net::IncrRequest>(attempt->request.body) &&
      !attempt->maybe_applied.ok()) {
    return attempt->done(attempt->Final(error));
  }
  // A stale map is fixed by the map the reply carried: same replica again. An unreachable or
  // slow node is skipped: next replica.
  if (error.code() != Status::Code::kStaleEpoch) ++attempt->replica;
  if (attempt->tries > options_.max_retries || Clock::now() >= attempt->deadline ||
      error.code() == Status::Code::kAborted) {
    if (!attempt->server_error.ok()) error = attempt->server_error;
    attempt->done(attempt->Final(
        Status(error.code(), error.message() + " (after " + std::to_string(attempt->tries) +
                                 " attempt" + (attempt->tries == 1 ? "" : "s") + ")")));
    return;
  }
  Dispatch(std::move(attempt));
}

}  // namespace shardkv
