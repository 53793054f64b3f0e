#include "rebalance/repair_scheduler.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <vector>

#include "shardkv/stats.h"

namespace shardkv::rebalance {
namespace {

using Clock = std::chrono::steady_clock;

// While this node takes no part (it needs repair, or has no map yet), it looks again this often.
constexpr std::chrono::seconds kRefusedRetry{1};

}  // namespace

std::string RepairPassPosition::Encode() const {
  return std::to_string(start_ms) + " " + (complete ? std::string("done") : std::to_string(next)) +
         " " + (clean ? "1" : "0") + " " + std::to_string(last_full_ms);
}

StatusOr<RepairPassPosition> RepairPassPosition::Decode(std::string_view text) {
  const auto bad = [&] {
    return Status::InvalidArgument("not a background repair position: '" + std::string(text) + "'");
  };
  // Four fields separated by single spaces, each a decimal number ("done" for the second).
  std::vector<std::string_view> fields;
  for (size_t at = 0; at <= text.size();) {
    const size_t space = std::min(text.find(' ', at), text.size());
    fields.push_back(text.substr(at, space - at));
    at = space + 1;
  }
  const auto number = [](std::string_view f, uint64_t* out) {
    const auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), *out);
    return !f.empty() && ec == std::errc() && end == f.data() + f.size();
  };
  RepairPassPosition p;
  uint64_t clean = 0;
  if (fields.size() != 4 || !number(fields[0], &p.start_ms) || !number(fields[2], &clean) ||
      clean > 1 || !number(fields[3], &p.last_full_ms)) {
    return bad();
  }
  p.clean = clean == 1;
  if (fields[1] == "done") {
    p.complete = true;
  } else if (!number(fields[1], &p.next)) {
    return bad();
  }
  return p;
}

std::chrono::duration<double> RepairStepWait(uint64_t cost_keys, uint64_t rate,
                                             double client_requests_per_second) {
  uint64_t r = std::max<uint64_t>(rate, 1);
  if (client_requests_per_second > RepairScheduler::kBusyRequestsPerSecond) {
    r = std::max<uint64_t>(r / RepairScheduler::kBusyRateDivisor, 1);
  }
  return std::chrono::duration<double>(static_cast<double>(cost_keys) / static_cast<double>(r));
}

RepairScheduler::RepairScheduler(RepairSchedulerOptions options, RepairService* service)
    : o_(std::move(options)), service_(service) {}

RepairScheduler::~RepairScheduler() { Stop(); }

void RepairScheduler::Start() {
  common::MutexLock lock(&mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Loop(); });
}

void RepairScheduler::Stop() {
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RepairScheduler::AddCounters(std::map<std::string, int64_t>* counters) const {
  (*counters)[std::string(stats::repair_passes)] = static_cast<int64_t>(passes_.load());
  (*counters)[std::string(stats::repair_last_full_ms)] = static_cast<int64_t>(last_full_ms_.load());
}

bool RepairScheduler::SleepUntil(Clock::time_point when) {
  common::MutexLock lock(&mu_);
  while (!stopping_) {
    if (!lock.WaitUntil(wake_, when)) return !stopping_;
  }
  return false;
}

void RepairScheduler::Loop() {
  // Background work yields to client requests first, as the repair service's threads do.
  if (o_.nice > 0) {
    static_cast<void>(setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), o_.nice));
  }
  // The pass a previous run of this node left (design.md "Background anti-entropy").
  std::optional<RepairPassPosition> saved = LoadPosition();
  if (saved) last_full_ms_ = saved->last_full_ms;
  std::optional<PassState> pass;
  for (;;) {
    if (!pass && saved && saved->complete) {
      // Its successor is due one period after it started, as if the node had not stopped.
      if (!SleepUntil(SteadyOf(saved->start_ms) + o_.period)) return;
    } else if (!pass && saved) {
      pass = PassState{SteadyOf(saved->start_ms), *saved, 0};
      pass->done = service_->RangesDrivenBefore(saved->next);
      spdlog::info(
          "node {}: background repair resumes its pass of {} s ago at range {} of {}", o_.self_id,
          std::chrono::duration_cast<std::chrono::seconds>(Clock::now() - pass->start).count(),
          pass->done, service_->RangesDriven());
    }
    saved.reset();
    if (!pass) {
      pass = PassState{Clock::now(), RepairPassPosition{}, 0};
      pass->position.start_ms = o_.wall_ms ? o_.wall_ms() : 0;
    }
    switch (Pass(&*pass)) {
      case PassEnd::kStopped:
        return;
      case PassEnd::kComplete: {
        // The next pass one period after this one started (at once if this one ran late).
        const Clock::time_point next = pass->start + o_.period;
        pass.reset();
        if (!SleepUntil(next)) return;
        break;
      }
      case PassEnd::kRefused:
        // A pass that compared nothing yet starts afresh when this node takes part again (a
        // node waiting for its map would otherwise find every slot overdue); one under way
        // goes on from where it stopped.
        if (pass->position.next == 0) pass.reset();
        if (!SleepUntil(Clock::now() + kRefusedRetry)) return;
        break;
    }
  }
}

