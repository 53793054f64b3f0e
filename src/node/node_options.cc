// ValidateNodeOptions: every NodeOptions value a node cannot work with is refused before
// Node::Start touches anything (findings row 38: a bad --listen used to surface only after
// the node had opened its store, and was reported after "node 1 stopped").
#include "node/node_options.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <string_view>

#include "shardkv/options.h"

namespace shardkv {
namespace {

constexpr uint32_t kMaxPort = 65535;

bool IsHostChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_' || c == ':';
}

template <typename T>
Status CheckRange(std::string_view flag, T value, T min, T max) {
  if (value >= min && value <= max) return Status::OK();
  return Status::InvalidArgument(std::string(flag) + " must be between " + std::to_string(min) +
                                 " and " + std::to_string(max) + ", not " + std::to_string(value));
}

}  // namespace

namespace node {

Status ParseHostPort(const std::string& address, const std::string& what, std::string* host,
                     uint16_t* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) {
    return Status::InvalidArgument(what + " '" + address + "' is not host:port");
  }
  *host = address.substr(0, colon);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  } else if (host->find(':') != std::string::npos) {
    return Status::InvalidArgument(what + " '" + address +
                                   "': write an IPv6 host in brackets, as [::1]:7000");
  }
  for (char c : *host) {
    if (!IsHostChar(c)) {
      return Status::InvalidArgument(what + " '" + address + "' has a bad host name");
    }
  }
  if (host->empty()) *host = "127.0.0.1";
  const std::string p = address.substr(colon + 1);
  if (p.empty() || p.size() > 5 || p.find_first_not_of("0123456789") != std::string::npos ||
      std::stoul(p) > kMaxPort) {
    return Status::InvalidArgument(what + " '" + address + "' has a bad port (0-" +
                                   std::to_string(kMaxPort) + ")");
  }
  *port = static_cast<uint16_t>(std::stoul(p));
  return Status::OK();
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;
    return IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127;
  }
  return false;
}

Status CheckListenerProtected(const std::string& listener, const std::string& host,
                              const NodeOptions& o) {
  if (IsLoopbackHost(host) || !o.auth_secret_file.empty() || o.insecure) return Status::OK();
  return Status::InvalidArgument(
      listener + " " + host + " is not a loopback address and the node has no secret, so anyone " +
      "who can reach it could read and change its data (protected mode). Either give the " +
      "cluster a secret (--auth-secret-file FILE, on every node and client), or pass " +
      "--insecure to listen without authentication");
}

}  // namespace node

uint64_t EffectiveRepairPeriodMs(const NodeOptions& o) {
  const uint64_t period = o.repair_period_ms != 0 ? o.repair_period_ms : o.tombstone_grace_ms / 10;
  return std::clamp(period, kMinRepairPeriodMs, kMaxRepairPeriodMs);
}

Status ValidateNodeOptions(const NodeOptions& o) {
  SHARDKV_RETURN_IF_ERROR(CheckRange<uint32_t>("--id", o.id, 1, kMaxNodeId));
  if (o.data_dir.empty()) return Status::InvalidArgument("--data: a data directory is required");
  std::string host;
  uint16_t port = 0;
  SHARDKV_RETURN_IF_ERROR(node::ParseHostPort(o.listen, "--listen", &host, &port));
  SHARDKV_RETURN_IF_ERROR(node::CheckListenerProtected("--listen", host, o));
  if (!o.metrics_listen.empty()) {
    SHARDKV_RETURN_IF_ERROR(
        node::ParseHostPort(o.metrics_listen, "--metrics-listen", &host, &port));
    SHARDKV_RETURN_IF_ERROR(node::CheckListenerProtected("--metrics-listen", host, o));
  }
  if (!o.redis_listen.empty()) {
    SHARDKV_RETURN_IF_ERROR(node::ParseHostPort(o.redis_listen, "--redis-listen", &host, &port));
    SHARDKV_RETURN_IF_ERROR(node::CheckListenerProtected("--redis-listen", host, o));
  }
  const bool any_tls =
      !o.tls_cert_file.empty() || !o.tls_key_file.empty() || !o.tls_ca_file.empty();
  if (any_tls && (o.tls_cert_file.empty() || o.tls_key_file.empty() || o.tls_ca_file.empty())) {
    // TLS is mutual: a node both serves and dials with its certificate (the files themselves
    // are checked when the node starts).
    return Status::InvalidArgument(
        "--tls-cert, --tls-key and --tls-ca go together: give all three or none");
  }
  if (!o.client_secret_file.empty() && o.auth_secret_file.empty()) {
    return Status::InvalidArgument(
        "--client-secret-file needs --auth-secret-file (the cluster secret the nodes use)");
  }
  if (!o.advertise.empty()) {
    // What peers and clients dial: it needs a concrete host and port (no "any" address, no
    // port 0, no empty host meaning "this host").
    SHARDKV_RETURN_IF_ERROR(node::ParseHostPort(o.advertise, "--advertise", &host, &port));
    const size_t colon = o.advertise.rfind(':');
    if (colon == 0) {
      return Status::InvalidArgument("--advertise '" + o.advertise + "' has no host");
    }
    if (host == "0.0.0.0" || host == "::" || host == "0:0:0:0:0:0:0:0") {
      return Status::InvalidArgument("--advertise '" + o.advertise +
                                     "' is the any-address; give the address peers dial");
    }
    if (port == 0) {
      return Status::InvalidArgument("--advertise '" + o.advertise +
                                     "' has port 0; give the port peers dial");
    }
  }
  SHARDKV_RETURN_IF_ERROR(CheckRange<int>("--threads", o.io_threads, 1, kMaxIoThreads));
  SHARDKV_RETURN_IF_ERROR(
      CheckRange<size_t>("--max-key-bytes", o.max_key_bytes, 1, kMaxKeyBytesLimit));
  SHARDKV_RETURN_IF_ERROR(
      CheckRange<size_t>("--max-value-bytes", o.max_value_bytes, 1, kMaxValueBytesLimit));
  if (o.max_key_bytes + o.max_value_bytes + kFrameOverheadBytes > o.max_frame_bytes) {
    return Status::InvalidArgument(
        "the largest key and value (" + std::to_string(o.max_key_bytes + o.max_value_bytes) +
        " bytes) do not fit in a frame of " + std::to_string(o.max_frame_bytes) + " bytes");
  }
  SHARDKV_RETURN_IF_ERROR(CheckRange<uint64_t>("--tombstone-grace (ms)", o.tombstone_grace_ms, 1000,
                                               kMaxTombstoneGraceSeconds * 1000));
  if (o.repair_period_ms != 0) {
    SHARDKV_RETURN_IF_ERROR(CheckRange<uint64_t>("--repair-period (ms)", o.repair_period_ms,
                                                 kMinRepairPeriodMs, kMaxRepairPeriodMs));
  }
  SHARDKV_RETURN_IF_ERROR(CheckRange<uint64_t>("--repair-rate", o.repair_rate, 1, kMaxRepairRate));
  for (const std::string& seed : o.seeds) {
    SHARDKV_RETURN_IF_ERROR(node::ParseHostPort(seed, "--seeds", &host, &port));
    if (port == 0) return Status::InvalidArgument("--seeds '" + seed + "' has port 0");
  }
  if (o.rebuild && o.seeds.empty()) {
    return Status::InvalidArgument("--rebuild needs --seeds (the nodes to rebuild from)");
  }
  return Status::OK();
}

}  // namespace shardkv
