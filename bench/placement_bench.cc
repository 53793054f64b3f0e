// Placement benchmarks (design.md "Benchmarks"): lookup cost of every algorithm at N = 10, 100
// and 1000 nodes, the ring lookups a user would write by hand (std::map and a sorted vector over
// the same ring points), build time and memory, and threaded ring throughput.
//
// Lookups cycle through a fixed array of 64Ki inputs (fixed seed), so the timed loop measures
// lookups rather than a random number generator. Two variants:
//   Owner/<algo>/<N>     the token is precomputed (what a node does: the token is the storage key
//                        prefix), so the time is Owner() alone;
//   KeyOwner/<algo>/<N>  a 16-byte key is hashed on every lookup: KeyToken() + Owner().
// Consecutive lookups are independent, so an out-of-order core overlaps their cache misses: these
// are throughput figures. OwnerChained/... feeds each result into the next input's index, which
// serializes the lookups and shows their latency.
//
// Calls go through the concrete `final` classes, so they devirtualize. Results are comparable only
// within one run on one machine: bench/README.md reports ratios against the baselines.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "shardkv/hash.h"
#include "shardkv/hash_ring.h"
#include "shardkv/jump_hash.h"
#include "shardkv/ketama.h"
#include "shardkv/maglev.h"
#include "shardkv/modulo.h"
#include "shardkv/placement.h"
#include "shardkv/rendezvous.h"
#include "shardkv/shard_map.h"

namespace shardkv {
namespace {

constexpr size_t kSamples = size_t{1} << 16;  // 64Ki inputs, cycled through
constexpr size_t kSampleMask = kSamples - 1;
constexpr size_t kKeyBytes = 16;
constexpr uint64_t kSeed = 20240601;
constexpr int kVnodes = 160;
constexpr int32_t kShards = ShardMap::kDefaultShards;  // 1024
constexpr int kReplicas = 3;
constexpr double kMinTime = 0.1;  // seconds per benchmark (and per repetition)
constexpr hash::HashKind kHash = hash::HashKind::kXxh3;

std::vector<NodeSpec> MakeNodes(int n) {
  std::vector<NodeSpec> nodes;
  nodes.reserve(n);
  char name[32];
  for (int i = 0; i < n; ++i) {
    std::snprintf(name, sizeof(name), "node-%04d", i);
    nodes.push_back({name, 1.0});
  }
  return nodes;
}

// A setup failure means the library rejected a membership the benchmark relies on: stop loudly.
template <typename T>
T Unwrap(StatusOr<T> result, const char* what) {
  if (!result.ok()) {
    std::fprintf(stderr, "placement_bench: %s failed: %s\n", what,
                 result.status().ToString().c_str());
    std::abort();
  }
  return std::move(result).value();
}

// kSamples random 16-byte keys (printable, like user keys), stored back to back.
const std::string& Keys() {
  static const std::string keys = [] {
    static constexpr char kAlphabet[] =
        "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ:_";
    std::mt19937_64 rng(kSeed);
    std::string k(kSamples * kKeyBytes, '\0');
    for (char& c : k) c = kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
    return k;
  }();
  return keys;
}

std::string_view KeyAt(size_t i) {
  return std::string_view(Keys()).substr((i & kSampleMask) * kKeyBytes, kKeyBytes);
}

// Maglev needs a prime M >= 100 * N: Envoy's 65537 up to 655 nodes, then 100003.
uint32_t MaglevTableSize(int n) { return n * 100 > 65537 ? 100003 : 65537; }

// ---------------------------------------------------------------------------------------------
// Baselines: the ring lookups the seed articles write, over the very points HashRing places
// (N x 160 points at Hash64(xxh3, "name#i")). Like HashRing, a token belongs to the first point
// strictly after it (upper_bound); the seeds' lower_bound (Go sort.Search with >=, Java
// TreeMap.tailMap) differs only when a token equals a point, and costs the same. Each lookup is
// an out-of-line call, as HashRing's PointIndex() is, so the comparison is like for like.

struct RingPoint {
  uint64_t pos;
  uint32_t owner;
};

std::vector<RingPoint> SortedRingPoints(int n) {
  const std::vector<NodeSpec> nodes = MakeNodes(n);
  std::vector<RingPoint> points;
  points.reserve(static_cast<size_t>(n) * kVnodes);
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    for (int v = 0; v < kVnodes; ++v) {
      points.push_back({hash::Hash64(kHash, nodes[i].name + "#" + std::to_string(v)), i});
    }
  }
  std::sort(points.begin(), points.end(),
            [](const RingPoint& a, const RingPoint& b) { return a.pos < b.pos; });
  return points;
}

// Seed 003 (Java TreeMap): a balanced tree keyed by position.
class MapRing {
 public:
  explicit MapRing(const std::vector<RingPoint>& points) {
    for (const RingPoint& p : points) map_.emplace(p.pos, p.owner);
  }
  uint64_t KeyToken(std::string_view key) const { return hash::Hash64(kHash, key); }
  uint32_t Owner(uint64_t token) const;
  // Payload plus libstdc++'s 32-byte node header; malloc's own overhead comes on top.
  size_t MemoryBytes() const { return map_.size() * (32 + sizeof(std::pair<uint64_t, uint32_t>)); }
  size_t size() const { return map_.size(); }

