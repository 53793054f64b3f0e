#include "multihost/history_file.h"

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

namespace shardkv::multihost {

using testing::KeyHistory;
using testing::OpKind;
using testing::OpOutcome;

namespace {

constexpr size_t kMaxViolations = 20;

void AddViolation(Figures* f, std::string text) {
  if (f->violations.size() < kMaxViolations) f->violations.push_back(std::move(text));
}

// Error text on one line.
std::string OneLine(const Status& s) {
  std::string text = s.ToString();
  for (char& c : text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return text;
}

}  // namespace

int64_t MonotonicMicros() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000 + ts.tv_nsec / 1000;
}

StatusOr<std::unique_ptr<HistoryWriter>> HistoryWriter::Open(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "w");
  if (file == nullptr) return Status::IOError("cannot create " + path);
  return std::unique_ptr<HistoryWriter>(new HistoryWriter(file));
}

HistoryWriter::~HistoryWriter() { std::fclose(file_); }

void HistoryWriter::Write(const std::string& key, uint64_t version, bool del, int64_t invoked,
                          int64_t completed, const Status& status) {
  std::lock_guard lock(mu_);
  std::fprintf(file_, "W %s %llu %s %lld %lld %s%s%s\n", key.c_str(),
               static_cast<unsigned long long>(version), del ? "del" : "put",
               static_cast<long long>(invoked), static_cast<long long>(completed),
               status.ok() ? "ok" : "info", status.ok() ? "" : " ",
               status.ok() ? "" : OneLine(status).c_str());
  std::fflush(file_);  // a workload killed by the scenario keeps what it recorded
}

void HistoryWriter::Read(const std::string& key, int64_t invoked, int64_t completed,
                         std::optional<uint64_t> version, const Status& status) {
  std::lock_guard lock(mu_);
  std::string outcome;
  if (!status.ok()) {
    outcome = "fail " + OneLine(status);
  } else if (version) {
    outcome = "ok " + std::to_string(*version);
  } else {
    outcome = "notfound";
  }
  std::fprintf(file_, "R %s %lld %lld %s\n", key.c_str(), static_cast<long long>(invoked),
               static_cast<long long>(completed), outcome.c_str());
  std::fflush(file_);
}

std::string Figures::Line() const {
  std::ostringstream out;
  out << "ops=" << ops << " ok=" << ok << " notfound=" << notfound << " failed=" << failed
      << " indeterminate=" << indeterminate << " lost=" << lost << " stale=" << stale
      << " resurrected=" << resurrected << " divergent_epochs=" << divergent_epochs;
  if (unchecked != 0) out << " unchecked_keys=" << unchecked;
  if (required_failed != 0) out << " required_failed=" << required_failed;
  return out.str();
}

StatusOr<FailuresAfter> FailedInvokedAfter(const std::vector<std::string>& paths,
                                           int64_t since_us) {
  FailuresAfter out;
  for (const std::string& path : paths) {
    std::ifstream in(path);
    if (!in) return Status::IOError("cannot read " + path);
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      std::string type, key, outcome, version, kind;
      int64_t invoked = 0, completed = 0;
      fields >> type >> key;
      if (type == "W") fields >> version >> kind;
      fields >> invoked >> completed >> outcome;
      if (!fields || invoked < since_us) continue;
      ++out.ops;
      if (outcome != "info" && outcome != "fail") continue;
      ++out.failed;
      out.last_failed_after_us = std::max(out.last_failed_after_us, invoked - since_us);
    }
  }
  return out;
}

StatusOr<std::map<std::string, KeyHistory>> LoadHistories(
    const std::vector<std::string>& paths, Figures* figures,
    const std::function<bool(const std::string& key)>& keep) {
  std::map<std::string, KeyHistory> histories;
  for (const std::string& path : paths) {
    std::ifstream in(path);
    if (!in) return Status::IOError("cannot read " + path);
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      std::string type, key, outcome;
      fields >> type >> key;
      if (keep && !keep(key)) continue;
      if (type == "W") {
        testing::WriteRecord w;
        std::string kind;
        fields >> w.version >> kind >> w.issued >> w.completed >> outcome;
        if (!fields) continue;  // a line cut short by a killed workload
        w.kind = kind == "del" ? OpKind::kDelete : OpKind::kPut;
        w.outcome = outcome == "ok" ? OpOutcome::kAcked : OpOutcome::kFailed;
        if (w.outcome == OpOutcome::kFailed) std::getline(fields, w.error);
        ++figures->ops;
        ++(w.outcome == OpOutcome::kAcked ? figures->ok : figures->indeterminate);
        KeyHistory& h = histories[key];
        h.key = key;
        h.writes.push_back(std::move(w));
      } else if (type == "R") {
        testing::ReadRecord r;
        fields >> r.start >> r.end >> outcome;
        if (!fields) continue;
        ++figures->ops;
        if (outcome == "fail") {
          ++figures->failed;
          continue;
        }
        if (outcome == "ok") {
          uint64_t v = 0;
          fields >> v;
          r.version = v;
          ++figures->ok;
        } else {
          ++figures->notfound;
        }
        KeyHistory& h = histories[key];
        h.key = key;
        h.reads.push_back(r);
      }
    }
  }
  return histories;
}

