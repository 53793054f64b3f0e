#include "cluster/repair_state.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <ctime>
#include <future>
#include <memory>
#include <vector>

#include "common/hlc.h"
#include "shardkv/stats.h"

namespace shardkv::cluster {
namespace {

// "<mark_ms> <marker id>": the expired write's time and the node that dropped it.
constexpr std::string_view kSelfMarkKey = "cluster/needs_repair_self";
constexpr std::string_view kRebuiltAtKey = "cluster/rebuilt_at_ms";
// Since when this node's GC has waited for repairs (decimal Unix ms; 0: since the database was
// created); absent while it collects by the grace alone.
constexpr std::string_view kGcWaitsSinceKey = "cluster/gc_waits_since_ms";

std::string UtcTime(uint64_t ms) {
  const std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// With one replica there are no other replicas whose tombstones could be gone: the hinted writes
// the node missed were never acknowledged (hints never count), and its data is the only copy, so
// refusing it (or rebuilding it from nowhere) would only lose data.
bool SingleReplica(const MapStore& maps) {
  auto map = maps.Current();
  return map != nullptr && map->EffectiveReplicas() <= 1;
}

std::string ReasonFor(uint32_t marker, uint64_t mark_ms) {
  std::string when = mark_ms > 1 ? " (the newest written at " + UtcTime(mark_ms) + ")" : "";
  return "node " + std::to_string(marker) +
         " dropped hinted writes for it that outlived the tombstone grace" + when +
         ", so it may hold values whose deletes the other replicas have already purged";
}

// What to do about a node that needs repair: a repair streams only what differs; a rebuild
// re-streams everything, for a lost disk or a range a repair refuses.
std::string Fix(uint32_t id) {
  const std::string n = std::to_string(id);
  return "bring it back with `shardkv repair --node " + n +
         "` (or, if its disk was lost or repair refuses a range, rebuild it with `shardkv "
         "cluster start-node " +
         n + " --rebuild`)";
}

}  // namespace

RepairState::RepairState(RepairStateOptions options, storage::Storage* storage, MapStore* maps,
                         net::PeerPool* peers, HintStore* hints)
    : options_(options), storage_(storage), maps_(maps), peers_(peers), hints_(hints) {}

RepairState::~RepairState() { Stop(); }

Status RepairState::Load() {
  if (!options_.gc_waits_for_repair) {
    // A later start with the rule on must not claim it waited meanwhile.
    SHARDKV_RETURN_IF_ERROR(storage_->DeleteAux(storage::AuxColumn::kMeta, kGcWaitsSinceKey));
  } else {
    auto since = storage_->GetAux(storage::AuxColumn::kMeta, kGcWaitsSinceKey);
    if (since.ok() && !options_.rebuild) {
      if (!ParseDecimal(*since, &gc_waits_since_ms_)) {
        return Status::Corruption("meta " + std::string(kGcWaitsSinceKey) + " is not a number");
      }
    } else if (options_.rebuild || since.status().IsNotFound()) {
      // Turned on now (an upgrade, or a start after one with the rule off), or rebuilt now (its
      // data comes from replicas that may have collected by the grace): what was collected
      // before by the grace alone may be gone. A database created with the rule on never did.
      if (options_.fresh_database && !options_.rebuild) {
        gc_waits_since_ms_ = 0;
      } else {
        gc_waits_since_ms_ =
            options_.wall_ms ? options_.wall_ms() : common::HlcClock::WallClockMs();
      }
      SHARDKV_RETURN_IF_ERROR(storage_->PutAux(storage::AuxColumn::kMeta, kGcWaitsSinceKey,
                                               std::to_string(gc_waits_since_ms_)));
    } else {
      return since.status();
    }
  }
  common::MutexLock lock(&mu_);
  auto rebuilt = storage_->GetAux(storage::AuxColumn::kMeta, kRebuiltAtKey);
  if (rebuilt.ok()) {
    if (!ParseDecimal(*rebuilt, &rebuilt_at_ms_)) {
      return Status::Corruption("meta " + std::string(kRebuiltAtKey) + " is not a number");
    }
  } else if (!rebuilt.status().IsNotFound()) {
    return rebuilt.status();
  }
  auto mark = storage_->GetAux(storage::AuxColumn::kMeta, kSelfMarkKey);
  if (mark.ok()) {
    const size_t space = mark->find(' ');
    uint64_t mark_ms = 0, marker = 0;
    if (space == std::string::npos ||
        !ParseDecimal(std::string_view(*mark).substr(0, space), &mark_ms) ||
        !ParseDecimal(std::string_view(*mark).substr(space + 1), &marker)) {
      return Status::Corruption("meta " + std::string(kSelfMarkKey) + " is malformed");
    }
    self_reason_ = ReasonFor(static_cast<uint32_t>(marker), mark_ms);
    self_mark_ms_ = mark_ms;
  } else if (!mark.status().IsNotFound()) {
    return mark.status();
  }
  if (!self_reason_.empty()) {
    spdlog::warn("node {} needs repair: {}; {}", options_.self_id, self_reason_,
                 Fix(options_.self_id));
  }
  return Status::OK();
}

void RepairState::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void RepairState::Stop() {
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RepairState::Loop() {
  for (;;) {
    {
      common::MutexLock lock(&mu_);
      const auto end = std::chrono::steady_clock::now() + options_.poll_interval;
      while (!stopping_) {
        if (!lock.WaitUntil(wake_, end)) break;
      }
      if (stopping_) return;
    }
    PollPeers(options_.call_timeout + std::chrono::milliseconds(100));
  }
}

size_t RepairState::PollPeers(std::chrono::milliseconds timeout) {
  // This node's own marks first: a target still away is marked once its hints pass the grace.
  hints_->MarkOverdue();
  auto map = maps_->Current();
  if (!map) return 0;
  // Shared with the callbacks, which may outlive this call when a peer answers late.
  struct Round {
    common::Mutex mu;
    std::condition_variable done;
    size_t pending GUARDED_BY(mu) = 0;
    size_t silent GUARDED_BY(mu) = 0;  // peers that answered with no stats
  };
  auto round = std::make_shared<Round>();
  std::vector<std::pair<uint32_t, std::string>> peers;
  for (const ClusterNode& node : map->nodes()) {
    if (node.id != options_.self_id) peers.emplace_back(node.id, node.address);
  }
  {
    common::MutexLock lock(&round->mu);
    round->pending = peers.size();
  }
  for (const auto& [id, address] : peers) {
    net::Request req;
    req.epoch = map->epoch();
    req.cluster_id = map->cluster_id();
    req.body = net::StatsRequest{};
    peers_->Call(address, std::move(req), options_.call_timeout,
                 [this, round, id = id](StatusOr<net::Response> reply) {
                   bool heard = false;
                   if (reply.ok() && reply->ok()) {
                     if (const auto* s = std::get_if<net::StatsResponse>(&reply->body)) {
                       NoteReport(id, *s);
                       heard = true;
                     }
                   }
                   common::MutexLock lock(&round->mu);
                   if (!heard) ++round->silent;
                   if (--round->pending == 0) round->done.notify_all();
                 });
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  common::MutexLock lock(&round->mu);
  while (round->pending > 0) {
    if (!lock.WaitUntil(round->done, deadline)) break;
  }
  return round->silent + round->pending;
}

void RepairState::NoteReport(uint32_t peer, const net::StatsResponse& reported) {
  PeerReport report;
  if (auto it = reported.info.find(std::string(stats::repair_marks)); it != reported.info.end()) {
    report.marks = ParseMarks(it->second);
  }
  if (auto it = reported.counters.find(std::string(stats::rebuilt_at_ms));
      it != reported.counters.end() && it->second > 0) {
    report.rebuilt_at_ms = static_cast<uint64_t>(it->second);
  }
  if (auto it = reported.counters.find(std::string(stats::gc_waits_for_repair));
      it != reported.counters.end()) {
    report.gc_waits = it->second == 1;
  }
  if (auto it = reported.counters.find(std::string(stats::gc_waits_since_ms));
      it != reported.counters.end() && it->second >= 0) {
    report.gc_waits_since_ms = static_cast<uint64_t>(it->second);
  }
  // The peer was rebuilt after this node's mark of it: its rebuild pulled those writes, so the
  // mark is retired here (it would otherwise be published, and re-mark the peer, forever).
  auto cleared = hints_->ClearMark(peer, report.rebuilt_at_ms);
  if (cleared.ok() && *cleared) {
    spdlog::info(
        "node {} was rebuilt or repaired since its hints expired here; its needs-repair mark "
        "is cleared",
        peer);
  }
  const bool single = SingleReplica(*maps_);
  common::MutexLock lock(&mu_);
  if (auto it = report.marks.find(options_.self_id);
      !single && it != report.marks.end() && it->second > rebuilt_at_ms_) {
    MarkSelf(peer, it->second);
    self_mark_ms_ = std::max(self_mark_ms_, it->second);
  }
  reports_[peer] = std::move(report);
}

void RepairState::MarkSelf(uint32_t marker, uint64_t mark_ms) {
  if (!self_reason_.empty()) return;
  self_reason_ = ReasonFor(marker, mark_ms);
  // Synced like every meta write: the mark must survive a crash right after it is learned.
  Status s = storage_->PutAux(storage::AuxColumn::kMeta, kSelfMarkKey,
                              std::to_string(mark_ms) + " " + std::to_string(marker));
  if (!s.ok()) spdlog::warn("persisting the needs-repair mark: {}", s.ToString());
  spdlog::error("node {} needs repair: {}; it no longer serves replica reads or streams; {}",
                options_.self_id, self_reason_, Fix(options_.self_id));
}

std::string RepairState::SelfReason() const {
  common::MutexLock lock(&mu_);
  return self_reason_;
}

Status RepairState::Refusal(std::string_view what) const {
  if (SingleReplica(*maps_)) return Status::OK();
  common::MutexLock lock(&mu_);
  if (self_reason_.empty()) return Status::OK();
  const std::string id = std::to_string(options_.self_id);
  return Status::FailedPrecondition("node " + id + " needs repair: " + self_reason_ +
                                    "; it refuses " + std::string(what) + " until repaired; " +
                                    Fix(options_.self_id));
}

uint32_t RepairState::MarkerOf(uint32_t id) const {
  const auto report = reports_.find(id);
  const uint64_t rebuilt = id == options_.self_id     ? rebuilt_at_ms_
                           : report != reports_.end() ? report->second.rebuilt_at_ms
                                                      : 0;
  for (const auto& [target, mark_ms] : hints_->RepairMarks()) {
    if (target == id && mark_ms > rebuilt) return options_.self_id;
  }
  for (const auto& [peer, r] : reports_) {
    if (auto it = r.marks.find(id); it != r.marks.end() && it->second > rebuilt) return peer;
  }
  return 0;
}

Status RepairState::ReadRefusal(uint32_t id) const {
  if (id == options_.self_id) return Refusal("replica reads");
  if (SingleReplica(*maps_)) return Status::OK();
  common::MutexLock lock(&mu_);
  const uint32_t marker = MarkerOf(id);
  if (marker == 0) return Status::OK();
  return Status::FailedPrecondition("not asked: node " + std::to_string(id) +
                                    " needs repair (marked by node " + std::to_string(marker) +
                                    "); " + Fix(id));
}

Status RepairState::PurgeRefusal(uint32_t peer, uint64_t synced_ms) const {
  common::MutexLock lock(&mu_);
  auto it = reports_.find(peer);
  if (it == reports_.end()) {
    return Status::Unavailable("node " + std::to_string(peer) +
                               " has not said yet whether its tombstone GC waits for repairs");
  }
  const PeerReport& p = it->second;
  // Under the GC rule the peer collects a tombstone only below a horizon that a repair with
  // every replica set, this node included, and that repair gave this node the tombstone. Before
  // the rule was on there, it collected what was past the grace: a tombstone this node lacks is
  // newer than synced_ms, so it was collected only if the rule came on more than a grace after.
  std::string why;
  if (!p.gc_waits) {
    why = " collects tombstones by the grace alone (its GC does not wait for repairs)";
  } else if (p.gc_waits_since_ms > synced_ms &&
             p.gc_waits_since_ms - synced_ms > options_.tombstone_grace_ms) {
    why = " collected tombstones by the grace alone until " +
          (p.gc_waits_since_ms == UINT64_MAX ? std::string("an unknown time")
                                             : UtcTime(p.gc_waits_since_ms)) +
          " (an earlier release, or the GC rule off), more than a grace after node " +
          std::to_string(options_.self_id) + " last synced this range" +
          (synced_ms == 0 ? std::string(" (never)") : " (" + UtcTime(synced_ms) + ")");
  } else {
    return Status::OK();
  }
  const std::string self = std::to_string(options_.self_id);
  return Status(Status::Code::kFailedPrecondition, Status::Reason::kRefusedByPolicy,
                "node " + std::to_string(peer) + why + ", and the writes node " + self +
                    " missed are past the grace, so their tombstones may be gone there: a "
                    "repair could bring deleted keys back; rebuild node " +
                    self + " with `shardkv cluster start-node " + self + " --rebuild`");
}

Status RepairState::Clear(uint64_t at_ms, std::string_view how) {
  SHARDKV_RETURN_IF_ERROR(
      storage_->PutAux(storage::AuxColumn::kMeta, kRebuiltAtKey, std::to_string(at_ms)));
  SHARDKV_RETURN_IF_ERROR(storage_->DeleteAux(storage::AuxColumn::kMeta, kSelfMarkKey));
  rebuilt_at_ms_ = at_ms;
  self_mark_ms_ = 0;
  if (!self_reason_.empty()) {
    spdlog::info("node {} {}: its needs-repair mark is cleared", options_.self_id, how);
  }
  self_reason_.clear();
  return Status::OK();
}

Status RepairState::RecordRebuild(uint64_t started_ms) {
  common::MutexLock lock(&mu_);
  return Clear(started_ms, "rebuilt");
}

Status RepairState::RecordRepair(uint64_t started_ms) {
  common::MutexLock lock(&mu_);
  // A mark of a write at or after the repair's start is not covered by it (the write may have
  // come after the comparison of its range): the node stays marked, and the caller starts over.
  if (self_mark_ms_ >= started_ms) {
    return Status::Aborted("node " + std::to_string(options_.self_id) +
                           " was marked for a write after its repair began; repair it again");
  }
  return Clear(std::max(rebuilt_at_ms_, started_ms), "repaired (every range it holds compared)");
}

uint64_t RepairState::rebuilt_at_ms() const {
  common::MutexLock lock(&mu_);
  return rebuilt_at_ms_;
}

void RepairState::AddStats(net::StatsResponse* out) const {
  const std::map<uint32_t, uint64_t> marks = hints_->RepairMarks();
  common::MutexLock lock(&mu_);
  out->counters[std::string(stats::needs_repair)] = self_reason_.empty() ? 0 : 1;
  out->counters[std::string(stats::rebuilt_at_ms)] = static_cast<int64_t>(rebuilt_at_ms_);
  out->counters[std::string(stats::gc_waits_for_repair)] = options_.gc_waits_for_repair ? 1 : 0;
  if (options_.gc_waits_for_repair) {
    out->counters[std::string(stats::gc_waits_since_ms)] = static_cast<int64_t>(gc_waits_since_ms_);
  }
  if (!self_reason_.empty()) out->info[std::string(stats::needs_repair_reason)] = self_reason_;
  if (!marks.empty()) out->info[std::string(stats::repair_marks)] = EncodeMarks(marks);
}

std::string RepairState::EncodeMarks(const std::map<uint32_t, uint64_t>& marks) {
  std::string out;
  for (const auto& [id, ms] : marks) {
    if (!out.empty()) out += ",";
    out += std::to_string(id) + ":" + std::to_string(ms);
  }
  return out;
}

std::map<uint32_t, uint64_t> RepairState::ParseMarks(std::string_view text) {
  std::map<uint32_t, uint64_t> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const size_t colon = item.find(':');
    uint64_t id = 0, ms = 0;
    if (colon != std::string_view::npos && ParseDecimal(item.substr(0, colon), &id) &&
        ParseDecimal(item.substr(colon + 1), &ms) && id != 0 && id <= UINT32_MAX) {
      out[static_cast<uint32_t>(id)] = ms;
    }
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace shardkv::cluster
