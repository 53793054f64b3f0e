#include "consensus/raft_io.h"

#include <spdlog/spdlog.h>

#include <asio/post.hpp>
#include <chrono>
#include <cstring>

#include "consensus/raft_codec.h"

namespace shardkv::consensus {
namespace {

constexpr size_t kMaxInternedAddresses = 256;

// A raft_snapshot allocated the way libraft frees it (snapshotDestroy): the struct, one buffer
// array of one buffer, and the configuration.
raft_snapshot* NewRaftSnapshot(const StoredSnapshot& s, Status* error) {
  auto* snap = static_cast<raft_snapshot*>(raft_calloc(1, sizeof(raft_snapshot)));
  if (snap == nullptr) {
    *error = Status::ResourceExhausted("raft snapshot: out of memory");
    return nullptr;
  }
  snap->index = s.index;
  snap->term = s.term;
  snap->configuration_index = s.conf_index;
  raft_configuration_init(&snap->configuration);
  std::string_view conf = s.conf;
  *error = DecodeRaftConfiguration(&conf, &snap->configuration);
  snap->bufs = static_cast<raft_buffer*>(raft_calloc(1, sizeof(raft_buffer)));
  if (error->ok() && snap->bufs != nullptr) {
    snap->bufs[0].base = raft_malloc(s.data.empty() ? 1 : s.data.size());
    if (snap->bufs[0].base != nullptr) {
      if (!s.data.empty()) std::memcpy(snap->bufs[0].base, s.data.data(), s.data.size());
      snap->bufs[0].len = s.data.size();
      snap->n_bufs = 1;
      return snap;
    }
  }
  if (error->ok()) *error = Status::ResourceExhausted("raft snapshot: out of memory");
  raft_configuration_close(&snap->configuration);
  if (snap->bufs != nullptr) raft_free(snap->bufs);
  raft_free(snap);
  return nullptr;
}

}  // namespace

RaftIo::RaftIo(asio::io_context& loop, RaftLogStore* store, RaftTransport* transport, uint32_t seed)
    : loop_(loop), store_(store), transport_(transport), random_(seed), tick_timer_(loop) {
  io_.version = 1;
  io_.impl = this;
  io_.init = Init;
  io_.close = Close;
  io_.load = Load;
  io_.start = Start;
  io_.bootstrap = Bootstrap;
  io_.recover = Recover;
  io_.set_term = SetTerm;
  io_.set_vote = SetVote;
  io_.send = Send;
  io_.append = Append;
  io_.truncate = Truncate;
  io_.snapshot_put = SnapshotPut;
  io_.snapshot_get = SnapshotGet;
  io_.time = Time;
  io_.random = Random;
}

int RaftIo::Failed(const Status& s) {
  ++stats_.disk_errors;
  last_error_ = s.ToString();
  std::snprintf(io_.errmsg, sizeof(io_.errmsg), "%s", last_error_.c_str());
  if (!failed_) {
    spdlog::error(
        "shardkv raft: server {}: {}; it stops taking part in consensus and starts again from "
        "its stored log once its store takes writes again",
        id_, last_error_);
  }
  failed_ = true;
  return RAFT_IOERR;
}

// While failed_, a disk request fails at once: nothing more reaches the store, so what it holds
// stays a state this server could have crashed in.
int RaftIo::Refused() {
  std::snprintf(io_.errmsg, sizeof(io_.errmsg), "%s", last_error_.c_str());
  return RAFT_IOERR;
}

void RaftIo::Reset() {
  tick_timer_.cancel();
  closed_ = false;
  failed_ = false;
  tick_cb_ = nullptr;
  recv_cb_ = nullptr;
  next_index_ = 1;
  term_ = 0;
}

int RaftIo::Init(raft_io* io, raft_id id, const char* address) {
  RaftIo* self = Self(io);
  self->id_ = id;
  self->address_ = address == nullptr ? "" : address;
  return 0;
}

void RaftIo::Close(raft_io* io, raft_io_close_cb cb) {
  RaftIo* self = Self(io);
  self->closed_ = true;
  self->tick_timer_.cancel();
  // After every completion already posted.
  if (cb != nullptr) asio::post(self->loop_, [io, cb] { cb(io); });
}

int RaftIo::Load(raft_io* io, raft_term* term, raft_id* voted_for, raft_snapshot** snapshot,
                 raft_index* start_index, raft_entry** entries, size_t* n_entries) {
  RaftIo* self = Self(io);
  StatusOr<StoredState> state = self->store_->Load();
  if (!state.ok()) return self->Failed(state.status());
  *term = state->term;
  *voted_for = state->vote;
  self->term_ = state->term;
  *snapshot = nullptr;
  if (state->snapshot) {
    Status error;
    *snapshot = NewRaftSnapshot(*state->snapshot, &error);
    if (*snapshot == nullptr) return self->Failed(error);
  }
  *start_index = state->start_index;
  *entries = nullptr;
  *n_entries = state->entries.size();
  self->next_index_ = state->start_index + state->entries.size();
  if (state->entries.empty()) return 0;
  size_t total = 0;
  for (const StoredEntry& e : state->entries) total += e.data.size();
  auto* out = static_cast<raft_entry*>(raft_calloc(state->entries.size(), sizeof(raft_entry)));
  void* batch = raft_malloc(total == 0 ? 1 : total);
  if (out == nullptr || batch == nullptr) {
    raft_free(out);
    raft_free(batch);
    return RAFT_NOMEM;
  }
  char* cursor = static_cast<char*>(batch);
  for (size_t i = 0; i < state->entries.size(); ++i) {
    const StoredEntry& e = state->entries[i];
    out[i].term = e.term;
    out[i].type = e.type;
    out[i].buf.base = cursor;
    out[i].buf.len = e.data.size();
    out[i].batch = batch;
    if (!e.data.empty()) std::memcpy(cursor, e.data.data(), e.data.size());
    cursor += e.data.size();
  }
  *entries = out;
  return 0;
}

int RaftIo::Start(raft_io* io, unsigned msecs, raft_io_tick_cb tick, raft_io_recv_cb recv) {
  RaftIo* self = Self(io);
  self->tick_ms_ = msecs == 0 ? 1 : msecs;
  self->tick_cb_ = tick;
  self->recv_cb_ = recv;
  self->ArmTick();
  return 0;
}

void RaftIo::ArmTick() {
  tick_timer_.expires_after(std::chrono::milliseconds(tick_ms_));
  tick_timer_.async_wait([this](const std::error_code& ec) {
    if (ec || closed_) return;
    tick_cb_(&io_);
    if (!closed_) ArmTick();
  });
}

int RaftIo::Bootstrap(raft_io* io, const raft_configuration* conf) {
  RaftIo* self = Self(io);
  if (self->failed_) return self->Refused();
  StatusOr<bool> empty = self->store_->Empty();
  if (!empty.ok()) return self->Failed(empty.status());
  if (!*empty) return RAFT_CANTBOOTSTRAP;
  raft_buffer buf{};
  const int rv = raft_configuration_encode(conf, &buf);
  if (rv != 0) return rv;
  StoredEntry entry;
  entry.term = 1;
  entry.type = RAFT_CHANGE;
  entry.data.assign(static_cast<const char*>(buf.base), buf.len);
  raft_free(buf.base);
  Status s = self->store_->Append(1, {entry});
  if (s.ok()) s = self->store_->SetTerm(1);
  if (!s.ok()) return self->Failed(s);
  self->term_ = 1;
  self->next_index_ = 2;
  return 0;
}

int RaftIo::Recover(raft_io* io, const raft_configuration* conf) {
  // raft_recover: force a configuration after losing a quorum, by appending it to this
  // server's log in its current term (libuv raft does the same).
  RaftIo* self = Self(io);
  if (self->failed_) return self->Refused();
  StatusOr<StoredState> state = self->store_->Load();
  if (!state.ok()) return self->Failed(state.status());
  raft_buffer buf{};
  const int rv = raft_configuration_encode(conf, &buf);
  if (rv != 0) return rv;
  StoredEntry entry;
  entry.term = state->term;
  entry.type = RAFT_CHANGE;
  entry.data.assign(static_cast<const char*>(buf.base), buf.len);
  raft_free(buf.base);
  Status s = self->store_->Append(state->start_index + state->entries.size(), {entry});
  if (!s.ok()) return self->Failed(s);
  return 0;
}

int RaftIo::SetTerm(raft_io* io, raft_term term) {
  RaftIo* self = Self(io);
  if (self->failed_) return self->Refused();
  Status s = self->store_->SetTerm(term);
  if (!s.ok()) return self->Failed(s);
  self->term_ = term;
  return 0;
}

int RaftIo::SetVote(raft_io* io, raft_id id) {
  RaftIo* self = Self(io);
  if (self->failed_) return self->Refused();
  Status s = self->store_->SetVote(id);
  if (!s.ok()) return self->Failed(s);
  return 0;
}

int RaftIo::Send(raft_io* io, raft_io_send* req, const raft_message* message, raft_io_send_cb cb) {
  RaftIo* self = Self(io);
  if (self->failed_) {
    // Silent: its peers must not count on a server that cannot persist what it acknowledges.
    if (cb != nullptr) asio::post(self->loop_, [req, cb] { cb(req, RAFT_NOCONNECTION); });
    return 0;
  }
  std::string bytes;
  Status s = EncodeRaftMessage(*message, self->id_, self->address_, &bytes);
  if (!s.ok()) {
    spdlog::error("shardkv raft: cannot encode a message: {}", s.ToString());
    return RAFT_INVALID;
  }
  ++self->stats_.sent;
  // The bytes are a copy: libraft may release the message's entries once cb has run.
  self->transport_->Send(message->server_id,
                         message->server_address == nullptr ? "" : message->server_address,
                         std::move(bytes));
  if (cb != nullptr) asio::post(self->loop_, [req, cb] { cb(req, 0); });
  return 0;
}

int RaftIo::Append(raft_io* io, raft_io_append* req, const raft_entry entries[], unsigned n,
                   raft_io_append_cb cb) {
  RaftIo* self = Self(io);
  if (self->failed_) {
    self->Refused();
    if (cb != nullptr) asio::post(self->loop_, [req, cb] { cb(req, RAFT_IOERR); });
    return 0;
  }
  std::vector<StoredEntry> stored(n);
  for (unsigned i = 0; i < n; ++i) {
    stored[i].term = entries[i].term;
    stored[i].type = entries[i].type;
    stored[i].data.assign(static_cast<const char*>(entries[i].buf.base), entries[i].buf.len);
  }
  Status s = self->store_->Append(self->next_index_, stored);
  int status = 0;
  if (s.ok()) {
    self->next_index_ += n;
  } else {
    status = self->Failed(s);
  }
  if (cb != nullptr) asio::post(self->loop_, [req, cb, status] { cb(req, status); });
  return 0;
}

int RaftIo::Truncate(raft_io* io, raft_index index) {
  RaftIo* self = Self(io);
  if (self->failed_) return self->Refused();
  Status s = self->store_->TruncateFrom(index);
  if (!s.ok()) return self->Failed(s);
  self->next_index_ = index;
  return 0;
}

int RaftIo::SnapshotPut(raft_io* io, unsigned trailing, raft_io_snapshot_put* req,
                        const raft_snapshot* snapshot, raft_io_snapshot_put_cb cb) {
  RaftIo* self = Self(io);
  if (self->failed_) {
    self->Refused();
    if (cb != nullptr) asio::post(self->loop_, [req, cb] { cb(req, RAFT_IOERR); });
    return 0;
  }
  StoredSnapshot s;
  s.index = snapshot->index;
  s.term = snapshot->term;
  s.conf_index = snapshot->configuration_index;
  EncodeRaftConfiguration(snapshot->configuration, &s.conf);
  for (unsigned i = 0; i < snapshot->n_bufs; ++i) {
    s.data.append(static_cast<const char*>(snapshot->bufs[i].base), snapshot->bufs[i].len);
  }
  // trailing == 0: a snapshot installed from the leader replaces the whole log. Otherwise keep
  // the last `trailing` entries before the snapshot, so slow followers can still be sent
  // entries instead of the whole snapshot.
  const uint64_t delete_through =
      trailing == 0 ? UINT64_MAX : (s.index > trailing ? s.index - trailing : 0);
  Status st = self->store_->PutSnapshot(s, delete_through);
  int status = 0;
  if (!st.ok()) {
    status = self->Failed(st);
  } else if (trailing == 0) {
    self->next_index_ = s.index + 1;
  }
  if (cb != nullptr) asio::post(self->loop_, [req, cb, status] { cb(req, status); });
  return 0;
}

int RaftIo::SnapshotGet(raft_io* io, raft_io_snapshot_get* req, raft_io_snapshot_get_cb cb) {
  RaftIo* self = Self(io);
  StatusOr<std::optional<StoredSnapshot>> stored = self->store_->GetSnapshot();
  raft_snapshot* snap = nullptr;
  int status = 0;
  if (!stored.ok()) {
    status = self->Failed(stored.status());
  } else if (!stored->has_value()) {
    status = RAFT_NOTFOUND;
  } else {
    Status error;
    snap = NewRaftSnapshot(**stored, &error);
    if (snap == nullptr) status = self->Failed(error);
  }
  asio::post(self->loop_, [req, cb, snap, status] { cb(req, snap, status); });
  return 0;
}

raft_time RaftIo::Time(raft_io*) {
  return static_cast<raft_time>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                    std::chrono::steady_clock::now().time_since_epoch())
                                    .count());
}

int RaftIo::Random(raft_io* io, int min, int max) {
  if (max <= min) return min;
  std::uniform_int_distribution<int> d(min, max - 1);
  return d(Self(io)->random_);
}

const char* RaftIo::Intern(std::string_view address) {
  for (const std::string& a : addresses_) {
    if (a == address) return a.c_str();
  }
  if (addresses_.size() >= kMaxInternedAddresses) return nullptr;
  addresses_.emplace_back(address);
  return addresses_.back().c_str();
}

void RaftIo::Receive(std::string_view bytes) {
  raft_message message;
  std::string address;
  Status s = DecodeRaftMessage(bytes, &message, &address);
  if (!s.ok()) {
    ++stats_.malformed;
    spdlog::warn("shardkv raft: dropped a message: {}", s.ToString());
    return;
  }
  const char* interned = Intern(address);
  if (closed_ || failed_ || recv_cb_ == nullptr || interned == nullptr) {
    ReleaseRaftMessage(&message);
    return;
  }
  message.server_address = interned;
  ++stats_.received;
  // libraft takes ownership of the entries and snapshot data.
  recv_cb_(&io_, &message);
}

}  // namespace shardkv::consensus