std::map<std::string, std::optional<uint64_t>> FinalReads(const ClientOptions& options,
                                                          const std::vector<std::string>& keys,
                                                          int attempts) {
  std::map<std::string, std::optional<uint64_t>> out;
  auto client = Client::Connect(options);
  if (!client.ok()) return out;
  for (const std::string& key : keys) {
    Status last;
    for (int i = 0; i < attempts; ++i) {
      // `all` sees every replica's copy; `quorum` still answers when one replica lags behind.
      const Consistency c = i % 2 == 0 ? Consistency::kAll : Consistency::kQuorum;
      StatusOr<std::string> value = (*client)->Get(key, c);
      if (value.ok()) {
        StatusOr<uint64_t> v = testing::DecodeValue(key, *value);
        if (v.ok()) out[key] = *v;
        break;
      }
      if (value.status().IsNotFound()) {
        out[key] = std::nullopt;
        break;
      }
      last = value.status();
      std::this_thread::sleep_for(std::chrono::milliseconds(100 * (i + 1)));  // backoff
    }
    if (out.count(key) == 0 && !last.ok()) {
      std::printf("final read of key '%s' failed %d times, last: %s\n", key.c_str(), attempts,
                  last.ToString().c_str());
    }
  }
  return out;
}

void CheckHistories(const std::map<std::string, KeyHistory>& histories,
                    const std::map<std::string, std::optional<uint64_t>>& final_reads,
                    Figures* figures) {
  for (const auto& [key, history] : histories) {
    // Resurrected: a read that returned a value older than a delete acknowledged before the
    // read began. The validator calls it a stale read; the bed counts it apart.
    uint64_t resurrected = 0;
    for (const testing::ReadRecord& r : history.reads) {
      if (!r.version) continue;
      const testing::WriteRecord* last = nullptr;
      for (const testing::WriteRecord& w : history.writes) {
        if (w.outcome == OpOutcome::kAcked && w.completed < r.start &&
            (last == nullptr || w.version > last->version)) {
          last = &w;
        }
      }
      if (last != nullptr && last->kind == OpKind::kDelete && *r.version < last->version) {
        ++resurrected;
      }
    }
    const std::vector<std::string> violations = testing::CheckReads(history);
    figures->resurrected += resurrected;
    figures->stale += violations.size() > resurrected ? violations.size() - resurrected : 0;
    for (const std::string& v : violations) AddViolation(figures, v);
    auto it = final_reads.find(key);
    if (it == final_reads.end()) {
      ++figures->unchecked;
      AddViolation(figures, "key '" + key + "': final read kept failing");
      continue;
    }
    for (const std::string& v : testing::CheckFinal(history, it->second)) {
      const bool resurrected = v.find("resurrected") != std::string::npos;
      ++(resurrected ? figures->resurrected : figures->lost);
      AddViolation(figures, v);
    }
  }
}

Status CheckSamples(const std::vector<std::string>& paths, Figures* figures) {
  // (cluster id, epoch) -> hash -> nodes. A node not yet formed holds a map of its own
  // cluster, which is no divergence.
  std::map<std::pair<uint64_t, uint64_t>, std::map<std::string, std::set<uint32_t>>> by_epoch;
  for (const std::string& path : paths) {
    std::ifstream in(path);
    if (!in) return Status::IOError("cannot read " + path);
    for (std::string line; std::getline(in, line);) {
      std::istringstream fields(line);
      int64_t t = 0;
      uint32_t node = 0;
      uint64_t cluster = 0, epoch = 0;
      std::string hash;
      fields >> t >> node >> cluster >> epoch >> hash;
      if (fields) by_epoch[{cluster, epoch}][hash].insert(node);
    }
  }
  for (const auto& [cluster_epoch, maps] : by_epoch) {
    if (maps.size() < 2) continue;
    ++figures->divergent_epochs;
    std::string text = "epoch " + std::to_string(cluster_epoch.second) + " held as " +
                       std::to_string(maps.size()) + " different maps:";
    for (const auto& [hash, nodes] : maps) {
      text += " " + hash + " by node(s)";
      for (uint32_t n : nodes) text += " " + std::to_string(n);
      text += ";";
    }
    AddViolation(figures, text);
  }
  return Status::OK();
}

}  // namespace shardkv::multihost
