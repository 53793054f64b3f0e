#include "shardkv/ketama.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace shardkv {
namespace {

// Constants from libmemcached 1.1.4 (libmemcached-1.0/defaults.h and hosts.cc).
constexpr uint32_t kDefaultPort = 11211;    // MEMCACHED_DEFAULT_PORT
constexpr uint32_t kPointsPerServer = 160;  // MEMCACHED_POINTS_PER_SERVER_KETAMA
constexpr uint32_t kPointsPerHash = 4;      // one MD5 digest yields four 32-bit points
constexpr size_t kMaxHostLength = 1024;     // libmemcached rejects names >= NI_MAXHOST (1025)
constexpr int kMaxPrefixBits = 16;          // caps the prefix table at 256 KiB
constexpr size_t kMaxNodes = size_t{1} << 24;

struct Endpoint {
  std::string host;
  uint32_t port = kDefaultPort;
};

Status BadName(std::string_view name, std::string_view why) {
  return Status::InvalidArgument("ketama: node '" + std::string(name) + "': " + std::string(why));
}

StatusOr<uint32_t> ParsePort(std::string_view name, std::string_view text) {
  if (text.empty() || text.size() > 5) return BadName(name, "port must be 1..65535");
  uint32_t port = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return BadName(name, "port must be 1..65535");
    port = port * 10 + static_cast<uint32_t>(c - '0');
  }
  if (port == 0 || port > 65535) return BadName(name, "port must be 1..65535");
  return port;
}

// "host", "host:port", "[v6addr]" or "[v6addr]:port". libmemcached is handed the bare host (no
// brackets), so that is what goes into the point strings.
StatusOr<Endpoint> ParseEndpoint(std::string_view name) {
  Endpoint ep;
  std::string_view host = name;
  std::string_view port;
  bool has_port = false;
  if (!name.empty() && name.front() == '[') {
    size_t close = name.find(']');
    if (close == std::string_view::npos) return BadName(name, "unterminated '['");
    host = name.substr(1, close - 1);
    std::string_view rest = name.substr(close + 1);
    if (!rest.empty()) {
      if (rest.front() != ':') return BadName(name, "expected ':port' after ']'");
      port = rest.substr(1);
      has_port = true;
    }
  } else {
    size_t colon = name.find(':');
    if (colon != std::string_view::npos) {
      // A second colon means an unbracketed IPv6 address: "::1:11211" is ambiguous.
      if (name.find(':', colon + 1) != std::string_view::npos) {
        return BadName(name, "write IPv6 addresses as [addr] or [addr]:port");
      }
      host = name.substr(0, colon);
      port = name.substr(colon + 1);
      has_port = true;
    }
  }
  if (host.empty()) return BadName(name, "host is empty");
  if (host.size() > kMaxHostLength) return BadName(name, "host is longer than 1024 bytes");
  // The host becomes a C string inside libmemcached, and a leading '/' makes it a unix socket,
  // whose point strings use port 0: neither can be reproduced from a "host:port" name.
  if (host.find('\0') != std::string_view::npos) return BadName(name, "host contains NUL");
  if (host.front() == '/') return BadName(name, "unix sockets are not supported");
  ep.host = std::string(host);
  if (has_port) {
    SHARDKV_ASSIGN_OR_RETURN(ep.port, ParsePort(name, port));
  }
  return ep;
}

// libmemcached's update_continuum() computes this in float32, step by step. The float rounding
// is observable: weights {1 x9, 2 x5, 5 x1} give the weight-5 server 496 points, not the 500
// that exact (or double) arithmetic gives, so the steps must not be merged or widened.
uint32_t PointsForServer(uint32_t weight, uint64_t total_weight, uint32_t live_servers) {
  float pct = static_cast<float>(weight) / static_cast<float>(total_weight);
  // volatile keeps the compiler from fusing the multiply and the add below into one FMA
  // (-ffp-contract=fast with -march=native), which would round once instead of twice.
  volatile float scaled =
      pct * static_cast<float>(kPointsPerServer) / 4.0F * static_cast<float>(live_servers);
  float x = scaled + 0.0000000001F;
  return static_cast<uint32_t>(std::floor(static_cast<double>(x)) * 4);
}

