// shardkv-bench: a closed-loop load generator that drives either a shardkv cluster (through the
// public async client API) or a redis-server (through hiredis) with the same workload, so the
// two can be compared on one machine.
//
// Fairness, i.e. what is identical for both targets:
//   - The op sequence. Logical client c's i-th op (GET or PUT, and its key) is a pure function
//     of (seed, c, i), so both targets see the same keys in the same per-client order.
//   - The closed loop. Each of --clients logical clients keeps --pipeline requests outstanding;
//     a completion is recorded and immediately replaced by the client's next op. Latency runs
//     from just before the request is handed to the client library to the moment its reply is
//     seen on the client side, so it includes queueing in the pipeline.
//   - The connections and threads. shardkv: one Client with connections_per_node = --clients
//     and io_threads = --threads; completions run on those threads and issue the next op there.
//     redis: --clients non-blocking hiredis contexts spread over --threads epoll loops that parse
//     replies and issue the next op. Either way --clients TCP connections are open and --threads
//     threads do all the client-side work (the main thread only waits).
//   - The bookkeeping: the same per-client state, histogram and lock on every completion.
// One difference cannot be removed through the public API: the shardkv client spreads each call
// over its connections round-robin, so a logical client's requests are not pinned to one
// connection. The number of requests in flight (clients x pipeline) is the same.
//
// A GET of a missing key counts as a completed op (and is reported as a miss).
//
// This file holds the command line, the phases and the report; the workload, the measurement
// and the two drivers are in kv_bench_workload.h, kv_bench_measure.h and kv_bench_drivers.h.
#include <errno.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kv_bench_drivers.h"
#include "kv_bench_measure.h"
#include "kv_bench_workload.h"
#include "placement_lab/json.h"
#include "shardkv/client.h"
#include "shardkv/options.h"
#include "shardkv/status.h"

