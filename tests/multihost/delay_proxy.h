// DelayProxy: the bed's latency nemesis. This kernel has no sch_netem, so `tc netem` cannot
// delay packets; instead a TCP proxy inside a host's namespace delays every chunk by a fixed
// time in each direction, and an iptables REDIRECT in that namespace sends the node's incoming
// connections (port 7000) through it (Nemesis::Latency).
//
// It delays connections opened after it started; connections already established keep their
// direct path (conntrack), so a scenario starts the latency before the traffic it wants slowed.
// Each direction of a connection has a reader thread that stamps chunks and a writer thread that
// sends each one `delay` after it arrived, so the delay does not pile up.
//
// Thread-safety: Start() and Stop() from one thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "shardkv/status.h"

namespace shardkv::multihost {

class DelayProxy {
 public:
  // Listens on listen_ip:listen_port inside `netns` (a name under /var/run/netns) and forwards
  // each connection to target_ip:target_port from there.
  static StatusOr<std::unique_ptr<DelayProxy>> Start(
      const std::string& netns, const std::string& listen_ip, uint16_t listen_port,
      const std::string& target_ip, uint16_t target_port, std::chrono::milliseconds delay);
  ~DelayProxy();  // Stop()
  DelayProxy(const DelayProxy&) = delete;
  DelayProxy& operator=(const DelayProxy&) = delete;
  // Closes the listener and every connection, joins every thread. Idempotent.
  void Stop();
  uint64_t connections() const { return connections_.load(); }

 private:
  DelayProxy() = default;
  void AcceptLoop();
  void Pump(int from, int to);  // one direction

  int netns_fd_ = -1;
  int listen_fd_ = -1;
  std::string target_ip_;
  uint16_t target_port_ = 0;
  std::chrono::milliseconds delay_{0};
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> connections_{0};
  std::thread acceptor_;
  std::mutex mu_;
  std::vector<int> fds_;            // guarded by mu_: every connection's sockets
  std::vector<std::thread> pumps_;  // guarded by mu_
};

}  // namespace shardkv::multihost
