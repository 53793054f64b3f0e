#include "shardkv/maglev.h"

#include <algorithm>
#include <numeric>

namespace shardkv {
namespace {

bool IsPrime(uint32_t m) {
  if (m < 2) return false;
  for (uint64_t d = 2; d * d <= m; ++d) {
    if (m % d == 0) return false;
  }
  return true;
}

}  // namespace

StatusOr<std::unique_ptr<Maglev>> Maglev::Build(std::vector<NodeSpec> nodes, uint32_t table_size,
                                                hash::HashKind hash) {
  SHARDKV_RETURN_IF_ERROR(ValidateNodes(nodes));
  if (!IsPrime(table_size)) {
    return Status::InvalidArgument("maglev table size " + std::to_string(table_size) +
                                   " is not prime");
  }
  if (static_cast<uint64_t>(table_size) < 100ull * nodes.size()) {
    return Status::InvalidArgument("maglev table size " + std::to_string(table_size) +
                                   " is below 100 x " + std::to_string(nodes.size()) +
                                   " nodes; shares would drift by more than ~1%");
  }
  std::unique_ptr<Maglev> m(new Maglev(std::move(nodes), hash));
  const size_t n = m->nodes_.size();
  const uint64_t size = table_size;

  // Fill in name order so the table does not depend on the order of the membership list.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return m->nodes_[a].name < m->nodes_[b].name; });

  double max_weight = 0;
  for (const NodeSpec& s : m->nodes_) max_weight = std::max(max_weight, s.weight);
  // `slot` is the node's next permutation entry, (offset + next * skip) % size. Since offset and
  // skip are both < size, stepping it by `slot += skip; if (slot >= size) slot -= size;` gives
  // exactly that value without a 64-bit division per probe, so the table is unchanged (checked
  // slot by slot against the division form for N up to 2000 nodes, mixed weights, several M).
  struct Entry {
    uint64_t slot, skip;
    double weight, credit = 0;
  };
  std::vector<Entry> entries;
  entries.reserve(n);
  for (uint32_t idx : order) {
    const std::string& name = m->nodes_[idx].name;
    // Two independent hashes of the name, as the paper requires for offset and skip.
    const uint64_t h1 = hash::Xxh3(name, 0x6d61676c65763031ull);
    const uint64_t h2 = hash::Xxh3(name, 0x6d61676c65763032ull);
    entries.push_back({h1 % size, h2 % (size - 1) + 1, m->nodes_[idx].weight / max_weight});
  }

  m->table_.resize(size);
  uint32_t* const table = m->table_.data();
  // Occupancy lives in a bitmap (8 KB for M = 65537, so it stays in L1) rather than in the
  // 256 KB table: most probes land on taken slots and only test this bit.
  //
  // What remains is mostly per turn, not per probe: the probe loop below runs a random number of
  // times, so its exit mispredicts about 0.9 times a turn, and there are M turns. Finishing the
  // last empty slots from per-node sorted lists (each node's order over them is
  // (slot - cursor) * skip^-1 mod M) removed half the probes but only 3-5% of the time at
  // N = 10, so it is not worth its code.
  std::vector<uint64_t> taken((size + 63) / 64, 0);
  uint64_t filled = 0;
  // Each round every node earns credit equal to its normalized weight and takes one turn per
  // whole unit of credit; the heaviest node therefore takes a turn every round (Envoy's scheme).
  while (filled < size) {
    for (size_t e = 0; e < n && filled < size; ++e) {
      Entry& en = entries[e];
      en.credit += en.weight;
      if (en.credit < 1.0) continue;
      en.credit -= 1.0;
      uint64_t slot = en.slot;
      while (taken[slot >> 6] >> (slot & 63) & 1) {
        slot += en.skip;
        if (slot >= size) slot -= size;
      }
      taken[slot >> 6] |= uint64_t{1} << (slot & 63);
      table[slot] = order[e];
      // The node never needs this entry again (taken now, and slots never empty): step past it.
      slot += en.skip;
      if (slot >= size) slot -= size;
      en.slot = slot;
      ++filled;
    }
  }
  return m;
}

Status Maglev::Replicas(uint64_t token, size_t n, std::vector<uint32_t>* out) const {
  SHARDKV_RETURN_IF_ERROR(CheckReplicaCount(n));
  out->clear();
  const size_t size = table_.size();
  const size_t start = token % size;
  for (size_t step = 0; step < size && out->size() < n; ++step) {
    const uint32_t owner = table_[(start + step) % size];
    if (std::find(out->begin(), out->end(), owner) == out->end()) out->push_back(owner);
  }
  // A table holds every node at least once (M >= 100 N, each node takes a first turn in the
  // first rounds), so the walk always finds n distinct nodes.
  return Status::OK();
}

}  // namespace shardkv