 private:
  std::map<uint64_t, uint32_t> map_;
};

[[gnu::noinline]] uint32_t MapRing::Owner(uint64_t token) const {
  auto it = map_.upper_bound(token);
  if (it == map_.end()) it = map_.begin();
  return it->second;
}

// Seeds 000/001 (Go sort.Search over a sorted slice): one vector of (position, owner) pairs.
class SortedVectorRing {
 public:
  explicit SortedVectorRing(const std::vector<RingPoint>& points) {
    points_.reserve(points.size());
    for (const RingPoint& p : points) points_.emplace_back(p.pos, p.owner);
  }
  uint64_t KeyToken(std::string_view key) const { return hash::Hash64(kHash, key); }
  uint32_t Owner(uint64_t token) const;
  size_t MemoryBytes() const { return points_.capacity() * sizeof(points_[0]); }

 private:
  std::vector<std::pair<uint64_t, uint32_t>> points_;
};

[[gnu::noinline]] uint32_t SortedVectorRing::Owner(uint64_t token) const {
  auto it = std::upper_bound(points_.begin(), points_.end(), token,
                             [](uint64_t t, const auto& p) { return t < p.first; });
  if (it == points_.end()) it = points_.begin();
  return it->second;
}

// The same search over HashRing's own layout (positions and owners in separate arrays), so the
// difference to HashRing is the prefix table alone.
class SplitVectorRing {
 public:
  explicit SplitVectorRing(const std::vector<RingPoint>& points) {
    positions_.reserve(points.size());
    owners_.reserve(points.size());
    for (const RingPoint& p : points) {
      positions_.push_back(p.pos);
      owners_.push_back(p.owner);
    }
  }
  uint64_t KeyToken(std::string_view key) const { return hash::Hash64(kHash, key); }
  uint32_t Owner(uint64_t token) const;
  size_t MemoryBytes() const {
    return positions_.capacity() * sizeof(uint64_t) + owners_.capacity() * sizeof(uint32_t);
  }

