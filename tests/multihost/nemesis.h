// Nemesis: the bed's fault injector (Jepsen's nemesis), callable at any moment of a workload.
//
// Partitions are iptables INPUT drops inside the hosts' namespaces, so a cut pair loses packets
// silently in both directions (no RST: as a real network split looks to TCP). The root namespace
// (the bridge's address) is never cut, except from an isolated host: clients there reach every
// side that is not isolated. Loss is `-m statistic --mode random`. Latency uses a DelayProxy
// (delay_proxy.h), since this kernel has no sch_netem; Latency() says so. Pause, kill, restart
// and clock skew go through the Bed.
//
// Every action is logged (Events()) with its time, so a scenario's report says what happened
// when. Thread-safety: none; the scenario's control thread calls it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "multihost/bed.h"
#include "multihost/delay_proxy.h"
#include "shardkv/status.h"

namespace shardkv::multihost {

class Nemesis {
 public:
  explicit Nemesis(Bed* bed);

  // Host `host` reaches nobody and nobody reaches it (the root namespace neither).
  Status Isolate(int host);
  // Every pair of hosts in different groups is cut; hosts in no group keep their links.
  // Majority/minority: {{1,2},{3,4,5}}; 2|2: {{1,2},{3,4}}.
  Status Partition(const std::vector<std::vector<int>>& groups);
  // A bridge: `hub` sees `left` and `right`, which do not see each other.
  Status Bridge(int hub, const std::vector<int>& left, const std::vector<int>& right);
  // Drops each packet host `host` receives with probability p (0 < p <= 1).
  Status Loss(int host, double p);
  // Delays the traffic into node `host` by `delay` each way: a DelayProxy in its namespace and a
  // REDIRECT of port 7000 to it. Applies to connections opened from now on (see delay_proxy.h).
  Status Latency(int host, std::chrono::milliseconds delay);
  // Removes every rule (partitions, loss, latency) of every host and stops the proxies.
  Status Heal();

  // Clock skew, pause, kill and restart (the Bed's, logged).
  Status Skew(int host, int skew_ms);  // restarts the node with its wall clock skew_ms off
  void Pause(int host);
  void Resume(int host);
  void Kill(int host);
  // SIGTERM (graceful), SIGKILL after `limit`; returns the node's exit status (Bed::StopNode).
  int Stop(int host, std::chrono::milliseconds limit = std::chrono::seconds(10));
  Status Restart(int host, int skew_ms = 0);

  const std::vector<std::string>& Events() const { return events_; }

 private:
  Status Cut(int a, int b);  // a and b drop each other's packets
  Status Iptables(int host, const std::vector<std::string>& rule);
  void Log(const std::string& what);

  Bed* bed_;
  std::vector<std::string> events_;
  std::vector<std::unique_ptr<DelayProxy>> proxies_;
};

}  // namespace shardkv::multihost
