// shardkv-bench's configuration and the op sequence it defines: the key chooser (uniform or
// Zipfian), the per-phase Workload (client c's i-th op is a pure function of (seed, c, i)) and
// the key format. Split from kv_bench.cc with the measurement (kv_bench_measure.h) and the
// drivers (kv_bench_drivers.h), so that each file holds one part of the benchmark.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "shardkv/status.h"

namespace kv_bench {

using Clock = std::chrono::steady_clock;
using shardkv::Status;
using shardkv::StatusOr;

struct Config {
  std::string target = "shardkv";
  std::vector<std::string> cluster;
  std::string redis;
  int clients = 50;
  int pipeline = 1;
  std::string ratio = "1:0";
  uint64_t get_weight = 1;
  uint64_t put_weight = 0;
  size_t value_size = 100;
  uint64_t keyspace = 100000;
  std::string dist = "uniform";
  double zipf_theta = 0;  // 0 = uniform
  double duration_s = 0;
  uint64_t ops = 0;
  int threads = 1;
  bool preload = false;
  uint64_t warmup_ops = 20;
  uint64_t seed = 1;
  bool json = false;
  uint32_t timeout_ms = 5000;
  int server_pid = 0;
  std::string label;
  // shardkv's secret and TLS files (ClientOptions), to measure what they cost.
  std::string auth_secret_file;
  std::string tls_ca_file;
  std::string tls_cert_file;
  std::string tls_key_file;
};

// ---------------------------------------------------------------------------------------------
// Workload

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from the top 53 bits.
inline double UnitInterval(uint64_t r) { return static_cast<double>(r >> 11) * 0x1.0p-53; }

// Key ids in [0, n): uniform, or Zipfian over ranks as in YCSB's ZipfianGenerator (Gray et al.),
// with rank r mapped to key (r * mult + n/3) mod n. The permutation spreads the hot keys over
// the key space (and so over shards) instead of packing them into key:000000000000, ...
class KeyChooser {
 public:
  KeyChooser(uint64_t n, double theta) : n_(n), theta_(theta) {
    if (theta_ <= 0 || n_ < 3) return;
    // zeta(n, theta) summed exactly over the first million terms; beyond that the tail is the
    // integral of x^-theta (midpoint rule), accurate to ~1e-9 relative and O(1) for any n.
    constexpr uint64_t kExactTerms = 1000000;
    const uint64_t exact = std::min(n_, kExactTerms);
    double zetan = 0;
    for (uint64_t i = 1; i <= exact; ++i) zetan += 1.0 / std::pow(static_cast<double>(i), theta_);
    if (n_ > exact) {
      auto antiderivative = [&](double x) { return std::pow(x, 1.0 - theta_) / (1.0 - theta_); };
      zetan += antiderivative(static_cast<double>(n_) + 0.5) -
               antiderivative(static_cast<double>(exact) + 0.5);
    }
    const double zeta2 = 1.0 + 1.0 / std::pow(2.0, theta_);
    zetan_ = zetan;
    alpha_ = 1.0 / (1.0 - theta_);
    eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n_), 1.0 - theta_)) / (1.0 - zeta2 / zetan);
    half_pow_theta_ = 1.0 + std::pow(0.5, theta_);
    mult_ = static_cast<uint64_t>(static_cast<double>(n_) * 0.6180339887498949);
    while (std::gcd(mult_, n_) != 1) ++mult_;
  }

  uint64_t Pick(uint64_t r) const {
    if (theta_ <= 0 || n_ < 3) return r % n_;
    const double u = UnitInterval(r);
    const double uz = u * zetan_;
    uint64_t rank;
    if (uz < 1.0) {
      rank = 0;
    } else if (uz < half_pow_theta_) {
      rank = 1;
    } else {
      rank =
          static_cast<uint64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
      rank = std::min(rank, n_ - 1);
    }
    return static_cast<uint64_t>((static_cast<unsigned __int128>(rank) * mult_ + n_ / 3) % n_);
  }

 private:
  uint64_t n_;
  double theta_;
  double zetan_ = 0, alpha_ = 0, eta_ = 0, half_pow_theta_ = 0;
  uint64_t mult_ = 1;
};

enum class OpType : uint8_t { kGet, kPut };

struct Op {
  OpType type = OpType::kGet;
  uint64_t key = 0;
};

// Which ops a phase runs. Only kMain is measured; the other two prepare the target the same way
// for both targets.
enum class Phase { kWarmup, kPreload, kMain };

const char* PhaseName(Phase p);

class Workload {
 public:
  Workload(const Config& config, Phase phase)
      : phase_(phase),
        clients_(static_cast<uint64_t>(config.clients)),
        keyspace_(config.keyspace),
        get_weight_(config.get_weight),
        total_weight_(config.get_weight + config.put_weight),
        seed_(SplitMix64(config.seed)),
        chooser_(config.keyspace, config.zipf_theta) {
    switch (phase) {
      case Phase::kWarmup:
        per_client_ops_ = config.warmup_ops;
        break;
      case Phase::kPreload:
        break;  // Quota() splits the keyspace
      case Phase::kMain:
        if (config.ops > 0) {
          per_client_ops_ = config.ops / clients_;
          remainder_ = config.ops % clients_;
        } else {
          per_client_ops_ = std::numeric_limits<uint64_t>::max();  // bounded by the duration
        }
        break;
    }
  }

  Phase phase() const { return phase_; }

  // How many ops client `c` runs at most.
  uint64_t Quota(uint64_t c) const {
    if (phase_ == Phase::kPreload) {
      return c >= keyspace_ ? 0 : (keyspace_ - c + clients_ - 1) / clients_;
    }
    if (per_client_ops_ == std::numeric_limits<uint64_t>::max()) return per_client_ops_;
    return per_client_ops_ + (c < remainder_ ? 1 : 0);
  }

  // Client c's i-th op: a pure function of (seed, c, i).
  Op At(uint64_t c, uint64_t i) const {
    Op op;
    switch (phase_) {
      case Phase::kPreload:
        op.type = OpType::kPut;
        op.key = c + i * clients_;
        return op;
      case Phase::kWarmup:
        // Reads only, so warming up leaves the data as it was.
        op.type = OpType::kGet;
        op.key = SplitMix64(seed_ ^ (c * 0x100000001B3ULL + i)) % keyspace_;
        return op;
      case Phase::kMain:
        break;
    }
    const uint64_t r1 = SplitMix64(SplitMix64(seed_ + c) + i * 0x9E3779B97F4A7C15ULL);
    const uint64_t r2 = SplitMix64(r1);
    op.type = (r1 % total_weight_) < get_weight_ ? OpType::kGet : OpType::kPut;
    op.key = chooser_.Pick(r2);
    return op;
  }

 private:
  Phase phase_;
  uint64_t clients_;
  uint64_t keyspace_;
  uint64_t get_weight_;
  uint64_t total_weight_;
  uint64_t seed_;
  KeyChooser chooser_;
  uint64_t per_client_ops_ = 0;
  uint64_t remainder_ = 0;
};

// The same key format as redis-benchmark's "key:__rand_int__": "key:" plus 12 digits.
constexpr size_t kKeyBytes = 16;

void FormatKey(uint64_t id, char* out);

}  // namespace kv_bench