 private:
  std::vector<uint64_t> positions_;
  std::vector<uint32_t> owners_;
};

[[gnu::noinline]] uint32_t SplitVectorRing::Owner(uint64_t token) const {
  size_t i = std::upper_bound(positions_.begin(), positions_.end(), token) - positions_.begin();
  if (i == positions_.size()) i = 0;
  return owners_[i];
}

// Jump into the 1024 fixed shards alone (no shard map): the cost the "<= 30 ns" target names.
class Jump1024 {
 public:
  uint64_t KeyToken(std::string_view key) const { return hash::Hash64(kHash, key); }
  uint32_t Owner(uint64_t token) const { return static_cast<uint32_t>(JumpHash(token, kShards)); }
  size_t MemoryBytes() const { return 0; }
};

// ---------------------------------------------------------------------------------------------
// Builders, one per algorithm, and a cache so each (algorithm, N) is built once per process.

std::unique_ptr<HashRing> MakeRing(int n) {
  return Unwrap(HashRing::Build(MakeNodes(n), kVnodes, kHash), "HashRing::Build");
}
std::unique_ptr<JumpPlacement> MakeJump(int n) {
  return Unwrap(JumpPlacement::Build(MakeNodes(n), kHash), "JumpPlacement::Build");
}
std::unique_ptr<Maglev> MakeMaglev(int n) {
  return Unwrap(Maglev::Build(MakeNodes(n), MaglevTableSize(n), kHash), "Maglev::Build");
}
std::unique_ptr<Rendezvous> MakeRendezvous(int n) {
  return Unwrap(Rendezvous::Build(MakeNodes(n), kHash), "Rendezvous::Build");
}
std::unique_ptr<Ketama> MakeKetama(int n) {
  return Unwrap(Ketama::Build(MakeNodes(n)), "Ketama::Build");
}
std::unique_ptr<Modulo> MakeModulo(int n) {
  return Unwrap(Modulo::Build(MakeNodes(n), kHash), "Modulo::Build");
}
std::unique_ptr<ShardedPlacement> MakeSharded(int n) {
  ShardMap map = Unwrap(ShardMap::Create(MakeNodes(n), kShards, kReplicas), "ShardMap::Create");
  return Unwrap(ShardedPlacement::Build(std::move(map), kHash), "ShardedPlacement::Build");
}
std::unique_ptr<Jump1024> MakeJump1024(int) { return std::make_unique<Jump1024>(); }
std::unique_ptr<MapRing> MakeMapRing(int n) {
  return std::make_unique<MapRing>(SortedRingPoints(n));
}
std::unique_ptr<SortedVectorRing> MakeSortedVectorRing(int n) {
  return std::make_unique<SortedVectorRing>(SortedRingPoints(n));
}
std::unique_ptr<SplitVectorRing> MakeSplitVectorRing(int n) {
  return std::make_unique<SplitVectorRing>(SortedRingPoints(n));
}

template <typename P>
struct Fixture {
  std::unique_ptr<P> placement;
  std::vector<uint64_t> tokens;  // tokens[i] = placement->KeyToken(KeyAt(i))
  std::string error;             // non-empty when a baseline disagrees with HashRing
};

// Every ring baseline must name the same owner as HashRing for every sample token; otherwise the
// comparison would be between different rings.
template <typename P>
std::string CheckAgainstRing(const P& baseline, const std::vector<uint64_t>& tokens, int n) {
  if constexpr (std::is_same_v<P, MapRing> || std::is_same_v<P, SortedVectorRing> ||
                std::is_same_v<P, SplitVectorRing>) {
    const std::unique_ptr<HashRing> ring = MakeRing(n);
    if constexpr (std::is_same_v<P, MapRing>) {
      if (baseline.size() != ring->point_count()) return "ring points collide in std::map";
    }
    for (uint64_t t : tokens) {
      if (baseline.Owner(t) != ring->Owner(t)) return "baseline owner differs from HashRing";
    }
  }
  return "";
}

template <typename P, std::unique_ptr<P> (*Make)(int)>
const Fixture<P>& GetFixture(int n) {
  // Threaded benchmarks call this from every thread at once.
  static std::mutex mu;
  static std::map<int, std::unique_ptr<Fixture<P>>> cache;
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<Fixture<P>>& f = cache[n];
  if (f == nullptr) {
    f = std::make_unique<Fixture<P>>();
    f->placement = Make(n);
    f->tokens.resize(kSamples);
    for (size_t i = 0; i < kSamples; ++i) f->tokens[i] = f->placement->KeyToken(KeyAt(i));
    f->error = CheckAgainstRing(*f->placement, f->tokens, n);
  }
  return *f;
}

// ---------------------------------------------------------------------------------------------
// Lookup benchmarks. range(0) = N.

template <typename P, std::unique_ptr<P> (*Make)(int)>
void BM_Owner(benchmark::State& state) {
  const Fixture<P>& f = GetFixture<P, Make>(static_cast<int>(state.range(0)));
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const P& p = *f.placement;
  const uint64_t* tokens = f.tokens.data();
  // Threads start at different offsets so they do not walk the array in lockstep.
  size_t i = static_cast<size_t>(state.thread_index()) * (kSamples / 8);
  // Summing forces the owner to be loaded: DoNotOptimize(owner) alone let GCC keep only the
  // owner's address, so the lookup's last memory access went unmeasured.
  uint64_t sum = 0;
  for (auto _ : state) {
    sum += p.Owner(tokens[i & kSampleMask]);
    benchmark::DoNotOptimize(sum);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  // Counters are summed over threads; the structure is shared, so count it once.
  if (state.thread_index() == 0) state.counters["bytes"] = static_cast<double>(p.MemoryBytes());
}

template <typename P, std::unique_ptr<P> (*Make)(int)>
void BM_KeyOwner(benchmark::State& state) {
  const Fixture<P>& f = GetFixture<P, Make>(static_cast<int>(state.range(0)));
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const P& p = *f.placement;
  const char* keys = Keys().data();
  size_t i = static_cast<size_t>(state.thread_index()) * (kSamples / 8);
  uint64_t sum = 0;
  for (auto _ : state) {
    const std::string_view key(keys + (i & kSampleMask) * kKeyBytes, kKeyBytes);
    sum += p.Owner(p.KeyToken(key));
    benchmark::DoNotOptimize(sum);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
  // Counters are summed over threads; the structure is shared, so count it once.
  if (state.thread_index() == 0) state.counters["bytes"] = static_cast<double>(p.MemoryBytes());
}

// Each lookup's input index depends on the previous owner, so lookups cannot overlap: latency.
template <typename P, std::unique_ptr<P> (*Make)(int)>
void BM_OwnerChained(benchmark::State& state) {
  const Fixture<P>& f = GetFixture<P, Make>(static_cast<int>(state.range(0)));
  if (!f.error.empty()) {
    state.SkipWithError(f.error.c_str());
    return;
  }
  const P& p = *f.placement;
  const uint64_t* tokens = f.tokens.data();
  size_t i = 0;
  uint32_t owner = 0;
  for (auto _ : state) {
    owner = p.Owner(tokens[(i + owner) & kSampleMask]);
    benchmark::DoNotOptimize(owner);
    ++i;
  }
  state.SetItemsProcessed(state.iterations());
}

// ---------------------------------------------------------------------------------------------
// Build benchmarks. Each iteration builds from a copy of the membership list, as a membership
// change does; "bytes" is MemoryBytes() of the result.

template <typename T>
size_t Bytes(const std::unique_ptr<T>& built) {
  return built->MemoryBytes();
}
template <typename T>
size_t Bytes(const T& built) {
  return built.MemoryBytes();
}

template <typename BuildFn>
void RunBuild(benchmark::State& state, BuildFn build) {
  size_t bytes = 0;
  for (auto _ : state) {
    auto built = build();
    bytes = Bytes(built);
    benchmark::DoNotOptimize(built);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

int NodesArg(const benchmark::State& state) { return static_cast<int>(state.range(0)); }

void BM_BuildRing(benchmark::State& state) {
  const std::vector<NodeSpec> nodes = MakeNodes(NodesArg(state));
  const auto vnodes = static_cast<int>(state.range(1));
  RunBuild(state, [&] { return Unwrap(HashRing::Build(nodes, vnodes, kHash), "ring"); });
}

void BM_BuildMaglev(benchmark::State& state) {
  const std::vector<NodeSpec> nodes = MakeNodes(NodesArg(state));
  const auto table_size = static_cast<uint32_t>(state.range(1));
  RunBuild(state, [&] { return Unwrap(Maglev::Build(nodes, table_size, kHash), "maglev"); });
}

void BM_BuildShardMap(benchmark::State& state) {
  const std::vector<NodeSpec> nodes = MakeNodes(NodesArg(state));
  const auto shards = static_cast<int32_t>(state.range(1));
  const auto replicas = static_cast<int>(state.range(2));
  RunBuild(state, [&] { return Unwrap(ShardMap::Create(nodes, shards, replicas), "shardmap"); });
}

void BM_BuildKetama(benchmark::State& state) {
  const std::vector<NodeSpec> nodes = MakeNodes(NodesArg(state));
  RunBuild(state, [&] { return Unwrap(Ketama::Build(nodes), "ketama"); });
}

// The baselines' build: hash the same points, then sort a vector or fill a std::map.
void BM_BuildSortedVector(benchmark::State& state) {
  RunBuild(state, [&] { return SortedVectorRing(SortedRingPoints(NodesArg(state))); });
}

void BM_BuildStdMap(benchmark::State& state) {
  RunBuild(state, [&] { return MapRing(SortedRingPoints(NodesArg(state))); });
}

// ---------------------------------------------------------------------------------------------
// Registration. Names: Owner/<algo>/<N>, KeyOwner/<algo>/<N>, OwnerChained/<algo>/<N>,
// OwnerMT/<algo>/<N>/real_time/threads:<T>, Build/<algo>/<args>.

template <typename P, std::unique_ptr<P> (*Make)(int)>
void RegisterLookups(const std::string& algo) {
  for (const char* prefix : {"Owner/", "KeyOwner/"}) {
    auto* fn = prefix[0] == 'O' ? &BM_Owner<P, Make> : &BM_KeyOwner<P, Make>;
    benchmark::RegisterBenchmark((prefix + algo).c_str(), fn)
        ->Arg(10)
        ->Arg(100)
        ->Arg(1000)
        ->MinTime(kMinTime);
  }
}

template <typename P, std::unique_ptr<P> (*Make)(int)>
void RegisterChained(const std::string& algo) {
  benchmark::RegisterBenchmark(("OwnerChained/" + algo).c_str(), &BM_OwnerChained<P, Make>)
      ->Arg(1000)
      ->MinTime(kMinTime);
}

template <typename P, std::unique_ptr<P> (*Make)(int)>
void RegisterThreaded(const std::string& algo) {
  // Real time, so items_per_second is the aggregate rate of all threads.
  for (const char* prefix : {"OwnerMT/", "KeyOwnerMT/"}) {
    auto* fn = prefix[0] == 'O' ? &BM_Owner<P, Make> : &BM_KeyOwner<P, Make>;
    benchmark::RegisterBenchmark((prefix + algo).c_str(), fn)
        ->Arg(1000)
        ->Threads(1)
        ->Threads(2)
        ->UseRealTime()
        ->MinTime(kMinTime);
  }
}

void RegisterBuild(const char* name, void (*fn)(benchmark::State&),
                   const std::vector<std::string>& arg_names,
                   const std::vector<std::vector<int64_t>>& arg_sets) {
  auto* b = benchmark::RegisterBenchmark(name, fn);
  b->ArgNames(arg_names)->Unit(benchmark::kMicrosecond)->MinTime(kMinTime);
  for (const std::vector<int64_t>& args : arg_sets) b->Args(args);
}

bool RegisterAll() {
  benchmark::AddCustomContext("ring_vnodes", std::to_string(kVnodes));
  benchmark::AddCustomContext("samples", std::to_string(kSamples) + " inputs, seed " +
                                             std::to_string(kSeed) + ", 16-byte keys");
  benchmark::AddCustomContext("maglev_table", "65537 (N <= 655), 100003 (N = 1000)");

  RegisterLookups<HashRing, MakeRing>("ring");
  RegisterLookups<JumpPlacement, MakeJump>("jump");
  RegisterLookups<Maglev, MakeMaglev>("maglev");
  RegisterLookups<Rendezvous, MakeRendezvous>("rendezvous");
  RegisterLookups<Ketama, MakeKetama>("ketama");
  RegisterLookups<Modulo, MakeModulo>("modulo");
  RegisterLookups<ShardedPlacement, MakeSharded>("jump1024_shardmap");
  RegisterLookups<Jump1024, MakeJump1024>("jump1024");
  RegisterLookups<SortedVectorRing, MakeSortedVectorRing>("sorted_vector");
  RegisterLookups<SplitVectorRing, MakeSplitVectorRing>("split_vector");
  RegisterLookups<MapRing, MakeMapRing>("std_map");

  RegisterChained<HashRing, MakeRing>("ring");
  RegisterChained<SortedVectorRing, MakeSortedVectorRing>("sorted_vector");
  RegisterChained<MapRing, MakeMapRing>("std_map");
  RegisterChained<Maglev, MakeMaglev>("maglev");
  RegisterChained<ShardedPlacement, MakeSharded>("jump1024_shardmap");

  RegisterThreaded<HashRing, MakeRing>("ring");

  RegisterBuild("Build/ring", &BM_BuildRing, {"nodes", "vnodes"},
                {{10, 100}, {10, 160}, {100, 160}, {1000, 160}});
  RegisterBuild("Build/sorted_vector", &BM_BuildSortedVector, {"nodes"}, {{1000}});
  RegisterBuild("Build/std_map", &BM_BuildStdMap, {"nodes"}, {{1000}});
  RegisterBuild("Build/maglev", &BM_BuildMaglev, {"nodes", "M"},
                {{10, 65537}, {100, 65537}, {1000, 100003}});
  RegisterBuild("Build/shardmap", &BM_BuildShardMap, {"nodes", "shards", "rf"},
                {{10, kShards, kReplicas}, {100, kShards, kReplicas}, {1000, kShards, kReplicas}});
  RegisterBuild("Build/ketama", &BM_BuildKetama, {"nodes"}, {{10}, {100}, {1000}});
  return true;
}

[[maybe_unused]] const bool kRegistered = RegisterAll();

}  // namespace
}  // namespace shardkv

BENCHMARK_MAIN();
