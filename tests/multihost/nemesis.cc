#include "multihost/nemesis.h"

#include <chrono>
#include <cstdio>

namespace shardkv::multihost {
using namespace std::chrono_literals;

Nemesis::Nemesis(Bed* bed) : bed_(bed) {}

void Nemesis::Log(const std::string& what) {
  const auto now = std::chrono::steady_clock::now().time_since_epoch();
  char stamp[32];
  std::snprintf(stamp, sizeof(stamp), "%.3f",
                std::chrono::duration_cast<std::chrono::milliseconds>(now).count() / 1000.0);
  events_.push_back(std::string(stamp) + " " + what);
  std::printf("nemesis: %s\n", what.c_str());
  std::fflush(stdout);
}

Status Nemesis::Iptables(int host, const std::vector<std::string>& rule) {
  std::vector<std::string> argv{"iptables", "-w"};
  argv.insert(argv.end(), rule.begin(), rule.end());
  Command c = bed_->Run(host, argv, 10s);
  if (c.exit_code != 0) {
    return Status::Unavailable("iptables in " + bed_->Namespace(host) + " failed: " + c.out);
  }
  return Status::OK();
}

Status Nemesis::Cut(int a, int b) {
  SHARDKV_RETURN_IF_ERROR(Iptables(a, {"-A", "INPUT", "-s", bed_->Ip(b), "-j", "DROP"}));
  return Iptables(b, {"-A", "INPUT", "-s", bed_->Ip(a), "-j", "DROP"});
}

Status Nemesis::Isolate(int host) {
  Log("isolate host " + std::to_string(host));
  // Everything that arrives on its only link; local traffic (lo) still flows, so a sampler
  // inside the namespace keeps seeing its own node.
  SHARDKV_RETURN_IF_ERROR(Iptables(host, {"-A", "INPUT", "-i", "eth0", "-j", "DROP"}));
  for (int other = 1; other <= bed_->hosts(); ++other) {
    if (other == host) continue;
    SHARDKV_RETURN_IF_ERROR(Iptables(other, {"-A", "INPUT", "-s", bed_->Ip(host), "-j", "DROP"}));
  }
  return Status::OK();
}

Status Nemesis::Partition(const std::vector<std::vector<int>>& groups) {
  std::string text;
  for (const auto& g : groups) {
    text += text.empty() ? "{" : "|{";
    for (size_t i = 0; i < g.size(); ++i) text += (i ? "," : "") + std::to_string(g[i]);
    text += "}";
  }
  Log("partition " + text);
  for (size_t i = 0; i < groups.size(); ++i) {
    for (size_t j = i + 1; j < groups.size(); ++j) {
      for (int a : groups[i]) {
        for (int b : groups[j]) SHARDKV_RETURN_IF_ERROR(Cut(a, b));
      }
    }
  }
  return Status::OK();
}

Status Nemesis::Bridge(int hub, const std::vector<int>& left, const std::vector<int>& right) {
  Log("bridge: host " + std::to_string(hub) + " sees both sides, which do not see each other");
  for (int a : left) {
    for (int b : right) {
      if (a != hub && b != hub) SHARDKV_RETURN_IF_ERROR(Cut(a, b));
    }
  }
  return Status::OK();
}

Status Nemesis::Loss(int host, double p) {
  if (!(p > 0 && p <= 1)) return Status::InvalidArgument("loss probability must be in (0, 1]");
  char prob[32];
  std::snprintf(prob, sizeof(prob), "%.4f", p);
  Log("loss " + std::string(prob) + " on host " + std::to_string(host));
  return Iptables(host, {"-A", "INPUT", "-m", "statistic", "--mode", "random", "--probability",
                         prob, "-j", "DROP"});
}

Status Nemesis::Latency(int host, std::chrono::milliseconds delay) {
  Log("latency " + std::to_string(delay.count()) + " ms each way into node " +
      std::to_string(host) + " (delaying TCP proxy: this kernel has no sch_netem for tc netem)");
  constexpr uint16_t kProxyPort = 7001;
  auto proxy = DelayProxy::Start(bed_->Namespace(host), bed_->Ip(host), kProxyPort, bed_->Ip(host),
                                 7000, delay);
  if (!proxy.ok()) return proxy.status();
  proxies_.push_back(std::move(*proxy));
  // Only what arrives from outside: the proxy's own connection to the node is local (OUTPUT),
  // so it does not loop through PREROUTING.
  return Iptables(host, {"-t", "nat", "-A", "PREROUTING", "-p", "tcp", "--dport", "7000", "-j",
                         "REDIRECT", "--to-ports", std::to_string(kProxyPort)});
}

Status Nemesis::Heal() {
  Log("heal");
  for (int h = 1; h <= bed_->hosts(); ++h) {
    SHARDKV_RETURN_IF_ERROR(Iptables(h, {"-F", "INPUT"}));
    SHARDKV_RETURN_IF_ERROR(Iptables(h, {"-t", "nat", "-F", "PREROUTING"}));
  }
  for (const auto& proxy : proxies_) {
    Log("the latency proxy carried " + std::to_string(proxy->connections()) + " connections");
  }
  proxies_.clear();  // closes the delayed connections; their peers reconnect directly
  return Status::OK();
}

Status Nemesis::Skew(int host, int skew_ms) {
  Log("restart host " + std::to_string(host) + " with its clock " + std::to_string(skew_ms) +
      " ms off (libfaketime, wall clock only)");
  return bed_->RestartNode(host, skew_ms);
}

void Nemesis::Pause(int host) {
  Log("SIGSTOP node " + std::to_string(host));
  bed_->PauseNode(host);
}

void Nemesis::Resume(int host) {
  Log("SIGCONT node " + std::to_string(host));
  bed_->ResumeNode(host);
}

void Nemesis::Kill(int host) {
  Log("SIGKILL node " + std::to_string(host));
  bed_->KillNode(host);
}

int Nemesis::Stop(int host, std::chrono::milliseconds limit) {
  Log("SIGTERM node " + std::to_string(host));
  const auto t0 = std::chrono::steady_clock::now();
  const int code = bed_->StopNode(host, limit);
  char took[64];
  std::snprintf(took, sizeof(took), " exited %d after %.1f s", code,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  Log("node " + std::to_string(host) + took);
  return code;
}

Status Nemesis::Restart(int host, int skew_ms) {
  Log("restart node " + std::to_string(host));
  return bed_->RestartNode(host, skew_ms);
}

}  // namespace shardkv::multihost
