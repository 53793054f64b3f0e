#include "consensus/raft_codec.h"

#include <cstring>
#include <vector>

namespace shardkv::consensus {

void PutU64(std::string* out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU32(std::string* out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void PutU16(std::string* out, uint16_t v) {
  out->push_back(static_cast<char>(v & 0xff));
  out->push_back(static_cast<char>(v >> 8));
}

namespace {

template <typename T>
bool GetLE(std::string_view* in, T* v) {
  if (in->size() < sizeof(T)) return false;
  T r = 0;
  for (size_t i = 0; i < sizeof(T); ++i) {
    r |= static_cast<T>(static_cast<unsigned char>((*in)[i])) << (8 * i);
  }
  *v = r;
  in->remove_prefix(sizeof(T));
  return true;
}

void PutStr(std::string* out, std::string_view s) {
  PutU16(out, static_cast<uint16_t>(s.size()));
  out->append(s);
}

bool GetStr(std::string_view* in, size_t max, std::string_view* s) {
  uint16_t n = 0;
  if (!GetU16(in, &n) || n > max || in->size() < n) return false;
  *s = in->substr(0, n);
  // Addresses become C strings for libraft: an embedded NUL would silently cut them short.
  if (s->find('\0') != std::string_view::npos) return false;
  in->remove_prefix(n);
  return true;
}

Status Malformed(const char* what) {
  return Status::Corruption(std::string("malformed raft message: ") + what);
}

}  // namespace

bool GetU64(std::string_view* in, uint64_t* v) { return GetLE(in, v); }
bool GetU64(std::string_view* in, unsigned long long* v) { return GetLE(in, v); }
bool GetU32(std::string_view* in, uint32_t* v) { return GetLE(in, v); }
bool GetU16(std::string_view* in, uint16_t* v) { return GetLE(in, v); }
bool GetU8(std::string_view* in, uint8_t* v) { return GetLE(in, v); }

void EncodeRaftConfiguration(const raft_configuration& conf, std::string* out) {
  PutU32(out, conf.n);
  for (unsigned i = 0; i < conf.n; ++i) {
    const raft_server& s = conf.servers[i];
    PutU64(out, s.id);
    out->push_back(static_cast<char>(s.role));
    PutStr(out, s.address == nullptr ? std::string_view() : std::string_view(s.address));
  }
}

Status DecodeRaftConfiguration(std::string_view* in, raft_configuration* conf) {
  uint32_t n = 0;
  if (!GetU32(in, &n) || n > kMaxRaftServers) return Malformed("configuration size");
  for (uint32_t i = 0; i < n; ++i) {
    uint64_t id = 0;
    uint8_t role = 0;
    std::string_view address;
    if (!GetU64(in, &id) || !GetU8(in, &role) || !GetStr(in, kMaxRaftAddressBytes, &address)) {
      return Malformed("configuration server");
    }
    if (id == 0 || role > RAFT_SPARE) return Malformed("configuration server id or role");
    const std::string copy(address);  // raft_configuration_add copies it
    if (raft_configuration_add(conf, id, copy.c_str(), role) != 0) {
      return Malformed("configuration: duplicate server");
    }
  }
  return Status::OK();
}

Status EncodeRaftMessage(const raft_message& m, uint64_t sender_id, std::string_view sender_address,
                         std::string* out) {
  if (sender_address.size() > kMaxRaftAddressBytes) {
    return Status::InvalidArgument("raft address too long: " + std::string(sender_address));
  }
  out->push_back(static_cast<char>(kRaftMessageFormat));
  out->push_back(static_cast<char>(m.type));
  PutU64(out, sender_id);
  PutStr(out, sender_address);
  switch (m.type) {
    case RAFT_IO_REQUEST_VOTE: {
      const raft_request_vote& r = m.request_vote;
      PutU64(out, r.term);
      PutU64(out, r.candidate_id);
      PutU64(out, r.last_log_index);
      PutU64(out, r.last_log_term);
      out->push_back(static_cast<char>((r.disrupt_leader ? 1 : 0) | (r.pre_vote ? 2 : 0)));
      return Status::OK();
    }
    case RAFT_IO_REQUEST_VOTE_RESULT: {
      const raft_request_vote_result& r = m.request_vote_result;
      PutU64(out, r.term);
      out->push_back(static_cast<char>(r.vote_granted ? 1 : 0));
      out->push_back(static_cast<char>(r.pre_vote));
      return Status::OK();
    }
    case RAFT_IO_APPEND_ENTRIES: {
      const raft_append_entries& r = m.append_entries;
      PutU64(out, r.term);
      PutU64(out, r.prev_log_index);
      PutU64(out, r.prev_log_term);
      PutU64(out, r.leader_commit);
      PutU32(out, r.n_entries);
      for (unsigned i = 0; i < r.n_entries; ++i) {
        const raft_entry& e = r.entries[i];
        PutU64(out, e.term);
        PutU16(out, e.type);
        PutU32(out, static_cast<uint32_t>(e.buf.len));
        out->append(static_cast<const char*>(e.buf.base), e.buf.len);
      }
      return Status::OK();
    }
    case RAFT_IO_APPEND_ENTRIES_RESULT: {
      const raft_append_entries_result& r = m.append_entries_result;
      PutU64(out, r.term);
      PutU64(out, r.rejected);
      PutU64(out, r.last_log_index);
      return Status::OK();
    }
    case RAFT_IO_INSTALL_SNAPSHOT: {
      const raft_install_snapshot& r = m.install_snapshot;
      PutU64(out, r.term);
      PutU64(out, r.last_index);
      PutU64(out, r.last_term);
      EncodeRaftConfiguration(r.conf, out);
      PutU64(out, r.conf_index);
      PutU32(out, static_cast<uint32_t>(r.data.len));
      out->append(static_cast<const char*>(r.data.base), r.data.len);
      return Status::OK();
    }
    case RAFT_IO_TIMEOUT_NOW: {
      const raft_timeout_now& r = m.timeout_now;
      PutU64(out, r.term);
      PutU64(out, r.last_log_index);
      PutU64(out, r.last_log_term);
      return Status::OK();
    }
    default:
      return Status::InvalidArgument("unknown raft message type " + std::to_string(m.type));
  }
}

namespace {

Status DecodeEntries(std::string_view* in, raft_append_entries* r) {
  uint32_t n = 0;
  if (!GetU32(in, &n)) return Malformed("entry count");
  r->entries = nullptr;
  r->n_entries = 0;
  if (n == 0) return Status::OK();
  // Every entry takes at least 14 bytes: a count the bytes cannot hold is refused before any
  // allocation.
  if (n > in->size() / 14) return Malformed("entry count larger than the message");
  struct Header {
    uint64_t term;
    uint16_t type;
    std::string_view data;
  };
  std::vector<Header> headers;
  headers.reserve(n);
  size_t total = 0;
  for (uint32_t i = 0; i < n; ++i) {
    Header h{};
    uint32_t len = 0;
    if (!GetU64(in, &h.term) || !GetU16(in, &h.type) || !GetU32(in, &len) || in->size() < len) {
      return Malformed("entry");
    }
    if (h.type < RAFT_COMMAND || h.type > RAFT_CHANGE) return Malformed("entry type");
    h.data = in->substr(0, len);
    in->remove_prefix(len);
    total += len;
    headers.push_back(h);
  }
  auto* entries = static_cast<raft_entry*>(raft_calloc(n, sizeof(raft_entry)));
  if (entries == nullptr) return Status::ResourceExhausted("raft message: out of memory");
  void* batch = raft_malloc(total == 0 ? 1 : total);
  if (batch == nullptr) {
    raft_free(entries);
    return Status::ResourceExhausted("raft message: out of memory");
  }
  char* cursor = static_cast<char*>(batch);
  for (uint32_t i = 0; i < n; ++i) {
    entries[i].term = headers[i].term;
    entries[i].type = headers[i].type;
    entries[i].buf.base = cursor;
    entries[i].buf.len = headers[i].data.size();
    entries[i].batch = batch;
    if (!headers[i].data.empty()) {
      std::memcpy(cursor, headers[i].data.data(), headers[i].data.size());
    }
    cursor += headers[i].data.size();
  }
  r->entries = entries;
  r->n_entries = n;
  return Status::OK();
}

}  // namespace

void ReleaseRaftMessage(raft_message* m) {
  if (m->type == RAFT_IO_APPEND_ENTRIES && m->append_entries.entries != nullptr) {
    raft_free(m->append_entries.entries[0].batch);
    raft_free(m->append_entries.entries);
    m->append_entries.entries = nullptr;
    m->append_entries.n_entries = 0;
  } else if (m->type == RAFT_IO_INSTALL_SNAPSHOT) {
    raft_configuration_close(&m->install_snapshot.conf);
    raft_free(m->install_snapshot.data.base);
    m->install_snapshot.data.base = nullptr;
  }
}

Status DecodeRaftMessage(std::string_view bytes, raft_message* m, std::string* address_storage) {
  std::memset(m, 0, sizeof(*m));
  std::string_view in = bytes;
  uint8_t format = 0, type = 0;
  uint64_t sender = 0;
  std::string_view address;
  if (!GetU8(&in, &format)) return Malformed("empty");
  if (format != kRaftMessageFormat) {
    return Status::NotSupported("raft message format " + std::to_string(format) +
                                " is unknown to this build");
  }
  if (!GetU8(&in, &type) || !GetU64(&in, &sender) || !GetStr(&in, kMaxRaftAddressBytes, &address)) {
    return Malformed("header");
  }
  if (sender == 0) return Malformed("sender id 0");
  address_storage->assign(address);
  m->type = type;
  m->server_id = sender;
  m->server_address = address_storage->c_str();
  bool ok = true;
  switch (type) {
    case RAFT_IO_REQUEST_VOTE: {
      raft_request_vote& r = m->request_vote;
      uint8_t flags = 0;
      ok = GetU64(&in, &r.term) && GetU64(&in, &r.candidate_id) && GetU64(&in, &r.last_log_index) &&
           GetU64(&in, &r.last_log_term) && GetU8(&in, &flags) && (flags & ~3) == 0;
      r.disrupt_leader = (flags & 1) != 0;
      r.pre_vote = (flags & 2) != 0;
      break;
    }
    case RAFT_IO_REQUEST_VOTE_RESULT: {
      raft_request_vote_result& r = m->request_vote_result;
      uint8_t granted = 0, pre = 0;
      ok = GetU64(&in, &r.term) && GetU8(&in, &granted) && GetU8(&in, &pre) && granted <= 1 &&
           pre <= raft_tribool_false;
      r.vote_granted = granted == 1;
      r.pre_vote = static_cast<raft_tribool>(pre);
      break;
    }
    case RAFT_IO_APPEND_ENTRIES: {
      raft_append_entries& r = m->append_entries;
      if (!GetU64(&in, &r.term) || !GetU64(&in, &r.prev_log_index) ||
          !GetU64(&in, &r.prev_log_term) || !GetU64(&in, &r.leader_commit)) {
        return Malformed("append entries");
      }
      Status s = DecodeEntries(&in, &r);
      if (!s.ok()) return s;
      break;
    }
    case RAFT_IO_APPEND_ENTRIES_RESULT: {
      raft_append_entries_result& r = m->append_entries_result;
      ok = GetU64(&in, &r.term) && GetU64(&in, &r.rejected) && GetU64(&in, &r.last_log_index);
      break;
    }
    case RAFT_IO_INSTALL_SNAPSHOT: {
      raft_install_snapshot& r = m->install_snapshot;
      raft_configuration_init(&r.conf);
      uint32_t len = 0;
      if (!GetU64(&in, &r.term) || !GetU64(&in, &r.last_index) || !GetU64(&in, &r.last_term)) {
        raft_configuration_close(&r.conf);
        return Malformed("install snapshot");
      }
      Status s = DecodeRaftConfiguration(&in, &r.conf);
      if (s.ok() && (!GetU64(&in, &r.conf_index) || !GetU32(&in, &len) || in.size() < len)) {
        s = Malformed("install snapshot data");
      }
      if (!s.ok()) {
        raft_configuration_close(&r.conf);
        return s;
      }
      r.data.base = raft_malloc(len == 0 ? 1 : len);
      if (r.data.base == nullptr) {
        raft_configuration_close(&r.conf);
        return Status::ResourceExhausted("raft message: out of memory");
      }
      if (len > 0) std::memcpy(r.data.base, in.data(), len);
      r.data.len = len;
      in.remove_prefix(len);
      break;
    }
    case RAFT_IO_TIMEOUT_NOW: {
      raft_timeout_now& r = m->timeout_now;
      ok = GetU64(&in, &r.term) && GetU64(&in, &r.last_log_index) && GetU64(&in, &r.last_log_term);
      break;
    }
    default:
      return Malformed("unknown type");
  }
  if (ok && !in.empty()) {
    ReleaseRaftMessage(m);
    return Malformed("trailing bytes");
  }
  if (!ok) return Malformed("truncated");
  return Status::OK();
}

}  // namespace shardkv::consensus
