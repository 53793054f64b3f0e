// The versioned record nodes exchange (replica writes and reads, rebalance streams, anti-entropy
// repair): a key, its value register and its expiry register, as the storage envelope holds them.
//
// Thread-safety: value types.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace shardkv::net {

// One writer's counter entry (storage::CounterEntry; anti_entropy.capnp CounterEntry).
struct CounterEntry {
  uint64_t actor = 0;
  uint64_t base_ts = 0;
  uint32_t base_node_id = 0;
  uint64_t inc = 0;
  uint64_t dec = 0;
  friend bool operator==(const CounterEntry&, const CounterEntry&) = default;
};

// One field of a hash (storage::HashField; anti_entropy.capnp HashField).
struct HashField {
  std::string name;
  uint64_t ts = 0;
  uint32_t node_id = 0;
  bool deleted = false;
  std::string value;
  friend bool operator==(const HashField&, const HashField&) = default;
};

// One node's entry of a set member (storage::SetMember; anti_entropy.capnp SetMember).
struct SetMember {
  std::string name;
  uint32_t actor = 0;
  uint64_t add = 0;
  uint64_t removed = 0;
  uint64_t removed_at = 0;
  friend bool operator==(const SetMember&, const SetMember&) = default;
};

// A record's expiry register on the wire (shardkv.capnp ExpiryRegister); all defaults = the
// format-1 meaning (the value's version, no expiry). It also carries the record's counter
// entries (format 3), hash fields (format 4) and set entries (format 5), so that every path that
// moves records moves them.
struct ExpiryRegister {
  bool explicit_expiry = false;
  bool value_absent = false;
  uint64_t ts = 0;
  uint32_t node_id = 0;
  uint64_t expires_at_ms = 0;
  std::vector<CounterEntry> counter = {};
  std::vector<HashField> hash = {};
  std::vector<SetMember> set = {};
  friend bool operator==(const ExpiryRegister&, const ExpiryRegister&) = default;
};

// A key's stored version as nodes exchange it: the one record type of replica writes, replica
// reads and rebalance streams (the storage envelope's fields: last-write-wins compares ts, then
// node_id; a tombstone is a version too; the expiry register has its own version).
struct VersionedRecord {
  uint64_t token = 0;
  std::string key;
  uint64_t ts = 0;
  uint32_t node_id = 0;
  bool tombstone = false;
  std::string value;
  ExpiryRegister expiry;
  friend bool operator==(const VersionedRecord&, const VersionedRecord&) = default;
};

}  // namespace shardkv::net