// Point string for the i-th digest of a server: libmemcached's "%s-%u" on the default port, else
// "%s:%u-%u" (hosts.cc, the non-spy branch). The host has no NUL, so "%s" prints all of it.
std::string PointString(const Endpoint& ep, uint32_t i) {
  std::string s = ep.host;
  if (ep.port != kDefaultPort) {
    s += ':';
    s += std::to_string(ep.port);
  }
  s += '-';
  s += std::to_string(i);
  return s;
}

uint32_t LoadLe32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
         static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
}

}  // namespace

StatusOr<std::unique_ptr<Ketama>> Ketama::Build(std::vector<NodeSpec> nodes) {
  SHARDKV_RETURN_IF_ERROR(ValidateNodes(nodes));
  // About 160 points per node, and point indexes are stored as uint32_t.
  if (nodes.size() > kMaxNodes) {
    return Status::InvalidArgument("ketama: " + std::to_string(nodes.size()) + " nodes; at most " +
                                   std::to_string(kMaxNodes) + " supported");
  }

  std::vector<Endpoint> endpoints;
  endpoints.reserve(nodes.size());
  // Two names for one endpoint ("a" and "a:11211") would produce identical points; the second
  // could never own a key, so it is almost certainly a configuration mistake.
  std::unordered_map<std::string, std::string_view> seen;
  uint64_t total_weight = 0;
  for (const NodeSpec& node : nodes) {
    // libmemcached weights are uint32_t; a fractional weight has no equivalent there.
    if (!(node.weight >= 1.0) || node.weight != std::floor(node.weight) ||
        node.weight > static_cast<double>(std::numeric_limits<uint32_t>::max())) {
      return Status::InvalidArgument("ketama: node '" + node.name + "' has weight " +
                                     std::to_string(node.weight) +
                                     "; ketama weights must be whole numbers in [1, 2^32-1]");
    }
    total_weight += static_cast<uint64_t>(node.weight);
    SHARDKV_ASSIGN_OR_RETURN(Endpoint ep, ParseEndpoint(node.name));
    std::string key = ep.host + '\n' + std::to_string(ep.port);
    auto [it, inserted] = seen.emplace(std::move(key), node.name);
    if (!inserted) {
      return Status::InvalidArgument("ketama: nodes '" + std::string(it->second) + "' and '" +
                                     node.name + "' name the same server");
    }
    endpoints.push_back(std::move(ep));
  }

  const auto live = static_cast<uint32_t>(nodes.size());
  // value << 32 | server index: one integer sort orders by (value, index), the tie-break that
  // libmemcached's continuum_item_cmp uses (lower server index wins a collision).
  std::vector<uint64_t> keyed;
  keyed.reserve(static_cast<size_t>(live) * kPointsPerServer + 64);
  for (uint32_t s = 0; s < live; ++s) {
    uint32_t weight = static_cast<uint32_t>(nodes[s].weight);
    uint32_t digests = PointsForServer(weight, total_weight, live) / kPointsPerHash;
    for (uint32_t i = 0; i < digests; ++i) {
      std::array<uint8_t, 16> d = hash::Md5(PointString(endpoints[s], i));
      for (uint32_t a = 0; a < kPointsPerHash; ++a) {
        keyed.push_back(static_cast<uint64_t>(LoadLe32(d.data() + 4 * a)) << 32 | s);
      }
    }
  }
  std::sort(keyed.begin(), keyed.end());
  // The heaviest server has pct >= 1/live, hence about 160 points: never empty, but lookups index
  // points_[0] unchecked, so make sure.
  if (keyed.empty()) return Status::Internal("ketama: continuum has no points");

  std::unique_ptr<Ketama> k(new Ketama(std::move(nodes)));
  k->points_.reserve(keyed.size());
  k->owners_.reserve(keyed.size());
  std::vector<bool> has_points(live, false);
  for (uint64_t kv : keyed) {
    k->points_.push_back(static_cast<uint32_t>(kv >> 32));
    k->owners_.push_back(static_cast<uint32_t>(kv));
    has_points[static_cast<uint32_t>(kv)] = true;
  }
  for (uint32_t s = 0; s < live; ++s) {
    if (has_points[s]) {
      ++k->servers_with_points_;
    } else {
      k->pointless_.push_back(s);
    }
  }

  // prefix_[b] = index of the first point whose top prefix_bits_ bits are >= b. About one point
  // per bucket (up to ~2.4 at the 16-bit cap), so a lookup is a table read plus a short count.
  k->prefix_bits_ =
      std::clamp(static_cast<int>(std::bit_width(k->points_.size())), 1, kMaxPrefixBits);
  const uint32_t buckets = 1U << k->prefix_bits_;
  const int shift = 32 - k->prefix_bits_;
  k->prefix_.resize(buckets + 1);
  size_t p = 0;
  for (uint32_t b = 0; b < buckets; ++b) {
    while (p < k->points_.size() && (k->points_[p] >> shift) < b) ++p;
    k->prefix_[b] = static_cast<uint32_t>(p);
  }
  k->prefix_[buckets] = static_cast<uint32_t>(k->points_.size());
  return k;
}

