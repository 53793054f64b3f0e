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

// The reset of an expired record: "0" at a version every coordinator that read this same
// expired record computes alike (above both registers and the expiry instant, node 0), so their
// increments count over one base instead of each resetting the others'.
storage::Version ExpiredReset(const storage::Envelope& e) {
  const uint64_t at = e.expires_at_ms() << 16;  // the expiry instant as an HLC timestamp
  return {std::max({e.timestamp, e.expiry_version().timestamp, at}) + 1, 0};
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
        std::optional<storage::Version> reset;
        const uint64_t now = storage->WallClockMs();
        if (current.expires_at_ms() != 0 && current.expires_at_ms() <= now) {
          reset = ExpiredReset(current);
          current = storage::Envelope::Plain(*reset, false, "0");
        }
        const std::optional<int64_t> before = storage::CounterValue(current);
        if (!before) {
          return done(Status::InvalidArgument("value is not an integer or out of range"));
        }
        if ((delta > 0 && *before > std::numeric_limits<int64_t>::max() - delta) ||
            (delta < 0 && *before < std::numeric_limits<int64_t>::min() - delta)) {
          return done(Status::InvalidArgument("increment or decrement would overflow"));
        }
        auto entry = storage->AddToCounter({token, key}, current.version(), delta);
        if (!entry.ok()) return done(entry.status());
        // This node's totals count over a newer base than the read returned only if the read
        // missed a reset its own earlier increment saw (possible at consistency one). The entry
        // is still written, so the increment is not lost, but no value can be vouched for.
        const bool behind = entry->base != current.version();
        if (behind) reset.reset();
        cluster::WriteSpec spec;
        spec.kind = cluster::WriteSpec::Kind::kMerge;
        spec.record = storage::CounterWrite(*entry, reset);
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
