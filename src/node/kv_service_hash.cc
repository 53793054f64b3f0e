// KvService's hash operations (design.md "Hashes"): HSET, HSETNX and HDEL as read, then a write
// of the changed fields alone; HGETALL as a read.
//
// Why fields are written alone, each with a version of its own, rather than the whole hash read,
// changed and written back: two coordinators doing that at once would each write the fields the
// other did not see, and last-write-wins on the record would keep one of the two. Replicas merge
// field by field instead (value_envelope.h HashField), so concurrent HSETs of different fields
// through different nodes both survive. The read only decides the reply (fields added or
// removed), the type check (WRONGTYPE) and the bounds.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "node/collection_write.h"
#include "node/kv_service.h"

namespace shardkv::node {

void KvService::Serve(const Call& call, net::HashWriteRequest& r,
                      net::OpDone<net::HashWriteResponse> done) {
  if (Status s = CheckKey(r.key); !s.ok()) return done(std::move(s));
  if (r.set.empty() == r.remove.empty()) {
    return done(Status::InvalidArgument("a hash write sets fields or removes them"));
  }
  // The fields by name; a name given twice takes its last value (HSET k f 1 f 2 sets 2).
  std::map<std::string, std::string> set;
  for (net::HashFieldValue& f : r.set) {
    if (Status s = CheckValue(f.value); !s.ok()) return done(std::move(s));
    if (f.name.size() > limits_.max_key_bytes) {
      return done(Status::InvalidArgument("a field name is " + std::to_string(f.name.size()) +
                                          " bytes; the limit is " +
                                          std::to_string(limits_.max_key_bytes)));
    }
    set[std::move(f.name)] = std::move(f.value);
  }
  std::vector<std::string> remove = std::move(r.remove);
  std::sort(remove.begin(), remove.end());
  remove.erase(std::unique(remove.begin(), remove.end()), remove.end());
  const std::shared_ptr<const ClusterMap>& map = call.map;
  const net::Consistency c = call.consistency;
  const uint64_t token = map->TokenOf(r.key);
  std::string key = r.key;
  const bool only_new = r.only_new;
  const size_t max_bytes = limits_.max_value_bytes;
  auto coordinator = d_.coordinator;
  storage::Storage* storage = d_.storage;
  const uint32_t self = d_.self_id;
  coordinator->Read(
      map, token, std::move(r.key), c,
      [map, token, key = std::move(key), set = std::move(set), remove = std::move(remove), only_new,
       max_bytes, c, coordinator, storage, self,
       done = std::move(done)](StatusOr<storage::Envelope> env) mutable {
        if (!env.ok() && !env.status().IsNotFound()) return done(env.status());
        const uint64_t now = storage->WallClockMs();
        const bool live = env.ok() && env->LiveAt(now);
        if (live && env->collection() != storage::Collection::kHash) {
          return done(net::WrongTypeError());
        }
        // The hash as read: its live fields (none when missing or expired).
        std::map<std::string_view, size_t> fields;  // name -> value bytes
        size_t bytes = 0;
        if (live) {
          for (const storage::HashField& f : env->hash) {
            if (f.deleted) continue;
            fields.emplace(f.name, f.value.size());
            bytes += f.name.size() + f.value.size();
          }
        }
        StatusOr<uint64_t> clock = storage->clock().Now();
        if (!clock.ok()) return done(clock.status());
        uint64_t ts = *clock;
        storage::Envelope record = CollectionBase(env, now, !set.empty(), &ts);
        const storage::Version v{ts, self};
        uint32_t changed = 0;
        if (!set.empty()) {
          for (auto& [name, value] : set) {
            const auto it = fields.find(name);
            if (it != fields.end()) {
              if (only_new) continue;
              bytes -= name.size() + it->second;
            } else {
              ++changed;
            }
            bytes += name.size() + value.size();
            record.hash.push_back(storage::HashField{name, v, false, std::move(value)});
          }
          if (fields.size() + changed > storage::kMaxHashFields) {
            return done(Status::InvalidArgument(
                "the hash would have " + std::to_string(fields.size() + changed) +
                " fields; at most " + std::to_string(storage::kMaxHashFields)));
          }
          if (bytes > max_bytes) {
            return done(Status::InvalidArgument("the hash would be " + std::to_string(bytes) +
                                                " bytes; the limit is " +
                                                std::to_string(max_bytes)));
          }
        } else {
          // Field tombstones only, even for the last fields: the hash then reads as missing (the
          // key goes, as in Redis), and the GC collects it like a tombstone. A key tombstone
          // instead would reset an HSET of another field running at once through another node
          // (an older version than the tombstone's, which the read did not see).
          for (const std::string& name : remove) {
            if (fields.count(name) == 0) continue;
            ++changed;
            record.hash.push_back(storage::HashField{name, v, true, ""});
          }
        }
        WriteCollection(coordinator, map, token, std::move(key), std::move(record), c, changed,
                        std::move(done));
      });
}

void KvService::Serve(const Call& call, net::HashReadRequest& r,
                      net::OpDone<net::HashReadResponse> done) {
  if (Status s = CheckKey(r.key); !s.ok()) return done(std::move(s));
  const uint64_t token = call.map->TokenOf(r.key);
  storage::Storage* storage = d_.storage;
  d_.coordinator->Read(call.map, token, std::move(r.key), call.consistency,
                       [storage, done = std::move(done)](StatusOr<storage::Envelope> env) mutable {
                         net::HashReadResponse out;
                         if (!env.ok()) {
                           if (env.status().IsNotFound()) return done(std::move(out));
                           return done(env.status());
                         }
                         const uint64_t now = storage->WallClockMs();
                         if (!env->LiveAt(now)) return done(std::move(out));
                         if (env->collection() != storage::Collection::kHash) {
                           return done(net::WrongTypeError());
                         }
                         out.found = true;
                         out.expires_at_ms = env->ExpiresAtMsAt(now);
                         out.fields.reserve(env->hash.size());
                         for (storage::HashField& f : env->hash) {
                           if (!f.deleted)
                             out.fields.push_back({std::move(f.name), std::move(f.value)});
                         }
                         done(std::move(out));
                       });
}

}  // namespace shardkv::node