RepairScheduler::PassEnd RepairScheduler::Pass(PassState* pass) {
  RepairPassPosition& at = pass->position;
  Clock::time_point not_before = pass->start;
  // Client requests since the previous step began, for the clients-first throttle.
  uint64_t requests_before = o_.client_requests ? o_.client_requests() : 0;
  Clock::time_point previous_step = Clock::now();
  busy_steps_ = 0;
  for (;;) {
    // Range `done` of n is due in the middle of its slot; n is read afresh, as maps change.
    const size_t done = pass->done;
    const size_t n = std::max(service_->RangesDriven(), done + 1);
    const Clock::time_point due =
        pass->start + std::chrono::duration_cast<Clock::duration>(
                          std::chrono::duration<double>(o_.period) *
                          (static_cast<double>(done) + 0.5) / static_cast<double>(n));
    if (!SleepUntil(std::max(due, not_before))) return PassEnd::kStopped;
    // Right before the step, so that a mark set while a peer was cut off is known here first.
    if (doubt_ && o_.refresh_marks) doubt_ = o_.refresh_marks() > 0;
    if (!pass->catch_up && service_->CatchingUp()) {
      // The catch-up clears the mark once one run of this node compared every range it holds
      // (RepairService keeps that record in memory only): a pass of its own, from range 0, does
      // so within one period, where going on from a resumed or half-done pass could take two.
      *pass = PassState{Clock::now(), RepairPassPosition{}, 0, true};
      at.start_ms = o_.wall_ms ? o_.wall_ms() : 0;
      not_before = pass->start;
      continue;
    }
    const Clock::time_point began = Clock::now();
    double requests_per_second = 0;
    if (o_.client_requests) {
      const uint64_t requests_now = o_.client_requests();
      const double seconds = std::chrono::duration<double>(began - previous_step).count();
      if (seconds > 0) {
        requests_per_second = static_cast<double>(requests_now - requests_before) / seconds;
      }
      requests_before = requests_now;
      previous_step = began;
    }
    BackgroundStep step = service_->RunBackgroundStep(at.next, std::chrono::milliseconds(0));
    if (!step.refused.ok()) {
      // Said once per reason, not once a second.
      if (step.refused.ToString() != refused_) {
        refused_ = step.refused.ToString();
        spdlog::info("node {}: background repair waits: {}", o_.self_id, refused_);
      }
      return PassEnd::kRefused;
    }
    if (!refused_.empty()) {
      spdlog::info("node {}: background repair runs again", o_.self_id);
      refused_.clear();
    }
    const net::RepairReport& r = step.report;
    pass->done += r.ranges_compared + r.ranges_skipped;
    at.clean = at.clean && r.ranges_failed == 0 && r.ranges_skipped == 0;
    if (r.ranges_failed > 0) doubt_ = true;
    NoteFailures(r);
    // The throttle: k keys hashed cost k / rate seconds, whatever the slot says; a range costs
    // at least kRangeCostKeys (its tree rounds with every replica, however few keys it holds).
    const uint64_t cost = step.own_keys + kRangeCostKeys * r.ranges_compared;
    if (requests_per_second > kBusyRequestsPerSecond) ++busy_steps_;
    not_before = began + std::chrono::duration_cast<Clock::duration>(
                             RepairStepWait(cost, o_.rate, requests_per_second));
    if (r.done) break;
    at.next = r.next;
    SavePosition(at);
  }
  ++passes_;
  if (at.clean && o_.wall_ms) last_full_ms_ = o_.wall_ms();
  at.complete = true;
  SavePosition(at);
  const auto took = Clock::now() - pass->start;
  if (took > o_.period + o_.period / 10 &&
      (last_late_log_ == Clock::time_point{} || Clock::now() - last_late_log_ >= kWarnInterval)) {
    last_late_log_ = Clock::now();
    spdlog::info(
        "node {}: a background repair pass took {} s, more than its period of {} s (repair rate "
        "{} keys/s; {} step(s) at a {}th of it while clients were busy)",
        o_.self_id, std::chrono::duration_cast<std::chrono::seconds>(took).count(),
        std::chrono::duration_cast<std::chrono::seconds>(o_.period).count(), o_.rate, busy_steps_,
        kBusyRateDivisor);
  }
  return PassEnd::kComplete;
}