namespace kv_bench {
namespace {

// ---------------------------------------------------------------------------------------------
// Reporting

struct Report {
  Phase phase = Phase::kMain;
  uint64_t completed = 0;
  uint64_t misses = 0;
  uint64_t errors = 0;
  double elapsed_s = 0;
  double ops_per_s = 0;
  double p50_us = 0, p99_us = 0, p999_us = 0, max_us = 0, mean_us = 0;
  double client_cpu_pct = 0;
  // CPU per completed op: unlike ops/s it barely depends on how much of the shared cores other
  // processes took during the run, so it is the steadier figure for comparing two servers.
  double client_cpu_us_per_op = 0;
  std::optional<double> server_cpu_pct;
  std::optional<double> server_cpu_us_per_op;
  std::optional<double> machine_cpu_pct;
  std::string first_error;
};

// Without the surrounding quotes: the printf formats below supply them.
std::string JsonEscape(std::string_view s) {
  const std::string quoted = shardkv::lab::JsonQuote(s);
  return quoted.substr(1, quoted.size() - 2);
}

void PrintJson(const Config& c, const Report& r) {
  std::printf(
      "{\"label\":\"%s\",\"target\":\"%s\",\"phase\":\"%s\",\"clients\":%d,\"pipeline\":%d,"
      "\"threads\":%d,\"ratio\":\"%s\",\"value_size\":%zu,\"keyspace\":%llu,\"dist\":\"%s\","
      "\"seed\":%llu,\"ops\":%llu,\"misses\":%llu,\"errors\":%llu,\"elapsed_s\":%.3f,"
      "\"ops_per_s\":%.1f,\"mean_us\":%.1f,\"p50_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,"
      "\"max_us\":%.1f,\"client_cpu_pct\":%.1f,\"client_cpu_us_per_op\":%.2f",
      JsonEscape(c.label).c_str(), c.target.c_str(), PhaseName(r.phase), c.clients, c.pipeline,
      c.threads, c.ratio.c_str(), c.value_size, static_cast<unsigned long long>(c.keyspace),
      JsonEscape(c.dist).c_str(), static_cast<unsigned long long>(c.seed),
      static_cast<unsigned long long>(r.completed), static_cast<unsigned long long>(r.misses),
      static_cast<unsigned long long>(r.errors), r.elapsed_s, r.ops_per_s, r.mean_us, r.p50_us,
      r.p99_us, r.p999_us, r.max_us, r.client_cpu_pct, r.client_cpu_us_per_op);
  if (r.server_cpu_pct) std::printf(",\"server_cpu_pct\":%.1f", *r.server_cpu_pct);
  if (r.server_cpu_us_per_op) {
    std::printf(",\"server_cpu_us_per_op\":%.2f", *r.server_cpu_us_per_op);
  }
  if (r.machine_cpu_pct) std::printf(",\"machine_cpu_pct\":%.1f", *r.machine_cpu_pct);
  if (!r.first_error.empty()) {
    std::printf(",\"first_error\":\"%s\"", JsonEscape(r.first_error).c_str());
  }
  std::printf("}\n");
}

void PrintText(const Config& c, const Report& r) {
  if (r.phase != Phase::kMain) {
    std::printf("%-8s %llu ops in %.2f s (%.0f ops/s)%s\n", PhaseName(r.phase),
                static_cast<unsigned long long>(r.completed), r.elapsed_s, r.ops_per_s,
                r.errors ? " WITH ERRORS" : "");
  } else {
    std::printf(
        "%-8s %llu ops in %.2f s: %.0f ops/s  latency us: p50 %.1f  p99 %.1f  p99.9 %.1f  "
        "max %.1f  client CPU %.0f%% (%.1f us/op)",
        PhaseName(r.phase), static_cast<unsigned long long>(r.completed), r.elapsed_s, r.ops_per_s,
        r.p50_us, r.p99_us, r.p999_us, r.max_us, r.client_cpu_pct, r.client_cpu_us_per_op);
    if (r.server_cpu_pct) {
      std::printf("  server CPU %.0f%% (%.1f us/op)", *r.server_cpu_pct,
                  r.server_cpu_us_per_op.value_or(0));
    }
    if (r.machine_cpu_pct) std::printf("  machine busy %.0f%%", *r.machine_cpu_pct);
    std::printf("  get misses %llu  errors %llu\n", static_cast<unsigned long long>(r.misses),
                static_cast<unsigned long long>(r.errors));
  }
  if (!r.first_error.empty()) std::printf("         first error: %s\n", r.first_error.c_str());
}

// Runs one phase and measures it: wall time, client (and server) CPU, latency.
StatusOr<Report> RunPhase(const Config& config, Driver& driver, Phase phase) {
  Workload workload(config, phase);
  std::optional<Clock::time_point> end;
  const Clock::time_point start = Clock::now();
  if (phase == Phase::kMain && config.ops == 0) {
    end = start + std::chrono::duration_cast<Clock::duration>(
                      std::chrono::duration<double>(config.duration_s));
  }
  Run run(workload, config.clients, end);
  const double cpu0 = ProcessCpuSeconds();
  const std::optional<double> server0 = OtherProcessCpuSeconds(config.server_pid);
  const std::optional<double> machine0 = MachineBusyCpuSeconds();
  Status executed = driver.Execute(run);
  const Clock::time_point finish = Clock::now();
  const double cpu1 = ProcessCpuSeconds();
  const std::optional<double> server1 = OtherProcessCpuSeconds(config.server_pid);
  const std::optional<double> machine1 = MachineBusyCpuSeconds();
  if (!executed.ok()) return executed;

  Report r;
  r.phase = phase;
  Histogram latency;
  run.Totals(&latency, &r.completed, &r.misses, &r.errors);
  r.elapsed_s = std::chrono::duration<double>(finish - start).count();
  r.ops_per_s = r.elapsed_s > 0 ? static_cast<double>(r.completed) / r.elapsed_s : 0;
  r.p50_us = latency.Percentile(0.50) / 1e3;
  r.p99_us = latency.Percentile(0.99) / 1e3;
  r.p999_us = latency.Percentile(0.999) / 1e3;
  r.max_us = static_cast<double>(latency.max()) / 1e3;
  r.mean_us = latency.mean() / 1e3;
  r.client_cpu_pct = r.elapsed_s > 0 ? 100.0 * (cpu1 - cpu0) / r.elapsed_s : 0;
  if (r.completed > 0) r.client_cpu_us_per_op = (cpu1 - cpu0) * 1e6 / r.completed;
  if (server0 && server1 && r.elapsed_s > 0) {
    r.server_cpu_pct = 100.0 * (*server1 - *server0) / r.elapsed_s;
    if (r.completed > 0) r.server_cpu_us_per_op = (*server1 - *server0) * 1e6 / r.completed;
  }
  if (machine0 && machine1 && r.elapsed_s > 0) {
    r.machine_cpu_pct = 100.0 * (*machine1 - *machine0) / r.elapsed_s;
  }
  r.first_error = run.first_error();
  return r;
}

// ---------------------------------------------------------------------------------------------
// Command line

// Parses "GET:PUT" weights such as "9:1".
bool ParseRatio(const std::string& text, uint64_t* get, uint64_t* put) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) return false;
  auto parse = [](std::string_view s, uint64_t* out) {
    if (s.empty()) return false;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
    return ec == std::errc() && p == s.data() + s.size() && *out <= 1000000;
  };
  const std::string_view view(text);
  return parse(view.substr(0, colon), get) && parse(view.substr(colon + 1), put) && *get + *put > 0;
}

