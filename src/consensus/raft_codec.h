// The wire and disk encodings of libraft's structures (design.md "Consensus"): raft messages
// between nodes, log entries and snapshots in the meta column family.
//
// libraft (Debian libraft-dev) leaves I/O to its user: shardkv implements `struct raft_io` over
// its own authenticated (and TLS) RPC and its RocksDB meta CF, so consensus traffic needs no
// second port and no second credential. These encodings are shardkv's own, not libuv raft's.
//
// Message, format 1 (integers little-endian; str = u16 length + bytes):
//   u8 format = 1, u8 type (RAFT_IO_*), u64 sender id, str sender address, then per type:
//   REQUEST_VOTE          term, candidate_id, last_log_index, last_log_term (u64), u8 flags
//                         (bit 0 disrupt_leader, bit 1 pre_vote)
//   REQUEST_VOTE_RESULT   term (u64), u8 vote_granted, u8 pre_vote (raft_tribool)
//   APPEND_ENTRIES        term, prev_log_index, prev_log_term, leader_commit (u64), u32 n,
//                         n x entry
//   APPEND_ENTRIES_RESULT term, rejected, last_log_index (u64)
//   INSTALL_SNAPSHOT      term, last_index, last_term (u64), configuration, conf_index (u64),
//                         u32 length + data
//   TIMEOUT_NOW           term, last_log_index, last_log_term (u64)
// entry = u64 term, u16 type, u32 length, bytes; configuration = u32 n, n x (u64 id, u8 role,
// str address).
//
// Decoding is bounded (limits below) and never trusts a length it has not checked against the
// bytes left. Decoded messages and entries are allocated with raft_malloc, in the layout libraft
// expects when it takes ownership (one batch for all entry data, as libuv raft does).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "consensus/libraft.h"
#include "shardkv/status.h"

namespace shardkv::consensus {

inline constexpr uint8_t kRaftMessageFormat = 1;
inline constexpr size_t kMaxRaftAddressBytes = 255;
inline constexpr size_t kMaxRaftServers = 64;

// Appends the encoding of `message`, sent by (`sender_id`, `sender_address`), to *out.
// InvalidArgument for a message type it does not know or an address that is too long.
[[nodiscard]] Status EncodeRaftMessage(const raft_message& message, uint64_t sender_id,
                                       std::string_view sender_address, std::string* out);

// Decodes into *message (server_id/server_address = the sender; the address points into
// *address_storage, which must outlive the message). On success the caller owns what the
// message points to (entries and their batch, snapshot data and configuration) and must pass it
// to libraft or release it with ReleaseRaftMessage. Corruption for anything malformed; nothing is
// left allocated on failure.
[[nodiscard]] Status DecodeRaftMessage(std::string_view bytes, raft_message* message,
                                       std::string* address_storage);
// Frees what a decoded message owns (for messages not handed to libraft).
void ReleaseRaftMessage(raft_message* message);

// A configuration, for snapshots on disk.
void EncodeRaftConfiguration(const raft_configuration& conf, std::string* out);
// Appends the servers to *conf (initialised by the caller). Consumes from *in.
[[nodiscard]] Status DecodeRaftConfiguration(std::string_view* in, raft_configuration* conf);

// Little-endian helpers shared with the log store.
void PutU64(std::string* out, uint64_t v);
void PutU32(std::string* out, uint32_t v);
void PutU16(std::string* out, uint16_t v);
bool GetU64(std::string_view* in, uint64_t* v);
// libraft's raft_term/raft_index/raft_id are unsigned long long, a distinct type from uint64_t.
bool GetU64(std::string_view* in, unsigned long long* v);
bool GetU32(std::string_view* in, uint32_t* v);
bool GetU16(std::string_view* in, uint16_t* v);
bool GetU8(std::string_view* in, uint8_t* v);

}  // namespace shardkv::consensus
