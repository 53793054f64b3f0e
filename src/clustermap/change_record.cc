#include <array>
#include <cstdlib>
#include <map>

#include "shardkv/change.h"

namespace shardkv {
namespace {

constexpr std::array<std::string_view, 8> kStateNames = {
    "planned", "streaming", "read_new", "new_only", "cleanup", "done", "failed", "cancelled"};

using Fields = std::map<std::string, std::string, std::less<>>;

std::string Flat(std::string s) {
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return s;
}

Fields Parse(std::string_view text) {
  Fields f;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    const size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    f.emplace(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  return f;
}

uint64_t U(const Fields& f, std::string_view k) {
  auto it = f.find(k);
  return it == f.end() ? 0 : std::strtoull(it->second.c_str(), nullptr, 10);
}
int64_t I(const Fields& f, std::string_view k) {
  auto it = f.find(k);
  return it == f.end() ? 0 : std::strtoll(it->second.c_str(), nullptr, 10);
}
double D(const Fields& f, std::string_view k) {
  auto it = f.find(k);
  return it == f.end() ? 0 : std::strtod(it->second.c_str(), nullptr);
}
std::string S(const Fields& f, std::string_view k) {
  auto it = f.find(k);
  return it == f.end() ? std::string() : it->second;
}

class Writer {
 public:
  explicit Writer(std::string prefix = "") : prefix_(std::move(prefix)) {}
  template <typename T>
  Writer& Num(std::string_view k, T v) {
    out_ += prefix_;
    out_ += k;
    out_ += '=';
    out_ += std::to_string(v);
    out_ += '\n';
    return *this;
  }
  Writer& Str(std::string_view k, const std::string& v) {
    out_ += prefix_;
    out_ += k;
    out_ += '=';
    out_ += Flat(v);
    out_ += '\n';
    return *this;
  }
  std::string& out() { return out_; }

 private:
  std::string prefix_;
  std::string out_;
};

void WriteRecord(const ChangeRecord& r, Writer& w) {
  w.Num("change_id", r.change_id)
      .Str("kind", r.kind)
      .Num("node_id", r.node_id)
      .Str("state", std::string(ChangeStateName(r.state)))
      .Str("error", r.error)
      .Num("from_epoch", r.from_epoch)
      .Num("rate_bytes_per_s", r.rate_bytes_per_s)
      .Num("streams_per_node", r.streams_per_node)
      .Num("planned_copies", r.planned_copies)
      .Num("planned_tombstones", r.planned_tombstones)
      .Num("planned_bytes", r.planned_bytes)
      .Num("planned_ranges", r.planned_ranges)
      .Num("planned_token_ranges", r.planned_token_ranges)
      .Num("remapped_keys", r.remapped_keys)
      .Num("live_keys", r.live_keys)
      .Num("total_copies", r.total_copies)
      .Num("ideal_fraction", r.ideal_fraction)
      .Num("replicas_configured", r.replicas_configured)
      .Num("replicas_after", r.replicas_after)
      .Num("write_quorum_after", r.write_quorum_after)
      .Num("read_quorum_after", r.read_quorum_after)
      .Num("moved_copies", r.moved_copies)
      .Num("moved_tombstones", r.moved_tombstones)
      .Num("moved_bytes", r.moved_bytes)
      .Num("resumed_tasks", r.resumed_tasks)
      .Num("moved_during_change", r.moved_during_change)
      .Num("resumed_copies", r.resumed_copies)
      .Num("takeovers", r.takeovers)
      .Num("failed_driver", r.failed_driver)
      .Num("started_ms", r.started_ms)
      .Num("finished_ms", r.finished_ms)
      .Num("client_errors_at_start", r.client_errors_at_start)
      .Num("client_errors", r.client_errors);
}

ChangeRecord ReadRecord(const Fields& f) {
  ChangeRecord r;
  r.change_id = U(f, "change_id");
  r.kind = S(f, "kind");
  r.node_id = static_cast<uint32_t>(U(f, "node_id"));
  auto st = ParseChangeState(S(f, "state"));
  r.state = st.ok() ? *st : ChangeState::kFailed;
  r.error = S(f, "error");
  r.from_epoch = U(f, "from_epoch");
  r.rate_bytes_per_s = U(f, "rate_bytes_per_s");
  r.streams_per_node = static_cast<uint32_t>(U(f, "streams_per_node"));
  r.planned_copies = U(f, "planned_copies");
  r.planned_tombstones = U(f, "planned_tombstones");
  r.planned_bytes = U(f, "planned_bytes");
  r.planned_ranges = U(f, "planned_ranges");
  r.planned_token_ranges = U(f, "planned_token_ranges");
  r.remapped_keys = U(f, "remapped_keys");
  r.live_keys = U(f, "live_keys");
  r.total_copies = U(f, "total_copies");
  r.ideal_fraction = D(f, "ideal_fraction");
  r.replicas_configured = static_cast<uint32_t>(U(f, "replicas_configured"));
  r.replicas_after = static_cast<uint32_t>(U(f, "replicas_after"));
  r.write_quorum_after = static_cast<uint32_t>(U(f, "write_quorum_after"));
  r.read_quorum_after = static_cast<uint32_t>(U(f, "read_quorum_after"));
  r.moved_copies = U(f, "moved_copies");
  r.moved_tombstones = U(f, "moved_tombstones");
  r.moved_bytes = U(f, "moved_bytes");
  r.resumed_tasks = U(f, "resumed_tasks");
  r.moved_during_change = U(f, "moved_during_change");
  r.resumed_copies = U(f, "resumed_copies");
  r.takeovers = static_cast<uint32_t>(U(f, "takeovers"));
  r.failed_driver = static_cast<uint32_t>(U(f, "failed_driver"));
  r.started_ms = U(f, "started_ms");
  r.finished_ms = U(f, "finished_ms");
  r.client_errors_at_start = I(f, "client_errors_at_start");
  r.client_errors = I(f, "client_errors");
  return r;
}

}  // namespace

std::string_view ChangeStateName(ChangeState s) {
  const auto i = static_cast<size_t>(s);
  return i < kStateNames.size() ? kStateNames[i] : "?";
}

StatusOr<ChangeState> ParseChangeState(std::string_view name) {
  for (size_t i = 0; i < kStateNames.size(); ++i) {
    if (kStateNames[i] == name) return static_cast<ChangeState>(i);
  }
  return Status::InvalidArgument("unknown change state '" + std::string(name) + "'");
}

std::string ChangeRecord::Encode() const {
  Writer w;
  WriteRecord(*this, w);
  return std::move(w.out());
}

StatusOr<ChangeRecord> ChangeRecord::Decode(std::string_view text) {
  Fields f = Parse(text);
  if (f.find("change_id") == f.end()) return Status::Corruption("change record without an id");
  return ReadRecord(f);
}

std::string ChangeReport::Encode() const {
  Writer w;
  w.Num("has_change", has_change ? 1 : 0)
      .Num("epoch", epoch)
      .Num("driver", driver)
      .Str("driver_address", driver_address)
      .Num("from_driver", from_driver ? 1 : 0)
      .Num("elapsed_s", elapsed_s)
      .Num("copies_done", copies_done)
      .Num("tombstones_done", tombstones_done)
      .Num("bytes_done", bytes_done)
      .Num("copies_during_change", copies_during_change)
      .Num("streams", streams.size())
      .Num("shares", shares.size());
  std::string out = std::move(w.out());
  Writer rec("record.");
  WriteRecord(record, rec);
  out += rec.out();
  for (size_t i = 0; i < streams.size(); ++i) {
    const StreamProgress& s = streams[i];
    Writer sw("stream." + std::to_string(i) + ".");
    sw.Num("source", s.source)
        .Num("destination", s.destination)
        .Num("tasks_total", s.tasks_total)
        .Num("tasks_done", s.tasks_done)
        .Num("ranges_total", s.ranges_total)
        .Num("ranges_done", s.ranges_done)
        .Num("copies_planned", s.copies_planned)
        .Num("copies_done", s.copies_done)
        .Num("bytes_planned", s.bytes_planned)
        .Num("bytes_done", s.bytes_done);
    out += sw.out();
  }
  for (size_t i = 0; i < shares.size(); ++i) {
    const NodeShare& s = shares[i];
    Writer sw("share." + std::to_string(i) + ".");
    sw.Num("id", s.id)
        .Str("address", s.address)
        .Str("state", s.state)
        .Num("before", s.share_before)
        .Num("after", s.share_after);
    out += sw.out();
  }
  return out;
}

StatusOr<ChangeReport> ChangeReport::Decode(std::string_view text) {
  Fields f = Parse(text);
  if (f.find("has_change") == f.end()) return Status::Corruption("not a rebalance report");
  ChangeReport r;
  r.has_change = U(f, "has_change") != 0;
  r.epoch = U(f, "epoch");
  r.driver = static_cast<uint32_t>(U(f, "driver"));
  r.driver_address = S(f, "driver_address");
  r.from_driver = U(f, "from_driver") != 0;
  r.elapsed_s = D(f, "elapsed_s");
  r.copies_done = U(f, "copies_done");
  r.tombstones_done = U(f, "tombstones_done");
  r.bytes_done = U(f, "bytes_done");
  r.copies_during_change = U(f, "copies_during_change");
  Fields rec;
  for (const auto& [k, v] : f) {
    if (k.rfind("record.", 0) == 0) rec.emplace(k.substr(7), v);
  }
  r.record = ReadRecord(rec);
  const uint64_t n_streams = std::min<uint64_t>(U(f, "streams"), 1u << 20);
  for (uint64_t i = 0; i < n_streams; ++i) {
    const std::string p = "stream." + std::to_string(i) + ".";
    StreamProgress s;
    s.source = static_cast<uint32_t>(U(f, p + "source"));
    s.destination = static_cast<uint32_t>(U(f, p + "destination"));
    s.tasks_total = U(f, p + "tasks_total");
    s.tasks_done = U(f, p + "tasks_done");
    s.ranges_total = U(f, p + "ranges_total");
    s.ranges_done = U(f, p + "ranges_done");
    s.copies_planned = U(f, p + "copies_planned");
    s.copies_done = U(f, p + "copies_done");
    s.bytes_planned = U(f, p + "bytes_planned");
    s.bytes_done = U(f, p + "bytes_done");
    r.streams.push_back(s);
  }
  const uint64_t n_shares = std::min<uint64_t>(U(f, "shares"), 1u << 16);
  for (uint64_t i = 0; i < n_shares; ++i) {
    const std::string p = "share." + std::to_string(i) + ".";
    NodeShare s;
    s.id = static_cast<uint32_t>(U(f, p + "id"));
    s.address = S(f, p + "address");
    s.state = S(f, p + "state");
    s.share_before = D(f, p + "before");
    s.share_after = D(f, p + "after");
    r.shares.push_back(s);
  }
  return r;
}

}  // namespace shardkv
