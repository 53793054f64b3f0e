#include "node_flags.h"

#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string_view>
#include <vector>

namespace shardkv::node_tool {
namespace {

constexpr char kSeeHelp[] = " (see shardkv-node --help)";

// The --config argument, found before the flags are parsed (the file goes under them). CLI11
// itself checks the flag later (a missing value, a repeated flag).
std::string ConfigPathOf(int argc, const char* const* argv) {
  constexpr std::string_view kFlag = "--config";
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == kFlag && i + 1 < argc) return argv[i + 1];
    if (arg.size() > kFlag.size() && arg.substr(0, kFlag.size() + 1) == "--config=") {
      return std::string(arg.substr(kFlag.size() + 1));
    }
  }
  return "";
}

std::string OneLine(std::string_view message) {
  std::string line;
  for (char c : message) line += (c == '\n' || c == '\r') ? ' ' : c;
  return line;
}

}  // namespace

int ParseNodeCommandLine(int argc, const char* const* argv, NodeCommandLine* out,
                         std::string* error) {
  NodeConfig file;
  const std::string config_path = ConfigPathOf(argc, argv);
  if (!config_path.empty()) {
    if (Status s = LoadNodeConfig(config_path, &file); !s.ok()) {
      *error = OneLine(s.message());
      return 2;
    }
  }
  out->options = file.options;
  out->log_level = file.log_level;
  out->config_path = config_path;
  NodeOptions& options = out->options;
  uint64_t grace_s = options.tombstone_grace_ms / 1000;
  const auto in_file = [&file](const char* key) { return file.keys.count(key) > 0; };

  CLI::App app{"shardkv-node: one node of a shardkv cluster"};
  std::string config_flag;
  app.add_option("--config", config_flag,
                 "TOML configuration file (conf/shardkv-node.toml lists every key); a flag given "
                 "here overrides the file's value");
  auto* id = app.add_option("--id", options.id, "Node id, unique in the cluster and never reused")
                 ->check(CLI::Range(1u, kMaxNodeId));
  if (!in_file("id")) id->required();
  app.add_option("--cluster-id", options.cluster_id,
                 "The cluster this node belongs to (from cluster.conf). With it the node refuses "
                 "to start on a data directory without a database or with another cluster's "
                 "data (rebuild it with --rebuild), and --rebuild accepts only this cluster's "
                 "maps. Leave it out for a new node: it starts unformed, and `shardkv cluster "
                 "init` or `cluster join` puts it in a cluster")
      // CLI11 would read "-1" as 2^64-1, which passes any range: insist on digits first.
      ->check(CLI::Validator(
          [](const std::string& text) {
            return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos
                       ? std::string()
                       : "'" + text + "' is not a cluster id (a positive decimal number)";
          },
          "DIGITS"))
      ->check(CLI::Range(uint64_t{1}, std::numeric_limits<uint64_t>::max()));
  app.add_option("--listen", options.listen,
                 "host:port to listen on (port 0-65535; 0 = any free port, written to "
                 "DATA/port); an IPv6 host goes in brackets")
      ->capture_default_str();
  app.add_option("--advertise", options.advertise,
                 "host:port other nodes and clients use to reach this node, when it differs from "
                 "--listen (0.0.0.0, containers, NAT); the cluster map records it. Default: the "
                 "bound address");
  app.add_option("--redis-listen", options.redis_listen,
                 "host:port of a Redis-protocol (RESP2/RESP3) listener (port 0 = any free port, "
                 "written to DATA/redis_port). Default: none");
  app.add_flag("--redis-allow-flush", options.redis_allow_flush,
               "Let the Redis listener run FLUSHDB / FLUSHALL, which delete every key of the "
               "whole cluster. Default: refused");
  app.add_option("--metrics-listen", options.metrics_listen,
                 "host:port of the HTTP metrics listener (GET /metrics for Prometheus, /healthz, "
                 "/readyz; port 0 = any free port, written to DATA/metrics_port). Default: none");
  auto* data = app.add_option("--data", options.data_dir, "Data directory (created if missing)");
  if (!in_file("data_dir")) data->required();
  app.add_option("--seeds", options.seeds, "Other nodes (host:port), comma separated")
      ->delimiter(',');
  app.add_option("--threads", options.io_threads, "Network I/O threads")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxIoThreads));
  app.add_flag("--sync", options.sync, "fsync the WAL before acknowledging each write");
  app.add_flag("--rebuild", options.rebuild,
               "Drop local data, fetch the map from --seeds and re-stream this node's ranges from "
               "the other replicas before serving (a node that lost its data, or was down longer "
               "than the tombstone grace). Needs --seeds");
  app.add_option("--log-level", out->log_level, "trace, debug, info, warn, error, critical, off")
      ->capture_default_str()
      ->check(
          CLI::IsMember(std::vector<std::string>(std::begin(kLogLevels), std::end(kLogLevels))));
  auto* grace =
      app.add_option("--tombstone-grace", grace_s, "Seconds before deleted keys are purged")
          ->capture_default_str()
          ->check(CLI::Range(uint64_t{1}, kMaxTombstoneGraceSeconds));
  bool no_background_repair = false;
  app.add_flag("--no-background-repair", no_background_repair,
               "Turn background anti-entropy off: this node then compares its ranges with their "
               "other replicas only when `shardkv repair` asks. Default: on");
  app.add_option("--repair-period", options.repair_period_ms,
                 "Background anti-entropy compares every range this node drives with its other "
                 "replicas once within this many ms. Default: the tombstone grace / 10, at least "
                 "1000")
      ->check(CLI::Range(kMinRepairPeriodMs, kMaxRepairPeriodMs));
  app.add_option("--repair-rate", options.repair_rate,
                 "Background anti-entropy's throttle: keys a second its hash trees cover, at most")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, kMaxRepairRate));
  app.add_option("--max-key-bytes", options.max_key_bytes,
                 "Largest key this node accepts, in bytes; a longer one is refused with "
                 "'invalid argument'")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, kMaxKeyBytesLimit));
  app.add_option("--max-value-bytes", options.max_value_bytes,
                 "Largest value this node accepts, in bytes; a larger one is refused with "
                 "'invalid argument'. Give every node of a cluster the same limits")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, kMaxValueBytesLimit));
  app.add_option("--auth-secret-file", options.auth_secret_file,
                 "The cluster secret (a file of at least 16 bytes): every connection must "
                 "authenticate with it, or with --client-secret-file");
  app.add_option("--client-secret-file", options.client_secret_file,
                 "A separate secret for clients: data and admin operations, never node-to-node "
                 "ones");
  app.add_flag("--insecure", options.insecure,
               "Allow listening on a non-loopback address without a secret");
  app.add_option("--tls-cert", options.tls_cert_file, "PEM certificate chain of this node (TLS)");
  app.add_option("--tls-key", options.tls_key_file, "PEM private key of --tls-cert");
  app.add_option("--tls-ca", options.tls_ca_file,
                 "PEM CA that signs every node's and client's certificate");
  app.footer(
      "Exit status: 0 after a graceful stop, 1 if the node cannot start or its stop was "
      "forced (a second signal, or still stopping " +
      std::to_string(kGracefulStopSeconds) +
      " s after the first), 2 for a usage error (a bad flag, or a bad key or value in "
      "the --config file), 3 if it refuses to start because its data directory holds no "
      "database of its cluster (start it with --rebuild).\n");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help is an "error" to CLI11 with exit code 0; it prints it itself.
    if (e.get_exit_code() == 0) return app.exit(e);
    const std::string message = e.what();
    *error = OneLine(message.empty() ? e.get_name() : message) + kSeeHelp;
    return 2;
  }
  if (grace->count() > 0) options.tombstone_grace_ms = grace_s * 1000;
  if (no_background_repair) options.background_repair = false;
  return kRunNode;
}

}  // namespace shardkv::node_tool