// Parses "uniform", "zipf" (theta 0.99) or "zipf:THETA" with 0 < THETA < 1.
bool ParseDist(const std::string& text, double* theta) {
  if (text == "uniform") {
    *theta = 0;
    return true;
  }
  if (text == "zipf") {
    *theta = 0.99;
    return true;
  }
  if (text.rfind("zipf:", 0) != 0) return false;
  const std::string number = text.substr(5);
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(number.c_str(), &end);
  if (number.empty() || errno != 0 || end != number.c_str() + number.size()) return false;
  if (!(v > 0 && v < 1)) return false;
  *theta = v;
  return true;
}

bool ValidHostPort(const std::string& address) {
  std::string host;
  uint16_t port = 0;
  return shardkv::ParseHostPort(address, &host, &port).ok();
}

// Checks what CLI11 cannot express. Returns an empty string when the config is usable.
std::string Validate(Config& c) {
  if (!ParseRatio(c.ratio, &c.get_weight, &c.put_weight)) {
    return "--ratio must be GET:PUT with non-negative integers, not both 0 (e.g. 9:1), got \"" +
           c.ratio + "\"";
  }
  if (!ParseDist(c.dist, &c.zipf_theta)) {
    return "--dist must be uniform, zipf or zipf:THETA with 0 < THETA < 1, got \"" + c.dist + "\"";
  }
  if (c.target == "shardkv") {
    if (c.cluster.empty()) return "--target shardkv needs --cluster host:port[,...]";
    for (const auto& a : c.cluster) {
      if (!ValidHostPort(a)) return "--cluster: bad address \"" + a + "\" (expected host:port)";
    }
  } else {
    if (c.redis.empty()) return "--target redis needs --redis host:port";
    if (!ValidHostPort(c.redis)) return "--redis: bad address \"" + c.redis + "\"";
  }
  if (c.ops == 0 && c.duration_s == 0) c.duration_s = 10;
  if (c.ops > 0 && c.ops < static_cast<uint64_t>(c.clients)) {
    return "--ops must be at least --clients (" + std::to_string(c.clients) + ")";
  }
  if (c.threads > c.clients) c.threads = c.clients;
  return {};
}

