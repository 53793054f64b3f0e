// KvService's counter operation (design.md "Counters"): INCRBY as read, add to this node's own
// totals, write them to the key's replicas.
//
// Why a counter is a set of per-writer totals rather than a value read, incremented and written
// back: two coordinators doing that at once both write n + 1, and last-write-wins keeps one.
// Each coordinator instead raises only its own entry (kept in its Storage, where nothing else
// writes it, so it never goes back), and replicas merge entries by maximum: concurrent
// increments through different nodes add up, and a replayed, repaired or streamed entry counts
// once. The read only chooses the base (the value register version the entry counts over) and
// the reply's value.
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "node/kv_service.h"
#include "storage/counter_value.h"

namespace shardkv::node {
namespace {

// What a counter starts from when no replica holds the key: nothing at version (0, 0).
storage::Envelope Nothing() {
  storage::Envelope e;
  e.value_absent = true;
  e.SetExpiry(storage::Version{}, 0);
  return e;
}

// The base an increment counts over: the value register's version while it holds a value; a
// count from nothing begun now (after the dead register) when it holds a tombstone or nothing.
// Why not version (0, 0) for nothing: a tombstone collected on the replicas this read asked may
// still be held by another, and merged back it would reset an increment counted over (0, 0);
// it is older than this start, so it does not reset a count from nothing.
storage::Version BaseOf(const storage::Envelope& e, uint64_t now_ms) {
  if (e.has_value()) return e.version();
  return storage::CountFromNothing(std::max(now_ms << 16, e.timestamp + 1));
}

}  // namespace

void KvService::Serve(const Call& call, net::IncrRequest& r, net::OpDone<net::IncrResponse> done) {
  if (Status s = CheckKey(r.key); !s.ok()) return done(std::move(s));
  const std::shared_ptr<const ClusterMap>& map = call.map;
  const net::Consistency c = call.consistency;
  const uint64_t token = map->TokenOf(r.key);
  std::string key = r.key;
  const int64_t delta = r.delta;
  auto coordinator = d_.coordinator;
  storage::Storage* storage = d_.storage;
  coordinator->Read(
      map, token, std::move(r.key), c,
      [map, token, key = std::move(key), delta, c, coordinator, storage,
       done = std::move(done)](StatusOr<storage::Envelope> env) mutable {
        if (!env.ok() && !env.status().IsNotFound()) return done(env.status());
        storage::Envelope current = env.ok() ? std::move(*env) : Nothing();
        std::optional<storage::Version> death;
        const uint64_t now = storage->WallClockMs();
        if (current.ExpiredAt(now)) {
          // An expired record is a tombstone at its ExpiryDeath (every coordinator reading it
          // computes the same one), with only the counts from nothing that outlived it.
          death = current.ExpiryDeath();
          std::vector<storage::CounterEntry> kept;
          for (const storage::CounterEntry& e : current.counter) {
            if (current.CountsAt(e, now)) kept.push_back(e);
          }
          current = storage::Envelope::Plain(*death, true, "");
          current.counter = std::move(kept);
        }
        if (current.collection() != storage::Collection::kNone) return done(net::WrongTypeError());
        const std::optional<int64_t> before = storage::CounterValue(current);
        if (!before) {
          return done(Status::InvalidArgument("value is not an integer or out of range"));
        }
        if ((delta > 0 && *before > std::numeric_limits<int64_t>::max() - delta) ||
            (delta < 0 && *before < std::numeric_limits<int64_t>::min() - delta)) {
          return done(Status::InvalidArgument("increment or decrement would overflow"));
        }
        auto entry = storage->AddToCounter({token, key}, BaseOf(current, now), current, delta);
        if (!entry.ok()) return done(entry.status());
        // This node's totals count over a newer base than the read returned only if the read
        // missed a reset its own earlier increment saw (possible at consistency one). The entry
        // is still written, so the increment is not lost, but no value can be vouched for.
        const bool behind = !current.Counts(*entry);
        // A tombstone the entry may not outlive is left to the coordinators that read along.
        if (behind) death.reset();
        cluster::WriteSpec spec;
        spec.kind = cluster::WriteSpec::Kind::kMerge;
        spec.record = storage::CounterWrite(*entry, death);
        const std::optional<int64_t> after =
            storage::CounterValue(storage::Merge(current, spec.record));
        coordinator->Write(
            map, token, std::move(key), std::move(spec), c,
            [behind, after, done = std::move(done)](StatusOr<uint64_t> ts) {
              if (!ts.ok()) return done(ts.status());
              if (behind || !after) {
                return done(Status::Unavailable(
                    "the counter was reset after this read; the increment is written, read the "
                    "counter for its value"));
              }
              done(net::IncrResponse{*after});
            });
      });
}

}  // namespace shardkv::node
