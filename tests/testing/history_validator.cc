#include "testing/history_validator.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>

namespace shardkv::testing {
namespace {

std::string FormatTime(Micros t) {
  char buf[48];
  std::snprintf(buf, sizeof(buf), "t=%.3fms", static_cast<double>(t) / 1000.0);
  return buf;
}

std::string DescribeRead(const ReadRecord& read) {
  return "read [" + FormatTime(read.start) + " .. " + FormatTime(read.end) + "]";
}

std::string DescribeState(std::optional<uint64_t> version) {
  return version ? "v=" + std::to_string(*version) : std::string("absent");
}

// Answers the questions the checks ask of one key's writes, each in O(log n), because a run
// records thousands of reads per key and a linear scan per read would make the check quadratic.
class WriteIndex {
 public:
  explicit WriteIndex(const std::vector<WriteRecord>& writes) {
    for (const WriteRecord& w : writes) {
      by_version_.push_back(&w);
      if (w.outcome == OpOutcome::kAcked) acked_.push_back(&w);
      if (w.kind == OpKind::kDelete) deletes_.push_back(&w);
    }
    std::sort(by_version_.begin(), by_version_.end(),
              [](const WriteRecord* a, const WriteRecord* b) { return a->version < b->version; });
    std::sort(acked_.begin(), acked_.end(), [](const WriteRecord* a, const WriteRecord* b) {
      return a->completed < b->completed;
    });
    std::sort(deletes_.begin(), deletes_.end(),
              [](const WriteRecord* a, const WriteRecord* b) { return a->issued < b->issued; });
    // Prefix maxima: the newest acked write among the first i to complete, and the newest
    // delete among the first i issued. Completion order need not follow version order in a
    // hand-built history, so the maximum is kept rather than the last element.
    const WriteRecord* best = nullptr;
    for (const WriteRecord* w : acked_) {
      if (best == nullptr || w->version > best->version) best = w;
      newest_acked_prefix_.push_back(best);
    }
    uint64_t newest = 0;
    for (const WriteRecord* w : deletes_) {
      newest = std::max(newest, w->version);
      newest_delete_prefix_.push_back(newest);
    }
  }

  // The newest acknowledged write that completed strictly before `t`; null if none.
  const WriteRecord* LastAckedBefore(Micros t) const {
    auto it = std::lower_bound(acked_.begin(), acked_.end(), t,
                               [](const WriteRecord* w, Micros v) { return w->completed < v; });
    const size_t n = static_cast<size_t>(it - acked_.begin());
    return n == 0 ? nullptr : newest_acked_prefix_[n - 1];
  }

  const WriteRecord* LastAcked() const {
    return LastAckedBefore(std::numeric_limits<Micros>::max());
  }

  // Whether a delete with version >= min_version was issued at or before `t`.
  bool DeleteIssuedBy(uint64_t min_version, Micros t) const {
    auto it = std::upper_bound(deletes_.begin(), deletes_.end(), t,
                               [](Micros v, const WriteRecord* w) { return v < w->issued; });
    const size_t n = static_cast<size_t>(it - deletes_.begin());
    return n > 0 && newest_delete_prefix_[n - 1] >= min_version;
  }

  const WriteRecord* Find(uint64_t version) const {
    auto it = std::lower_bound(by_version_.begin(), by_version_.end(), version,
                               [](const WriteRecord* w, uint64_t v) { return w->version < v; });
    return it != by_version_.end() && (*it)->version == version ? *it : nullptr;
  }

