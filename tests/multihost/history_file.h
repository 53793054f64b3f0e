// The bed's operation histories, as files: the workload (workload.cc) appends one line per
// operation, the scenarios merge the files of every workload process, read every key once more
// after the heal, and check them with the history validator (tests/testing/history_validator.h).
//
// Line format (space separated; times are CLOCK_MONOTONIC microseconds, one clock for every
// namespace of the host, and the workload never runs under faketime):
//   W <key> <version> put|del <invoke_us> <complete_us> ok|info [error...]
//   R <key> <invoke_us> <complete_us> ok <version> | notfound | fail [error...]
// A write that returned any error is `info` (indeterminate: it may have been applied; the
// findings' A5 shows that even InvalidArgument can follow an applied attempt). A read error is
// `fail`. Thread-safety: HistoryWriter is thread-safe; the functions are pure.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "shardkv/client.h"
#include "shardkv/status.h"
#include "testing/history_validator.h"

namespace shardkv::multihost {

// Microseconds of CLOCK_MONOTONIC.
int64_t MonotonicMicros();

class HistoryWriter {
 public:
  static StatusOr<std::unique_ptr<HistoryWriter>> Open(const std::string& path);
  ~HistoryWriter();
  void Write(const std::string& key, uint64_t version, bool del, int64_t invoked, int64_t completed,
             const Status& status);
  // version nullopt with status OK: notfound.
  void Read(const std::string& key, int64_t invoked, int64_t completed,
            std::optional<uint64_t> version, const Status& status);

 private:
  explicit HistoryWriter(std::FILE* file) : file_(file) {}
  std::mutex mu_;
  std::FILE* file_;
};

// One scenario's figures: the one line each scenario prints.
struct Figures {
  uint64_t ops = 0, ok = 0, notfound = 0, failed = 0, indeterminate = 0;
  uint64_t lost = 0, stale = 0, resurrected = 0, divergent_epochs = 0;
  uint64_t unchecked = 0;  // keys whose final read kept failing
  // Operations a scenario promises to succeed that did not (say, those on keys no faulty node
  // holds); the scenario counts them.
  uint64_t required_failed = 0;
  std::vector<std::string> violations;  // readable, the first ones
  std::string Line() const;
  bool Clean() const {
    return lost == 0 && stale == 0 && resurrected == 0 && unchecked == 0 && required_failed == 0;
  }
};

// Merges history files into one KeyHistory per key and counts the outcomes into `figures`. With
// `keep`, only the operations on keys it accepts.
StatusOr<std::map<std::string, testing::KeyHistory>> LoadHistories(
    const std::vector<std::string>& paths, Figures* figures,
    const std::function<bool(const std::string& key)>& keep = {});

// The operations invoked at or after `since_us` that failed (a write `info`, a read `fail`): how
// many, and how long after `since_us` the last of them was invoked (-1: none). After a heal, the
// latter is how long the cluster took to be fully available again, as its clients saw it.
struct FailuresAfter {
  uint64_t ops = 0;  // invoked at or after since_us
  uint64_t failed = 0;
  int64_t last_failed_after_us = -1;
};
StatusOr<FailuresAfter> FailedInvokedAfter(const std::vector<std::string>& paths, int64_t since_us);

// Reads every key with a new client (consistency all, falling back to quorum), up to `attempts`
// tries per key. nullopt in the result: absent; missing from the result: unreadable.
std::map<std::string, std::optional<uint64_t>> FinalReads(const ClientOptions& options,
                                                          const std::vector<std::string>& keys,
                                                          int attempts);

// Checks the reads (stale, resurrected) and the final state (lost, resurrected), adding to
// `figures`. A read that returned a value after a delete was acknowledged is "resurrected",
// any other read violation "stale".
void CheckHistories(const std::map<std::string, testing::KeyHistory>& histories,
                    const std::map<std::string, std::optional<uint64_t>>& final_reads,
                    Figures* figures);

// Sampler lines: "<t_us> <node id> <cluster id> <epoch> <content hash hex>". Counts the epochs of
// one cluster seen with two different maps, into figures->divergent_epochs, naming them in
// figures->violations.
Status CheckSamples(const std::vector<std::string>& paths, Figures* figures);

}  // namespace shardkv::multihost