Clock::time_point RepairScheduler::SteadyOf(uint64_t ms) const {
  const uint64_t now_ms = o_.wall_ms ? o_.wall_ms() : ms;
  const uint64_t ago = now_ms > ms ? now_ms - ms : 0;
  return Clock::now() - std::chrono::milliseconds(ago);
}

std::optional<RepairPassPosition> RepairScheduler::LoadPosition() {
  if (o_.storage == nullptr || !o_.wall_ms) return std::nullopt;
  auto text = o_.storage->GetAux(storage::AuxColumn::kMeta, kPositionKey);
  if (!text.ok()) {
    if (!text.status().IsNotFound()) {
      spdlog::warn("node {}: cannot read the background repair position, a new pass starts: {}",
                   o_.self_id, text.status().ToString());
    }
    return std::nullopt;
  }
  auto position = RepairPassPosition::Decode(*text);
  if (!position.ok()) {
    spdlog::warn("node {}: ignoring the background repair position: {}", o_.self_id,
                 position.status().ToString());
    return std::nullopt;
  }
  return *position;
}

void RepairScheduler::SavePosition(const RepairPassPosition& position) {
  if (o_.storage == nullptr || !o_.wall_ms) return;
  RepairPassPosition p = position;
  p.last_full_ms = last_full_ms_;
  // Unsynced: a lost record costs only a fresh pass (or a range compared twice).
  if (Status s = o_.storage->PutAux(storage::AuxColumn::kMeta, kPositionKey, p.Encode(),
                                    /*sync=*/false);
      !s.ok()) {
    spdlog::warn("node {}: cannot keep the background repair position: {}", o_.self_id,
                 s.ToString());
  }
}

void RepairScheduler::NoteFailures(const net::RepairReport& report) {
  if (report.ranges_failed == 0) return;
  unlogged_failures_ += report.ranges_failed;
  const Clock::time_point now = Clock::now();
  if (last_warn_ != Clock::time_point{} && now - last_warn_ < kWarnInterval) return;
  last_warn_ = now;
  const std::string example = report.failures.empty() ? "" : ", e.g. " + report.failures.front();
  spdlog::warn("node {}: background repair: {} range(s) not repaired since the last warning{}",
               o_.self_id, unlogged_failures_, example);
  unlogged_failures_ = 0;
}

}  // namespace shardkv::rebalance