int RealMain(int argc, char** argv) {
  Config config;
  CLI::App app{
      "shardkv-bench: closed-loop GET/PUT load generator for shardkv or redis-server.\n"
      "Each of --clients clients keeps --pipeline requests in flight; reports ops/s, latency\n"
      "percentiles (microseconds) and this process's CPU use (% of one core)."};
  app.add_option("--target", config.target, "shardkv or redis")
      ->capture_default_str()
      ->check(CLI::IsMember({"shardkv", "redis"}));
  app.add_option("--cluster", config.cluster, "shardkv seed nodes, host:port[,...]")
      ->delimiter(',');
  app.add_option("--redis", config.redis, "redis-server address, host:port");
  app.add_option("--clients", config.clients, "Connections / logical clients")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--pipeline", config.pipeline, "Requests in flight per client")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  app.add_option("--ratio", config.ratio, "GET:PUT weights, e.g. 1:0, 0:1, 9:1")
      ->capture_default_str();
  app.add_option("--value-size", config.value_size, "Bytes per PUT value")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{16} << 20));
  app.add_option("--keyspace", config.keyspace, "Distinct keys (key:000000000000 ...)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000000000000}));
  app.add_option("--dist", config.dist, "Key distribution: uniform, zipf or zipf:THETA")
      ->capture_default_str();
  auto* duration = app.add_option("--duration", config.duration_s,
                                  "Seconds to run (default 10 unless --ops is given)")
                       ->check(CLI::Range(0.001, 86400.0));
  app.add_option("--ops", config.ops, "Total ops to run instead of --duration")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 50))
      ->excludes(duration);
  app.add_option("--threads", config.threads,
                 "Load-generator threads (shardkv client I/O threads / redis event loops)")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_flag("--preload", config.preload, "PUT every key of the keyspace before the run");
  app.add_option("--warmup-ops", config.warmup_ops,
                 "Unmeasured GETs per client before the run (opens every connection)")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, uint64_t{1000000}));
  app.add_option("--seed", config.seed, "Seed of the key/op sequence")->capture_default_str();
  app.add_option("--timeout-ms", config.timeout_ms, "Per-request timeout")
      ->capture_default_str()
      ->check(CLI::Range(1u, 600000u));
  app.add_option("--server-pid", config.server_pid,
                 "Also report this local process's CPU use during the run (the server)")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()));
  app.add_option("--label", config.label, "Free text copied into the JSON output");
  app.add_option("--auth-secret-file", config.auth_secret_file, "shardkv: the cluster secret");
  app.add_option("--tls-ca", config.tls_ca_file, "shardkv: TLS CA (with --tls-cert, --tls-key)");
  app.add_option("--tls-cert", config.tls_cert_file, "shardkv: TLS client certificate");
  app.add_option("--tls-key", config.tls_key_file, "shardkv: TLS client key");
  app.add_flag("--json", config.json, "Print one JSON object per phase instead of text");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help
    std::fprintf(stderr, "shardkv-bench: %s\n", e.what());
    return 2;
  }
  if (std::string why = Validate(config); !why.empty()) {
    std::fprintf(stderr, "shardkv-bench: %s\n", why.c_str());
    return 2;
  }

  // A peer closing mid-write must surface as an error, not kill the process.
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<Driver> driver;
  if (config.target == "shardkv") {
    driver = MakeShardkvDriver(config);
  } else {
    driver = MakeRedisDriver(config);
  }
  if (Status s = driver->Connect(); !s.ok()) {
    std::fprintf(stderr, "shardkv-bench: cannot connect: %s\n", s.ToString().c_str());
    return 3;
  }
  if (!config.json) {
    std::printf(
        "target %s  clients %d  pipeline %d  threads %d  ratio %s  value %zu B  "
        "keyspace %llu  dist %s  seed %llu\n",
        config.target.c_str(), config.clients, config.pipeline, config.threads,
        config.ratio.c_str(), config.value_size, static_cast<unsigned long long>(config.keyspace),
        config.dist.c_str(), static_cast<unsigned long long>(config.seed));
  }
  std::vector<Phase> phases;
  if (config.warmup_ops > 0) phases.push_back(Phase::kWarmup);
  if (config.preload) phases.push_back(Phase::kPreload);
  phases.push_back(Phase::kMain);
  int exit_code = 0;
  for (Phase phase : phases) {
    auto report = RunPhase(config, *driver, phase);
    if (!report.ok()) {
      std::fprintf(stderr, "shardkv-bench: %s failed: %s\n", PhaseName(phase),
                   report.status().ToString().c_str());
      return 1;
    }
    // Warm-up reads hit missing keys when nothing is preloaded; that is expected and silent.
    if (phase != Phase::kWarmup || report->errors > 0 || !config.json) {
      if (config.json) {
        PrintJson(config, *report);
      } else {
        PrintText(config, *report);
      }
    }
    std::fflush(stdout);
    if (report->errors > 0) {
      exit_code = 1;
      if (phase != Phase::kMain) {
        std::fprintf(stderr, "shardkv-bench: %s had errors; not running the measurement\n",
                     PhaseName(phase));
        return 1;
      }
    }
  }
  return exit_code;
}

}  // namespace
}  // namespace kv_bench

int main(int argc, char** argv) {
  try {
    return kv_bench::RealMain(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "shardkv-bench: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "shardkv-bench: internal error\n");
  }
  return 1;
}
