#include "rebalance/repair_scheduler.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>

#include "shardkv/stats.h"

namespace shardkv::rebalance {
namespace {

using Clock = std::chrono::steady_clock;

// While this node takes no part (it needs repair, or has no map yet), it looks again this often.
constexpr std::chrono::seconds kRefusedRetry{1};

}  // namespace

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
  for (;;) {
    const Clock::time_point start = Clock::now();
    if (Pass(start)) {
      // The next pass one period after this one started (at once if this one ran late).
      if (!SleepUntil(start + o_.period)) return;
    } else if (!SleepUntil(Clock::now() + kRefusedRetry)) {
      return;
    }
  }
}

bool RepairScheduler::Pass(Clock::time_point start) {
  uint64_t from = 0;
  size_t done = 0;          // ranges visited in this pass
  bool every_range = true;  // compared, none failed or skipped
  Clock::time_point not_before = start;
  // Client requests since the previous step began, for the clients-first throttle.
  uint64_t requests_before = o_.client_requests ? o_.client_requests() : 0;
  Clock::time_point previous_step = start;
  busy_steps_ = 0;
  for (;;) {
    // Range `done` of n is due in the middle of its slot; n is read afresh, as maps change.
    const size_t n = std::max(service_->RangesDriven(), done + 1);
    const Clock::time_point due =
        start + std::chrono::duration_cast<Clock::duration>(
                    std::chrono::duration<double>(o_.period) * (static_cast<double>(done) + 0.5) /
                    static_cast<double>(n));
    if (!SleepUntil(std::max(due, not_before))) return false;
    // Right before the step, so that a mark set while a peer was cut off is known here first.
    if (doubt_ && o_.refresh_marks) doubt_ = o_.refresh_marks() > 0;
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
    BackgroundStep step = service_->RunBackgroundStep(from, std::chrono::milliseconds(0));
    if (!step.refused.ok()) {
      // Said once per reason, not once a second.
      if (step.refused.ToString() != refused_) {
        refused_ = step.refused.ToString();
        spdlog::info("node {}: background repair waits: {}", o_.self_id, refused_);
      }
      return false;
    }
    if (!refused_.empty()) {
      spdlog::info("node {}: background repair runs again", o_.self_id);
      refused_.clear();
    }
    const net::RepairReport& r = step.report;
    done += r.ranges_compared + r.ranges_skipped;
    every_range = every_range && r.ranges_failed == 0 && r.ranges_skipped == 0;
    if (r.ranges_failed > 0) doubt_ = true;
    NoteFailures(r);
    // The throttle: k keys hashed cost k / rate seconds, whatever the slot says; a range costs
    // at least kRangeCostKeys (its tree rounds with every replica, however few keys it holds).
    const uint64_t cost = step.own_keys + kRangeCostKeys * r.ranges_compared;
    if (requests_per_second > kBusyRequestsPerSecond) ++busy_steps_;
    not_before = began + std::chrono::duration_cast<Clock::duration>(
                             RepairStepWait(cost, o_.rate, requests_per_second));
    if (r.done) break;
    from = r.next;
  }
  ++passes_;
  if (every_range && o_.wall_ms) last_full_ms_ = o_.wall_ms();
  const auto took = Clock::now() - start;
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
  return true;
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
