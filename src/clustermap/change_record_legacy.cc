#include "clustermap/change_record_legacy.h"

#include <cstdlib>
#include <map>
#include <string>

namespace shardkv::legacy {
namespace {

constexpr std::string_view kRecordStart = "change_id=";
constexpr std::string_view kReportStart = "has_change=";

using Fields = std::map<std::string, std::string, std::less<>>;

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

// The strto* functions never throw; a malformed number reads as what parses of it (as v0.1.0
// read its own records).
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

StatusOr<ChangeRecord> ReadRecord(const Fields& f) {
  ChangeRecord r;
  r.change_id = U(f, "change_id");
  // v0.1.0 recorded only these two (a join was recorded as an add).
  const std::string kind = S(f, "kind");
  if (kind == "add") {
    r.kind = ChangeKind::kAdd;
  } else if (kind == "remove") {
    r.kind = ChangeKind::kRemove;
  } else {
    return Status::Corruption("change record (v0.1.0 text) of unknown kind '" + kind + "'");
  }
  r.node_id = static_cast<uint32_t>(U(f, "node_id"));
  // As v0.1.0 read it: a state it cannot name is a change that failed, not an unreadable map.
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

// The element count a report claims, capped by the lines it has: each element is at least one
// line, so a count past that is garbage, and looping to it would only cost time.
uint64_t Count(const Fields& f, std::string_view k) {
  const uint64_t n = U(f, k);
  return n < f.size() ? n : f.size();
}

}  // namespace

bool LooksLikeTextRecord(std::string_view bytes) { return bytes.starts_with(kRecordStart); }
bool LooksLikeTextReport(std::string_view bytes) { return bytes.starts_with(kReportStart); }

StatusOr<ChangeRecord> DecodeTextRecord(std::string_view text) {
  Fields f = Parse(text);
  if (f.find("change_id") == f.end()) return Status::Corruption("change record without an id");
  return ReadRecord(f);
}

StatusOr<ChangeReport> DecodeTextReport(std::string_view text) {
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
    if (k.starts_with("record.")) rec.emplace(k.substr(7), v);
  }
  // A report without a change carries a default record, its kind empty: nothing to read.
  if (r.has_change) {
    auto record = ReadRecord(rec);
    if (!record.ok()) return record.status().WithContext("rebalance report");
    r.record = std::move(*record);
  }
  const uint64_t n_streams = Count(f, "streams");
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
  const uint64_t n_shares = Count(f, "shares");
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

}  // namespace shardkv::legacy
