#include "rebalance/repair_service.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "rebalance/plan.h"

namespace shardkv::rebalance {
namespace {

net::ResponseBody Error(const Status& s) { return net::ErrorResponse::Of(s); }

bool SameSet(std::vector<uint32_t> a, std::vector<uint32_t> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

bool Contains(const std::vector<uint32_t>& v, uint32_t id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}

void Add(net::RepairReport* to, uint32_t node, const net::NodeStreamed& s) {
  auto it = std::find_if(to->streamed.begin(), to->streamed.end(),
                         [&](const net::NodeStreamed& n) { return n.node_id == node; });
  if (it == to->streamed.end()) {
    to->streamed.push_back({node, 0, 0});
    it = to->streamed.end() - 1;
  }
  it->keys += s.keys;
  it->bytes += s.bytes;
}

}  // namespace

RepairService::RepairService(RepairServiceDeps deps)
    : d_(std::move(deps)),
      trees_(d_.self_id, d_.storage, d_.maps, d_.refusal),
      ranges_(RangeRepairDeps{d_.self_id, d_.storage, d_.peers, &trees_, d_.stream_source}) {}

RepairService::~RepairService() { Stop(); }

void RepairService::Start() {
  common::MutexLock lock(&mu_);
  if (started_) return;
  started_ = true;
  threads_.emplace_back([this] { Worker(true); });
  for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { Worker(false); });
}

void RepairService::Stop() {
  {
    common::MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
  trees_.Close();
}

void RepairService::Worker(bool commands) {
  // Repair is background work, as streams are: it slows down before client requests do.
  if (d_.nice > 0) {
    static_cast<void>(setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), d_.nice));
  }
  for (;;) {
    std::function<void()> job;
    {
      common::MutexLock lock(&mu_);
      auto& queue = commands ? commands_ : serves_;
      while (!stopping_ && queue.empty()) lock.Wait(wake_);
      if (stopping_) return;
      job = std::move(queue.front());
      queue.pop_front();
    }
    job();
  }
}

void RepairService::Enqueue(bool command, std::function<net::ResponseBody()> job, Done done) {
  common::MutexLock lock(&mu_);
  if (stopping_ || !started_) {
    lock.Unlock();
    return done(Error(Status::Unavailable("node " + std::to_string(d_.self_id) +
                                          " runs no repair service (stopping)")));
  }
  if (command && !commands_.empty()) {
    lock.Unlock();
    return done(Error(Status::Aborted("node " + std::to_string(d_.self_id) +
                                      " has a repair command queued already")));
  }
  (command ? commands_ : serves_).push_back([job = std::move(job), done = std::move(done)] {
    done(job());
  });
  wake_.notify_all();
}

void RepairService::Handle(net::AntiEntropyRequest request, Done done) {
  if (auto* q = std::get_if<net::TreeQuery>(&request.op)) {
    return Enqueue(
        false,
        [this, q = std::move(*q)]() -> net::ResponseBody {
          auto nodes = trees_.Tree(q);
          if (!nodes.ok()) return Error(nodes.status());
          return net::AntiEntropyResponse{net::TreeReply{std::move(*nodes)}};
        },
        std::move(done));
  }
  if (auto* a = std::get_if<net::ApplyEntries>(&request.op)) {
    return Enqueue(
        false,
        [this, a = std::move(*a)]() -> net::ResponseBody {
          auto counts = trees_.Apply(a);
          if (!counts.ok()) return Error(counts.status());
          return net::AntiEntropyResponse{*counts};
        },
        std::move(done));
  }
  auto c = std::get<net::RepairCommand>(request.op);
  Enqueue(
      true,
      [this, c]() -> net::ResponseBody {
        if (d_.refusal) {
          if (Status s = d_.refusal(); !s.ok()) return Error(s);
        }
        return net::AntiEntropyResponse{RunCommand(c)};
      },
      std::move(done));
}

net::RepairReport RepairService::RunCommand(const net::RepairCommand& c) {
  const auto start = std::chrono::steady_clock::now();
  net::RepairReport report;
  auto map = d_.maps->Current();
  if (!map) {
    report.failures.push_back("node " + std::to_string(d_.self_id) + " has no cluster map");
    report.done = true;
    return report;
  }
  const uint64_t first = std::max(c.first, c.from);
  const uint64_t last = c.last;
  // The ranges in scope, clipped to [first, last]: this node's share of the work.
  struct Item {
    TokenRange range;
    std::vector<uint32_t> replicas;
    bool transition = false;
  };
  std::vector<Item> items;
  for (const MovingRange& r : AllRanges(*map)) {
    if (r.range.last < first || r.range.first > last) continue;
    const bool moving = map->has_pending() && !SameSet(r.old_set, r.new_set);
    const bool in_scope =
        c.all ? Contains(r.old_set, d_.self_id) || (moving && Contains(r.new_set, d_.self_id))
              : r.old_set.front() == d_.self_id;
    if (!in_scope) continue;
    items.push_back(
        {{std::max(r.range.first, first), std::min(r.range.last, last)}, r.old_set, moving});
  }
  // ranges_total counts the whole scope, from c.first on: progress is against it.
  report.ranges_total = items.size();
  for (const MovingRange& r : AllRanges(*map)) {
    if (r.range.last < c.first || r.range.last >= first) continue;
    const bool in_scope = c.all ? Contains(r.old_set, d_.self_id) : r.old_set.front() == d_.self_id;
    if (in_scope) ++report.ranges_total;
  }
  const auto budget = std::chrono::milliseconds(c.budget_ms);
  for (const Item& item : items) {
    if (std::chrono::steady_clock::now() - start > budget &&
        (report.ranges_compared + report.ranges_skipped) > 0) {
      report.next = item.range.first;
      break;
    }
    if (item.transition) {
      ++report.ranges_skipped;
      continue;
    }
    if (item.replicas.size() < 2) {
      ++report.ranges_compared;  // one copy: nothing to compare against
      continue;
    }
    RangeRepairResult r = ranges_.Run(*map, item.range, item.replicas);
    ++report.ranges_compared;
    if (r.differed) ++report.ranges_differed;
    report.leaves_differed += r.leaves_differed;
    report.keys_fetched += r.keys_fetched;
    report.bytes_fetched += r.bytes_fetched;
    report.tree_bytes += r.tree_bytes;
    for (const auto& [node, s] : r.streamed) Add(&report, node, s);
    if (!r.status.ok()) {
      ++report.ranges_failed;
      if (report.failures.size() < 20) {
        report.failures.push_back("tokens " + std::to_string(item.range.first) + ".." +
                                  std::to_string(item.range.last) + ": " + r.status.ToString());
      }
    }
  }
  std::sort(report.streamed.begin(), report.streamed.end(),
            [](const auto& a, const auto& b) { return a.node_id < b.node_id; });
  report.done = report.next == 0;
  return report;
}

}  // namespace shardkv::rebalance