uint64_t Ketama::KeyToken(std::string_view key) const {
  std::array<uint8_t, 16> d = hash::Md5(key);
  return LoadLe32(d.data());
}

size_t Ketama::PointIndex(uint32_t hash) const {
  const uint32_t bucket = hash >> (32 - prefix_bits_);
  const uint32_t* begin = points_.data() + prefix_[bucket];
  const uint32_t* end = points_.data() + prefix_[bucket + 1];
  // Every point before `begin` is in a lower bucket, hence < hash; every point from `end` on is
  // in a higher bucket, hence > hash. So the answer is `begin` plus the number of bucket points
  // below hash. Buckets hold about one point, so a branch-free count beats a binary search
  // (about 11 ns against 20-35 ns per random lookup here; 50-100 ns with no prefix table).
  size_t index = static_cast<size_t>(begin - points_.data());
  for (const uint32_t* p = begin; p < end; ++p) index += *p < hash;
  return index == points_.size() ? 0 : index;
}

uint32_t Ketama::Owner(uint64_t token) const {
  // Tokens are 32-bit; anything larger lies past the last point, which wraps to the first.
  if (token > std::numeric_limits<uint32_t>::max()) return owners_[0];
  return owners_[PointIndex(static_cast<uint32_t>(token))];
}

Status Ketama::Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const {
  SHARDKV_RETURN_IF_ERROR(CheckReplicaCount(n));
  out->clear();
  out->reserve(n);
  const size_t start =
      token > std::numeric_limits<uint32_t>::max() ? 0 : PointIndex(static_cast<uint32_t>(token));
  const size_t on_ring = std::min<size_t>(n, servers_with_points_);
  // Small n (the common case: 2-3 replicas) checks `out` directly; larger n uses a bitmap so
  // the walk stays linear in the number of points.
  constexpr size_t kLinearLimit = 8;
  std::vector<bool> taken;
  if (n > kLinearLimit) taken.assign(nodes_.size(), false);
  const size_t count = points_.size();
  for (size_t step = 0; step < count && out->size() < on_ring; ++step) {
    size_t i = start + step;
    if (i >= count) i -= count;
    const uint32_t s = owners_[i];
    bool dup = n > kLinearLimit ? taken[s] : std::find(out->begin(), out->end(), s) != out->end();
    if (dup) continue;
    if (n > kLinearLimit) taken[s] = true;
    out->push_back(s);
  }
  // A tiny weight can round a server down to zero points (libmemcached keeps such a server but
  // never picks it). It still has to appear when n asks for that many servers: append those in
  // index order, after everything that is on the ring.
  for (size_t j = 0; out->size() < n && j < pointless_.size(); ++j) {
    out->push_back(pointless_[j]);
  }
  return Status::OK();
}

size_t Ketama::MemoryBytes() const {
  return points_.capacity() * sizeof(uint32_t) + owners_.capacity() * sizeof(uint32_t) +
         prefix_.capacity() * sizeof(uint32_t) + pointless_.capacity() * sizeof(uint32_t);
}

}  // namespace shardkv
