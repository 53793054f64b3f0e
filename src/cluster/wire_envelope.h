// Conversions between a stored record (storage::Envelope, both registers) and its wire form
// (a value register's fields plus net::ExpiryRegister). One place, so that every path that
// moves records between nodes (replica writes and reads, read repair, hints, streams) carries
// the expiry register the same way.
#pragma once

#include <string>
#include <utility>

#include "net/messages.h"
#include "storage/value_envelope.h"

namespace shardkv::cluster {

// The wire form of e's expiry register (and counter entries); the default (all zero) when it is
// implied (format 1).
inline net::ExpiryRegister ExpiryToWire(const storage::Envelope& e) {
  net::ExpiryRegister out;
  if (e.explicit_expiry || e.value_absent) {
    const storage::Version v = e.expiry_version();
    out = net::ExpiryRegister{true, e.value_absent, v.timestamp, v.node_id, e.expires_at_ms(), {}};
  }
  out.counter.reserve(e.counter.size());
  for (const storage::CounterEntry& c : e.counter) {
    out.counter.push_back(
        net::CounterEntry{c.actor, c.base.timestamp, c.base.node_id, c.inc, c.dec});
  }
  out.hash.reserve(e.hash.size());
  for (const storage::HashField& f : e.hash) {
    out.hash.push_back(
        net::HashField{f.name, f.version.timestamp, f.version.node_id, f.deleted, f.value});
  }
  out.set.reserve(e.set.size());
  for (const storage::SetMember& m : e.set) {
    out.set.push_back(net::SetMember{m.name, m.actor, m.add, m.removed, m.removed_at});
  }
  return out;
}

// The record from its wire fields; a default `expiry` means format 1.
inline storage::Envelope EnvelopeFromWire(uint64_t ts, uint32_t node_id, bool tombstone,
                                          std::string value, const net::ExpiryRegister& expiry) {
  storage::Envelope e{ts, node_id, tombstone, std::move(value)};
  if (expiry.explicit_expiry) {
    e.value_absent = expiry.value_absent;
    e.SetExpiry({expiry.ts, expiry.node_id}, expiry.expires_at_ms);
  }
  // Their order and count are checked where the record is written (Storage's write checks).
  e.counter.reserve(expiry.counter.size());
  for (const net::CounterEntry& c : expiry.counter) {
    e.counter.push_back(storage::CounterEntry{c.actor, {c.base_ts, c.base_node_id}, c.inc, c.dec});
  }
  e.hash.reserve(expiry.hash.size());
  for (const net::HashField& f : expiry.hash) {
    e.hash.push_back(storage::HashField{f.name, {f.ts, f.node_id}, f.deleted, f.value});
  }
  e.set.reserve(expiry.set.size());
  for (const net::SetMember& m : expiry.set) {
    e.set.push_back(storage::SetMember{m.name, m.actor, m.add, m.removed, m.removed_at});
  }
  return e;
}

}  // namespace shardkv::cluster