 private:
  std::vector<const WriteRecord*> by_version_;
  std::vector<const WriteRecord*> acked_;    // by completion time
  std::vector<const WriteRecord*> deletes_;  // by issue time
  std::vector<const WriteRecord*> newest_acked_prefix_;
  std::vector<uint64_t> newest_delete_prefix_;
};

// Why a returned version `v` cannot be explained by any put, or "" if some put explains it.
// `deadline` is the latest issue time that could still have produced it.
std::string CheckVersionWasPut(const WriteIndex& index, uint64_t v, Micros deadline) {
  const WriteRecord* w = index.Find(v);
  if (w == nullptr) return "v=" + std::to_string(v) + " was never issued";
  if (w->kind != OpKind::kPut) return "v=" + std::to_string(v) + " was a delete, not a put";
  if (w->issued > deadline) {
    return "v=" + std::to_string(v) + " was only issued at " + FormatTime(w->issued);
  }
  return "";
}

}  // namespace

std::string EncodeValue(std::string_view key, uint64_t version, size_t min_bytes) {
  std::string value = "v=" + std::to_string(version) + ";key=";
  value.append(key);
  value.push_back(';');
  if (value.size() < min_bytes) value.append(min_bytes - value.size(), '.');
  return value;
}

StatusOr<uint64_t> DecodeValue(std::string_view key, std::string_view value) {
  auto bad = [&](std::string_view why) {
    std::string quoted(value.substr(0, 80));
    return Status::Corruption("value of key '" + std::string(key) + "' " + std::string(why) +
                              ": '" + quoted + (value.size() > 80 ? "...'" : "'"));
  };
  if (value.substr(0, 2) != "v=") return bad("does not start with v=");
  const char* first = value.data() + 2;
  const char* last = value.data() + value.size();
  uint64_t version = 0;
  auto [ptr, ec] = std::from_chars(first, last, version);
  if (ec != std::errc() || ptr == first) return bad("has no version number");
  std::string_view rest(ptr, static_cast<size_t>(last - ptr));
  const std::string expected = ";key=" + std::string(key) + ";";
  if (rest.substr(0, expected.size()) != expected) return bad("was not written for this key");
  if (rest.find_first_not_of('.', expected.size()) != std::string_view::npos) {
    return bad("has bad padding");
  }
  return version;
}

std::string DescribeWrite(const WriteRecord& write) {
  std::string s =
      "v=" + std::to_string(write.version) + (write.kind == OpKind::kPut ? " put " : " delete ");
  switch (write.outcome) {
    case OpOutcome::kAcked:
      s += "acked";
      break;
    case OpOutcome::kFailed:
      s += "failed (" + write.error + ")";
      break;
    case OpOutcome::kPending:
      s += "pending";
      break;
  }
  s += ", issued " + FormatTime(write.issued);
  if (write.outcome != OpOutcome::kPending) s += ", completed " + FormatTime(write.completed);
  return s;
}

std::vector<std::string> CheckReads(const KeyHistory& history) {
  std::vector<std::string> violations;
  const WriteIndex index(history.writes);
  const std::string prefix = "key '" + history.key + "': ";
  for (const ReadRecord& read : history.reads) {
    const WriteRecord* last = index.LastAckedBefore(read.start);
    if (read.version) {
      const uint64_t v = *read.version;
      if (std::string why = CheckVersionWasPut(index, v, read.end); !why.empty()) {
        violations.push_back(prefix + DescribeRead(read) + " returned v=" + std::to_string(v) +
                             ", but " + why);
      } else if (last != nullptr && v < last->version) {
        violations.push_back(prefix + "stale read: " + DescribeRead(read) +
                             " returned v=" + std::to_string(v) + ", older than " +
                             DescribeWrite(*last) + ", acknowledged before the read began");
      }
      continue;
    }
    if (last == nullptr || last->kind == OpKind::kDelete) continue;
    if (index.DeleteIssuedBy(last->version, read.end)) continue;
    violations.push_back(prefix + "lost write: " + DescribeRead(read) + " returned absent, but " +
                         DescribeWrite(*last) +
                         " was acknowledged before the read began and no later delete was "
                         "issued before it ended");
  }
  return violations;
}

std::vector<std::string> CheckFinal(const KeyHistory& history,
                                    std::optional<uint64_t> final_version) {
  const WriteIndex index(history.writes);
  const WriteRecord* last = index.LastAcked();
  const std::string prefix =
      "key '" + history.key + "': final read returned " + DescribeState(final_version) + ", but ";
  const std::string last_text =
      last == nullptr ? std::string("no write was acknowledged") : DescribeWrite(*last);
  constexpr Micros kAnyTime = std::numeric_limits<Micros>::max();
  if (final_version) {
    const uint64_t v = *final_version;
    if (std::string why = CheckVersionWasPut(index, v, kAnyTime); !why.empty()) {
      return {prefix + why + " (last acknowledged: " + last_text + ")"};
    }
    if (last != nullptr && v < last->version) {
      const char* what = last->kind == OpKind::kDelete ? "deleted key resurrected" : "stale value";
      return {prefix + std::string(what) + ": the last acknowledged write is " + last_text};
    }
    return {};
  }
  if (last == nullptr || last->kind == OpKind::kDelete) return {};
  // A failed delete newer than the acknowledged put may have been applied.
  if (index.DeleteIssuedBy(last->version, kAnyTime)) return {};
  return {prefix + "acknowledged write lost: the last acknowledged write is " + last_text};
}

}  // namespace shardkv::testing
