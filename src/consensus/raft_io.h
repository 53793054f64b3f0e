// RaftIo: shardkv's implementation of libraft's `struct raft_io` (design.md "Consensus"): disk
// through RaftLogStore (the meta CF), network through a RaftTransport, time and ticks from an
// Asio event loop.
//
// libraft is single-threaded: every raft_* call, and every callback this class makes into
// libraft, happens on one event loop (RaftReplica's). Completions are posted to that loop rather
// than called from inside the request, because libraft does not expect re-entrant callbacks;
// the loop runs them in order, so the close callback comes after every completion before it.
//
// A store write that fails (a full disk) fails this RaftIo as a whole until Reset(): every later
// disk request fails without touching the store, and messages are neither sent nor received.
// libraft does not recover from a failed write by itself (a follower keeps the entries it could
// not persist in memory and never reports them stored; a failed term or vote write makes it
// unavailable), and later appends would land at the wrong indexes. So the server goes silent, and
// its owner (RaftReplica) closes libraft and starts it again from what the store holds once the
// store takes writes again: the same as a restart of the process, which Raft is built for.
//
// Internal to src/consensus (it includes Asio).
#pragma once

// A C++ standard header before Asio's, kept out of include sorting (which regroups blocks): Asio
// decides whether it has std::aligned_alloc from a libstdc++ macro
// (_GLIBCXX_HAVE_ALIGNED_ALLOC), and a translation unit that reached Asio's config first would
// decide otherwise than the rest (ASan: alloc-dealloc-mismatch in thread_info_base, seen when
// the sorted block had put <cstddef> after Asio).
// clang-format off
#include <cstddef>
// clang-format on

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <string_view>

#include "consensus/libraft.h"
#include "consensus/raft_log_store.h"
#include "consensus/raft_transport.h"

namespace shardkv::consensus {

struct RaftIoStats {
  uint64_t sent = 0;
  uint64_t received = 0;
  uint64_t malformed = 0;    // messages that did not decode (dropped)
  uint64_t disk_errors = 0;  // store writes that failed (reported to raft as RAFT_IOERR)
};

class RaftIo {
 public:
  RaftIo(asio::io_context& loop, RaftLogStore* store, RaftTransport* transport, uint32_t seed);
  RaftIo(const RaftIo&) = delete;
  RaftIo& operator=(const RaftIo&) = delete;

  raft_io* io() { return &io_; }
  // On the loop: a message from the transport. Dropped (and counted) if malformed or if raft
  // has not started or has closed.
  void Receive(std::string_view bytes);
  const RaftIoStats& stats() const { return stats_; }
  // The last store error, for the replica's status.
  const std::string& last_error() const { return last_error_; }
  // A store write failed since the last Reset(): the server no longer takes part (see above).
  bool failed() const { return failed_; }
  // After libraft closed: ready for another raft_init (the store is loaded again then).
  void Reset();

 private:
  static RaftIo* Self(raft_io* io) { return static_cast<RaftIo*>(io->impl); }
  static int Init(raft_io* io, raft_id id, const char* address);
  static void Close(raft_io* io, raft_io_close_cb cb);
  static int Load(raft_io* io, raft_term* term, raft_id* voted_for, raft_snapshot** snapshot,
                  raft_index* start_index, raft_entry** entries, size_t* n_entries);
  static int Start(raft_io* io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv);
  static int Bootstrap(raft_io* io, const raft_configuration* conf);
  static int Recover(raft_io* io, const raft_configuration* conf);
  static int SetTerm(raft_io* io, raft_term term);
  static int SetVote(raft_io* io, raft_id id);
  static int Send(raft_io* io, raft_io_send* req, const raft_message* message, raft_io_send_cb cb);
  static int Append(raft_io* io, raft_io_append* req, const raft_entry entries[], unsigned n,
                    raft_io_append_cb cb);
  static int Truncate(raft_io* io, raft_index index);
  static int SnapshotPut(raft_io* io, unsigned trailing, raft_io_snapshot_put* req,
                         const raft_snapshot* snapshot, raft_io_snapshot_put_cb cb);
  static int SnapshotGet(raft_io* io, raft_io_snapshot_get* req, raft_io_snapshot_get_cb cb);
  static raft_time Time(raft_io* io);
  static int Random(raft_io* io, int min, int max);

  int Failed(const Status& s);
  int Refused();
  void ArmTick();
  // Interned sender addresses: libraft may keep the pointer of a message's address.
  const char* Intern(std::string_view address);

  raft_io io_{};
  asio::io_context& loop_;
  RaftLogStore* store_;
  RaftTransport* transport_;
  std::mt19937 random_;
  asio::steady_timer tick_timer_;

  uint64_t id_ = 0;
  std::string address_;
  unsigned tick_ms_ = 0;
  raft_io_tick_cb tick_cb_ = nullptr;
  raft_io_recv_cb recv_cb_ = nullptr;
  bool closed_ = false;
  bool failed_ = false;
  uint64_t next_index_ = 1;  // index of the next appended entry
  uint64_t term_ = 0;
  std::deque<std::string> addresses_;
  RaftIoStats stats_;
  std::string last_error_;
};

}  // namespace shardkv::consensus
