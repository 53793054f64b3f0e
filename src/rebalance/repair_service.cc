#include "rebalance/repair_service.h"

#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include "rebalance/plan.h"
#include "shardkv/stats.h"

namespace shardkv::rebalance {
namespace {

bool SameSet(std::vector<uint32_t> a, std::vector<uint32_t> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  return a == b;
}

bool Contains(const std::vector<uint32_t>& v, uint32_t id) {
  return std::find(v.begin(), v.end(), id) != v.end();
}

// A range in a command's scope, clipped to it.
struct Item {
  TokenRange range;
  std::vector<uint32_t> replicas;
  bool transition = false;  // a pending change moves its replica set
  bool whole = false;       // not clipped by the command's bounds
};

// The ranges of `map` in scope: every range `self` holds (`all`), or those it is the first
// replica of; clipped to [first, last].
std::vector<Item> Scope(const ClusterMap& map, uint32_t self, bool all, uint64_t first,
                        uint64_t last) {
  std::vector<Item> items;
  for (const MovingRange& r : AllRanges(map)) {
    if (r.range.last < first || r.range.first > last) continue;
    const bool moving = map.has_pending() && !SameSet(r.old_set, r.new_set);
    const bool in_scope = all ? Contains(r.old_set, self) || (moving && Contains(r.new_set, self))
                              : r.old_set.front() == self;
    if (!in_scope) continue;
    const TokenRange clipped{std::max(r.range.first, first), std::min(r.range.last, last)};
    items.push_back({clipped, r.old_set, moving, clipped == r.range});
  }
  return items;
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
      trees_(
          d_.self_id, d_.storage, d_.maps, d_.refusal,
          [h = d_.horizons](const TokenRange& range, std::vector<uint32_t> replicas, uint64_t ms) {
            if (h != nullptr) h->Record(range, std::move(replicas), ms);
          }),
      own_trees_(d_.self_id, d_.storage, d_.maps),
      own_source_(d_.self_id, d_.storage, d_.maps),
      ranges_(RangeRepairDeps{d_.self_id, d_.storage, d_.peers, &own_trees_, &own_source_}) {}

RepairService::~RepairService() { Stop(); }

void RepairService::Start() {
  common::MutexLock lock(&mu_);
  if (started_) return;
  started_ = true;
  threads_.emplace_back([this] { Worker(Queue::kCommands); });
  for (int i = 0; i < 2; ++i) threads_.emplace_back([this] { Worker(Queue::kServes); });
  threads_.emplace_back([this] { Worker(Queue::kReleases); });
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
  own_trees_.Close();
  own_source_.Close();
}

std::deque<std::function<void()>>& RepairService::QueueOf(Queue queue) {
  switch (queue) {
    case Queue::kCommands:
      return commands_;
    case Queue::kServes:
      return serves_;
    case Queue::kReleases:
      break;
  }
  return releases_;
}

void RepairService::Worker(Queue which) {
  // Repair is background work, as streams are: it slows down before client requests do.
  if (d_.nice > 0) {
    static_cast<void>(setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), d_.nice));
  }
  for (;;) {
    std::function<void()> job;
    {
      common::MutexLock lock(&mu_);
      auto& queue = QueueOf(which);
      while (!stopping_ && queue.empty()) lock.Wait(wake_);
      if (stopping_) return;
      job = std::move(queue.front());
      queue.pop_front();
    }
    job();
  }
}

void RepairService::Enqueue(Queue queue, std::function<net::ResponseBody()> job, Done done) {
  common::MutexLock lock(&mu_);
  if (stopping_ || !started_) {
    lock.Unlock();
    return done(net::ErrorBody(Status::Unavailable("node " + std::to_string(d_.self_id) +
                                                   " runs no repair service (stopping)")));
  }
  if (queue == Queue::kCommands && !commands_.empty()) {
    lock.Unlock();
    return done(net::ErrorBody(Status::Aborted("node " + std::to_string(d_.self_id) +
                                               " has a repair command queued already")));
  }
  QueueOf(queue).push_back([job = std::move(job), done = std::move(done)] { done(job()); });
  wake_.notify_all();
}

void RepairService::Handle(net::AntiEntropyRequest request, Done done) {
  if (auto* q = std::get_if<net::TreeQuery>(&request.op)) {
    const Queue queue = q->release ? Queue::kReleases : Queue::kServes;
    return Enqueue(
        queue,
        [this, q = std::move(*q)]() -> net::ResponseBody {
          auto nodes = trees_.Tree(q);
          if (!nodes.ok()) return net::ErrorBody(nodes.status());
          return net::AntiEntropyResponse{net::TreeReply{std::move(*nodes)}};
        },
        std::move(done));
  }
  if (auto* a = std::get_if<net::ApplyEntries>(&request.op)) {
    return Enqueue(
        Queue::kServes,
        [this, a = std::move(*a)]() -> net::ResponseBody {
          auto counts = trees_.Apply(a);
          if (!counts.ok()) return net::ErrorBody(counts.status());
          figures_.keys_in += counts->applied;
          return net::AntiEntropyResponse{*counts};
        },
        std::move(done));
  }
  auto c = std::get<net::RepairCommand>(request.op);
  Enqueue(
      Queue::kCommands,
      [this, c]() -> net::ResponseBody {
        // A node that needs repair runs it as its catch-up (Run), so it is not refused here.
        if (d_.refresh_marks && c.from == c.first) d_.refresh_marks();
        return net::AntiEntropyResponse{RunCommand(c)};
      },
      std::move(done));
}

net::RepairReport RepairService::RunCommand(const net::RepairCommand& c) {
  return Run(c, false, nullptr);
}

BackgroundStep RepairService::RunBackgroundStep(uint64_t from, std::chrono::milliseconds budget) {
  BackgroundStep step;
  if (!d_.maps->Current()) {
    step.refused =
        Status::FailedPrecondition("node " + std::to_string(d_.self_id) + " has no cluster map");
  }
  if (!step.refused.ok()) return step;
  net::RepairCommand c;
  c.from = from;
  c.budget_ms = static_cast<uint32_t>(std::max<int64_t>(0, budget.count()));
  step.report = Run(c, true, &step.own_keys);
  return step;
}

size_t RepairService::RangesDriven() const {
  auto map = d_.maps->Current();
  return map ? Scope(*map, d_.self_id, CatchingUp(), 0, UINT64_MAX).size() : 0;
}

size_t RepairService::RangesDrivenBefore(uint64_t token) const {
  auto map = d_.maps->Current();
  if (!map || token == 0) return 0;
  // Clipped to [0, token - 1]: a range that runs past it is not whole, and is not done yet.
  const std::vector<Item> items = Scope(*map, d_.self_id, CatchingUp(), 0, token - 1);
  return static_cast<size_t>(
      std::count_if(items.begin(), items.end(), [](const Item& i) { return i.whole; }));
}

bool RepairService::CatchingUp() const { return d_.refusal && !d_.refusal().ok(); }

void RepairService::MaybeCaughtUp(const ClusterMap& map) {
  const std::vector<Item> items = Scope(map, d_.self_id, true, 0, UINT64_MAX);
  uint64_t started = UINT64_MAX;
  {
    common::MutexLock lock(&catch_up_mu_);
    for (const Item& item : items) {
      auto it = caught_up_.find(item.range.first);
      if (item.transition || it == caught_up_.end() || it->second.last != item.range.last ||
          !SameSet(it->second.replicas, item.replicas)) {
        return;
      }
      started = std::min(started, it->second.started_ms);
    }
    if (items.empty() || !d_.record_repaired) return;
    // Either way this round is over: recorded, or a newer mark wants a fresh one.
    caught_up_.clear();
  }
  if (Status s = d_.record_repaired(started); !s.ok()) {
    spdlog::warn("node {}: repaired every range it holds, but the mark stays: {}", d_.self_id,
                 s.ToString());
    return;
  }
  spdlog::info(
      "node {} compared every range it holds ({}) with their other replicas: it no longer needs "
      "repair",
      d_.self_id, items.size());
}

void RepairService::AddCounters(std::map<std::string, int64_t>* counters) const {
  const std::pair<std::string_view, const std::atomic<uint64_t>*> figures[] = {
      {stats::repair_ranges_compared, &figures_.ranges_compared},
      {stats::repair_ranges_differed, &figures_.ranges_differed},
      {stats::repair_ranges_failed, &figures_.ranges_failed},
      {stats::repair_ranges_skipped, &figures_.ranges_skipped},
      {stats::repair_keys_in, &figures_.keys_in},
      {stats::repair_keys_out, &figures_.keys_out},
      {stats::repair_tree_bytes, &figures_.tree_bytes}};
  for (const auto& [name, value] : figures) {
    (*counters)[std::string(name)] = static_cast<int64_t>(value->load());
  }
}

net::RepairReport RepairService::Run(const net::RepairCommand& c, bool background,
                                     uint64_t* own_keys) {
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
  // A node that needs repair compares every range it holds, whatever it was asked: that is what
  // brings it back (catch-up).
  const bool catch_up = CatchingUp();
  const bool all = c.all || catch_up;
  // The ranges in scope, clipped to [first, last]: this node's share of the work.
  const std::vector<Item> items = Scope(*map, d_.self_id, all, first, last);
  // ranges_total counts the whole scope, from c.first on: progress is against it.
  report.ranges_total = items.size();
  for (const MovingRange& r : AllRanges(*map)) {
    if (r.range.last < c.first || r.range.last >= first) continue;
    const bool in_scope = all ? Contains(r.old_set, d_.self_id) : r.old_set.front() == d_.self_id;
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
      ++figures_.ranges_skipped;
      continue;
    }
    // A replica known to need repair is left out, and the range is incomplete without it.
    std::vector<uint32_t> replicas;
    Status refused;
    // Catching up, a replica that may have purged a tombstone this node lacks: no comparison at
    // all, as this node's values whose deletes it missed would be merged onto the others.
    Status unsafe;
    // This node holds every write of the range older than its horizon there: its last complete
    // repair of it (0: none known).
    const uint64_t synced =
        catch_up && d_.horizons != nullptr ? d_.horizons->HorizonOf(item.range.first) : 0;
    for (uint32_t id : item.replicas) {
      Status s = id != d_.self_id && d_.replica_refusal ? d_.replica_refusal(id) : Status::OK();
      if (s.ok() && catch_up && id != d_.self_id && d_.purge_refusal) {
        if (Status p = d_.purge_refusal(id, synced); !p.ok() && unsafe.ok()) unsafe = p;
      }
      if (s.ok()) {
        replicas.push_back(id);
      } else if (refused.ok()) {
        refused = s;
      }
    }
    // Not catching up, this node compares only while it may (it checks once a range; its mark
    // may be learned meanwhile).
    if (!catch_up && d_.refusal) {
      if (Status s = d_.refusal(); !s.ok()) unsafe = s;
    }
    if (!unsafe.ok()) {
      replicas.clear();
      refused = unsafe;
    }
    ++report.ranges_compared;
    ++figures_.ranges_compared;
    RangeRepairResult r;
    // Before the first tree is built: every record older than this is in some replica's tree.
    const uint64_t started = d_.wall_ms ? d_.wall_ms() : 0;
    // A whole range repaired with every replica of its set advances its GC horizon everywhere:
    // every replica now holds the newest version of every record some replica held at the
    // start, so one stamped that long before it (by a clock up to the offset ahead) may go.
    const bool advances = refused.ok() && replicas.size() >= 2 && item.whole &&
                          d_.horizons != nullptr && started > d_.max_clock_offset_ms;
    const uint64_t horizon = advances ? started - d_.max_clock_offset_ms : 0;
    if (replicas.size() >= 2) {
      r = ranges_.Run(*map, item.range, replicas,
                      advances ? std::optional<uint64_t>(horizon) : std::nullopt);
    }
    if (r.status.ok()) r.status = refused;
    if (catch_up && r.status.ok() && item.whole && replicas.size() == item.replicas.size()) {
      common::MutexLock lock(&catch_up_mu_);
      caught_up_[item.range.first] = CaughtUp{item.range.last, item.replicas, started};
    }
    // The other replicas were told with the release of the range's tree session (RangeRepair).
    if (advances && r.status.ok()) d_.horizons->Record(item.range, item.replicas, horizon);
    if (r.differed) ++report.ranges_differed;
    report.leaves_differed += r.leaves_differed;
    report.keys_fetched += r.keys_fetched;
    report.bytes_fetched += r.bytes_fetched;
    report.tree_bytes += r.tree_bytes;
    figures_.ranges_differed += r.differed ? 1 : 0;
    figures_.tree_bytes += r.tree_bytes;
    if (own_keys != nullptr) *own_keys += r.own_keys;
    for (const auto& [node, s] : r.streamed) {
      Add(&report, node, s);
      (node == d_.self_id ? figures_.keys_in : figures_.keys_out) += s.keys;
    }
    if (!r.status.ok()) {
      ++report.ranges_failed;
      ++figures_.ranges_failed;
      const std::string what = "tokens " + std::to_string(item.range.first) + ".." +
                               std::to_string(item.range.last) + ": " + r.status.ToString();
      // A command's failures are few and asked for; background ones are logged by the
      // scheduler, rate-limited (a down replica fails every range of every pass).
      if (!background) spdlog::warn("repair of {}", what);
      if (report.failures.size() < 20) report.failures.push_back(what);
    }
  }
  std::sort(report.streamed.begin(), report.streamed.end(),
            [](const auto& a, const auto& b) { return a.node_id < b.node_id; });
  report.done = report.next == 0;
  if (catch_up) MaybeCaughtUp(*map);
  return report;
}

}  // namespace shardkv::rebalance
