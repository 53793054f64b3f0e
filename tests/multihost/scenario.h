// Scenario: what every multi-host scenario does around its nemesis (design.md "Multi-host test
// bed"): make the bed, start and form the nodes, run workloads (from the root namespace or
// inside hosts) and one epoch/map sampler per node, then, after the heal, wait for the cluster
// to settle and check the histories. The test cases (scenarios_test.cc) only choose the faults.
//
// Windows are short by default (the CI budget: the whole label in ~12 minutes on 2 cores) and
// Scale()d by 4 under SHARDKV_LONG=1.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "integration/background_process.h"
#include "multihost/bed.h"
#include "multihost/history_file.h"
#include "multihost/nemesis.h"
#include "shardkv/admin.h"
#include "testing/temp_dir.h"

namespace shardkv::multihost {

// The short default scaled for SHARDKV_LONG=1.
std::chrono::milliseconds Scale(std::chrono::milliseconds short_length);

struct WorkloadSpec {
  int host = 0;  // 0: the root namespace
  std::string prefix = "A";
  std::vector<std::string> read_prefixes;
  std::vector<int> seed_hosts;  // whose nodes it connects to; empty: all
  int writers = 2, readers = 2;
  int keys = 20;  // per writer
  std::chrono::milliseconds duration{5000};
  uint64_t seed = 1;
  bool fresh_clients = false;  // a new Client per write (like one CLI process per write)
  std::chrono::milliseconds timeout{2000};  // per operation (ClientOptions::timeout_ms)
};

class Scenario {
 public:
  // Makes the bed; Unavailable (with the reason) when namespaces cannot be made here.
  // `node_args`: extra flags of every node, restarts included (say, a short --tombstone-grace).
  static StatusOr<std::unique_ptr<Scenario>> Create(const std::string& name, int hosts,
                                                    const std::vector<std::string>& node_args = {});
  ~Scenario();

  Bed& bed() { return *bed_; }
  Nemesis& nemesis() { return nemesis_; }

  // Starts nodes 1..n (`skews_ms[i]` for node i+1, if given).
  Status StartNodes(int n, const std::vector<int>& skews_ms = {});
  // Forms nodes 1..n into a cluster: `shardkv cluster init` when the CLI has it, else the
  // workload's `form` (Admin::FormCluster). Prints which.
  Status Form(int n, int replicas = 3, const std::string& mode = "");
  // `shardkv --cluster <hosts' nodes> <args> --yes` from `from` (0: root namespace).
  Command Cli(int from, const std::vector<int>& seed_hosts, std::vector<std::string> args);
  // Writes `count` keys of `bytes` each, so that a change has data to stream.
  Status Load(int count, int bytes);

  void StartWorkload(const WorkloadSpec& spec);
  // The counter workload (the workload binary's `count`) from the root namespace: `clients`
  // threads incrementing `counters` counters through every member for `duration`.
  void StartCounters(int clients, int counters, std::chrono::milliseconds duration);
  // After the counter workloads ended (WaitAll): reads each counter at consistency all, twice
  // (the second read after the first's read repair), and returns a violation for any value
  // outside [acked - failed decrements, acked + failed increments] or any read that failed, and
  // for any acknowledged HSET field its hash does not hold, any acknowledged SADD member no
  // acknowledged SREM saw that its set does not hold, or any member an acknowledged SREM saw that
  // it does. Prints one line per counter, hash and set.
  std::vector<std::string> CheckCounters();
  // A sampler inside each given host's namespace for `duration` (nodes 1..hosts by default).
  void StartSamplers(std::chrono::milliseconds duration, std::vector<int> hosts = {});
  // Polls until the workloads recorded `ops` operations in all (false after `limit`).
  bool WaitForOps(uint64_t ops, std::chrono::milliseconds limit);
  // Waits for the workloads (their own duration bounds them); samplers run on until Check().
  void WaitAll(std::chrono::milliseconds limit);

  // Polls until the change (if any) ended and every running member reports one epoch and map.
  Status WaitChangeEnded(std::chrono::milliseconds limit);
  Status Settle(std::chrono::milliseconds limit);
  // Waits for the change to end; a failed one is resumed (`rebalance resume`, what the
  // operator of the findings did), at most `resumes` times. Returns the end state's name.
  StatusOr<std::string> FinishChange(std::chrono::milliseconds limit, int resumes = 2);
  // The node driving the current change (0 if none answered), and its state's name ("streaming").
  uint32_t Driver(std::string* state = nullptr);
  // An Admin with the running members as seeds and this run's secret.
  std::unique_ptr<Admin> MakeAdmin(uint32_t timeout_ms = 2000);
  // Polls until node `host` serves again after a (re)start: it answers with a map that lists it
  // at the newest epoch any other running member holds (it caught up).
  Status WaitServing(int host, std::chrono::milliseconds limit);

  // Final reads from the root namespace, then every check. Prints the one-line figures.
  Figures Check();
  // The outcome counts (ops, ok, failed, ...) of the operations on the keys `keep` accepts.
  Figures Outcomes(const std::function<bool(const std::string& key)>& keep);

  // Prints "<name>: EXPECTED FAILURE (issue 12): <why>" or "<name>: passed" with the figures
  // and time; returns whether the scenario held every promise. A run that did not hold keeps
  // its run files when SHARDKV_BED_KEEP names a directory.
  bool Report(const Figures& figures, const std::string& expected_failure);

  // Stops everything and returns what of this run is left (`ip netns list`, `ip link`): empty.
  std::vector<std::string> Teardown();
  // The workloads' history files so far.
  const std::vector<std::string>& histories() const { return histories_; }

 private:
  void KeepRunFiles() const;
  Scenario(std::string name, std::unique_ptr<testing::TempDir> dir, std::unique_ptr<Bed> bed);
  std::vector<int> Members() const;

  std::string name_;
  std::unique_ptr<testing::TempDir> dir_;
  std::unique_ptr<Bed> bed_;
  Nemesis nemesis_;
  int formed_ = 0;
  std::chrono::steady_clock::time_point start_;
  std::vector<std::unique_ptr<testing::BackgroundProcess>> processes_;  // workloads
  std::vector<std::unique_ptr<testing::BackgroundProcess>> samplers_;
  std::vector<std::string> histories_;
  std::vector<std::string> tallies_;  // the counter workloads' files
  std::vector<std::string> samples_;
  std::string secret_file_;
};

}  // namespace shardkv::multihost
