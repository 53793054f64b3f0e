// KvService's set operations (design.md "Sets"): SADD and SREM as a read, then a write of the
// changed entries alone; SMEMBERS as a read.
//
// Why an SADD writes an entry stamped by this node and an SREM writes the add times it read,
// rather than the set read, changed and written back: replicas merge entry by entry by maximum
// (value_envelope.h SetMember), so concurrent SADDs of different members through different nodes
// both survive, and an SREM removes only the adds it observed: an SADD that a concurrent SREM did
// not see stays (add wins). The read decides the reply (members added or removed), the type
// check (WRONGTYPE), the bounds, and which adds an SREM removes.
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "node/collection_write.h"
#include "node/kv_service.h"

namespace shardkv::node {
namespace {

// Sorted and without repeats (SADD k m m adds m once).
std::vector<std::string> Distinct(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// Bytes a set's entries take, for the value-size bound: the member, and about 28 bytes of actor
// and times (value_envelope.h format 5).
constexpr size_t kSetEntryOverhead = 28;

}  // namespace

void KvService::Serve(const Call& call, net::SetWriteRequest& r,
                      net::OpDone<net::SetWriteResponse> done) {
  if (Status s = CheckKey(r.key); !s.ok()) return done(std::move(s));
  if (r.add.empty() == r.remove.empty()) {
    return done(Status::InvalidArgument("a set write adds members or removes them"));
  }
  for (const std::string& m : r.add) {
    if (m.size() > limits_.max_key_bytes) {
      return done(Status::InvalidArgument("a set member is " + std::to_string(m.size()) +
                                          " bytes; the limit is " +
                                          std::to_string(limits_.max_key_bytes)));
    }
  }
  std::vector<std::string> add = Distinct(std::move(r.add));
  std::vector<std::string> remove = Distinct(std::move(r.remove));
  const std::shared_ptr<const ClusterMap>& map = call.map;
  const net::Consistency c = call.consistency;
  const uint64_t token = map->TokenOf(r.key);
  std::string key = r.key;
  const size_t max_bytes = limits_.max_value_bytes;
  auto coordinator = d_.coordinator;
  storage::Storage* storage = d_.storage;
  const uint32_t self = d_.self_id;
  coordinator->Read(
      map, token, std::move(r.key), c,
      [map, token, key = std::move(key), add = std::move(add), remove = std::move(remove),
       max_bytes, c, coordinator, storage, self,
       done = std::move(done)](StatusOr<storage::Envelope> env) mutable {
        if (!env.ok() && !env.status().IsNotFound()) return done(env.status());
        const uint64_t now = storage->WallClockMs();
        const bool live = env.ok() && env->LiveAt(now);
        if (live && env->collection() != storage::Collection::kSet) {
          return done(net::WrongTypeError());
        }
        // The set as read: its entries (none when missing or expired), live or not.
        static const std::vector<storage::SetMember> kNone;
        const std::vector<storage::SetMember>& read =
            env.ok() && !env->ExpiredAt(now) ? env->set : kNone;
        // The entries of member `name` in the read (ascending by (member, actor)).
        auto entries_of = [&](const std::string& name) {
          return std::equal_range(read.begin(), read.end(), storage::SetMember{name, 0, 0, 0, 0},
                                  [](const storage::SetMember& x, const storage::SetMember& y) {
                                    return x.name < y.name;
                                  });
        };
        auto live_member = [&](const std::string& name) {
          const auto [first, last] = entries_of(name);
          return std::any_of(first, last, [](const storage::SetMember& m) { return m.live(); });
        };
        StatusOr<uint64_t> clock = storage->clock().Now();
        if (!clock.ok()) return done(clock.status());
        uint64_t ts = *clock;
        storage::Envelope record = CollectionBase(env, now, !add.empty(), &ts);
        uint32_t changed = 0;
        if (!add.empty()) {
          size_t entries = read.size();
          size_t bytes = 0;
          for (const storage::SetMember& m : read) bytes += m.name.size() + kSetEntryOverhead;
          for (std::string& name : add) {
            if (!live_member(name)) ++changed;
            const auto [first, last] = entries_of(name);
            const bool own_entry = std::any_of(
                first, last, [&](const storage::SetMember& m) { return m.actor == self; });
            if (!own_entry) {
              ++entries;
              bytes += name.size() + kSetEntryOverhead;
            }
            // The entry's removes stay as the replicas hold them: a newer add outlives them.
            record.set.push_back(storage::SetMember{std::move(name), self, ts, 0, 0});
          }
          if (entries > storage::kMaxSetEntries) {
            return done(Status::InvalidArgument(
                "the set would have " + std::to_string(entries) +
                " entries (members times the nodes that added them); at most " +
                std::to_string(storage::kMaxSetEntries)));
          }
          if (bytes > max_bytes) {
            return done(Status::InvalidArgument("the set would be " + std::to_string(bytes) +
                                                " bytes; the limit is " +
                                                std::to_string(max_bytes)));
          }
        } else {
          // Each live entry of a member removed: the add time read, removed at this time. Entries
          // stay ordered: `remove` and `read` are both ascending.
          for (const std::string& name : remove) {
            bool counted = false;
            const auto [first, last] = entries_of(name);
            for (auto m = first; m != last; ++m) {
              if (!m->live()) continue;
              if (!counted) ++changed;
              counted = true;
              record.set.push_back(storage::SetMember{m->name, m->actor, m->add, m->add, ts});
            }
          }
        }
        WriteCollection(coordinator, map, token, std::move(key), std::move(record), c, changed,
                        std::move(done));
      });
}

void KvService::Serve(const Call& call, net::SetReadRequest& r,
                      net::OpDone<net::SetReadResponse> done) {
  if (Status s = CheckKey(r.key); !s.ok()) return done(std::move(s));
  const uint64_t token = call.map->TokenOf(r.key);
  storage::Storage* storage = d_.storage;
  d_.coordinator->Read(call.map, token, std::move(r.key), call.consistency,
                       [storage, done = std::move(done)](StatusOr<storage::Envelope> env) mutable {
                         net::SetReadResponse out;
                         if (!env.ok()) {
                           if (env.status().IsNotFound()) return done(std::move(out));
                           return done(env.status());
                         }
                         const uint64_t now = storage->WallClockMs();
                         if (!env->LiveAt(now)) return done(std::move(out));
                         if (env->collection() != storage::Collection::kSet) {
                           return done(net::WrongTypeError());
                         }
                         out.found = true;
                         out.expires_at_ms = env->ExpiresAtMsAt(now);
                         // Entries are ascending by member: one name per run of live entries.
                         for (storage::SetMember& m : env->set) {
                           if (!m.live()) continue;
                           if (!out.members.empty() && out.members.back() == m.name) continue;
                           out.members.push_back(std::move(m.name));
                         }
                         done(std::move(out));
                       });
}

}  // namespace shardkv::node
