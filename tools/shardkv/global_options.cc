#include "global_options.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include "cli_common.h"
#include "cli_profile.h"
#include "kv_io.h"
#include "kv_limits.h"
#include "local_cluster.h"
#include "shardkv/secret_file.h"

namespace shardkv::cli {

namespace fs = std::filesystem;

void GlobalOptions::Register(CLI::App& app) {
  app.fallthrough();
  cluster_opt_ =
      app.add_option("--cluster", cluster, "Node addresses (host:port), comma separated")
          ->delimiter(',')
          // One argument per --cluster: otherwise the list swallows the command's own arguments
          // (`put --cluster A k v` would read k and v as addresses).
          ->allow_extra_args(false)
          ->check(CLI::Validator(
              [](std::string& address) {
                const std::string why = CheckHostPort(address);
                return why;
              },
              ""))
          ->type_name("HOST:PORT");
  cluster_id_opt_ =
      app.add_option("--cluster-id", cluster_id,
                     "The id of the cluster to talk to (see 'cluster status'); a node of another "
                     "cluster is refused. Default: the id in DIR/cluster.conf, or with --cluster "
                     "the id of the first node that answers")
          ->check(CLI::Range(limits::kMinClusterId, std::numeric_limits<uint64_t>::max()));
  dir_opt_ = app.add_option(
      "--dir", dir, "Local cluster directory (default: $SHARDKV_DIR, else ~/.shardkv/local)");
  timeout_opt_ = app.add_option("--timeout", timeout_ms,
                                "Per-operation timeout in milliseconds, retries included")
                     ->capture_default_str()
                     ->check(CLI::Range(limits::kMinTimeoutMs, limits::kMaxTimeoutMs));
  consistency_opt_ = app.add_option("--consistency", consistency, "one, quorum or all")
                         ->capture_default_str()
                         ->check(CLI::IsMember({"one", "quorum", "all"}));
  // Loaded here so that a bad file is a usage error before anything runs, and a world-readable
  // one is warned about once.
  app.add_option("--auth-secret-file", credentials.auth_secret_file,
                 "The cluster's secret (or its client secret): a file of at least 16 bytes")
      ->envname("SHARDKV_AUTH_SECRET_FILE")
      ->type_name("FILE")
      ->check(CLI::Validator(
          [](std::string& path) {
            auto loaded = LoadSecretFile(path, "--auth-secret-file");
            if (!loaded.ok()) return loaded.status().message();
            if (!loaded->warning.empty()) std::cerr << "warning: " << loaded->warning << "\n";
            return std::string();
          },
          ""));
  app.add_option("--tls-ca", credentials.tls_ca_file,
                 "TLS: the CA certificate (PEM) that signed the nodes' certificates; with "
                 "--tls-cert and --tls-key")
      ->envname("SHARDKV_TLS_CA")
      ->type_name("FILE");
  app.add_option("--tls-cert", credentials.tls_cert_file,
                 "TLS: this client's certificate (PEM), signed by the CA (nodes require one)")
      ->envname("SHARDKV_TLS_CERT")
      ->type_name("FILE");
  app.add_option("--tls-key", credentials.tls_key_file, "TLS: the private key of --tls-cert")
      ->envname("SHARDKV_TLS_KEY")
      ->type_name("FILE");
  app.add_option("--profile", profile,
                 "CLI profile (TOML) with defaults for --cluster, --cluster-id, the secret file, "
                 "--timeout and --consistency (default: $XDG_CONFIG_HOME/shardkv/cli.toml, else "
                 "~/.config/shardkv/cli.toml, if it exists)")
      ->type_name("FILE");
  // Before any command's callback: the commands see the options with the profile applied.
  app.parse_complete_callback([this] {
    if (Status s = ApplyProfile(); !s.ok()) throw CLI::ValidationError(s.message());
  });
}

bool GlobalOptions::ClusterGiven() const {
  return cluster_opt_ != nullptr && cluster_opt_->count() > 0;
}

Status GlobalOptions::ApplyProfile() {
  auto loaded = LoadProfile(profile);
  if (!loaded.ok()) return loaded.status();
  const CliProfile& p = *loaded;
  profile_used = p.path;
  auto given = [](const CLI::Option* o) { return o != nullptr && o->count() > 0; };
  const char* env_dir = std::getenv("SHARDKV_DIR");
  const bool local_dir = given(dir_opt_) || (env_dir != nullptr && *env_dir != '\0');
  if (!p.cluster.empty() && !given(cluster_opt_) && !local_dir) cluster = p.cluster;
  if (p.cluster_id != 0 && !given(cluster_id_opt_)) cluster_id = p.cluster_id;
  if (p.timeout_ms && !given(timeout_opt_)) timeout_ms = *p.timeout_ms;
  if (p.consistency && !given(consistency_opt_)) consistency = *p.consistency;
  // CLI11 already read the environment into any of these the command line did not give.
  auto fill = [](std::string* value, const std::string& from_profile) {
    if (value->empty()) *value = from_profile;
  };
  fill(&credentials.auth_secret_file, p.credentials.auth_secret_file);
  fill(&credentials.tls_ca_file, p.credentials.tls_ca_file);
  fill(&credentials.tls_cert_file, p.credentials.tls_cert_file);
  fill(&credentials.tls_key_file, p.credentials.tls_key_file);
  const int tls_given = !credentials.tls_ca_file.empty() + !credentials.tls_cert_file.empty() +
                        !credentials.tls_key_file.empty();
  if (tls_given != 0 && tls_given != 3) {
    return Status::InvalidArgument(
        "--tls-ca, --tls-cert and --tls-key go together (from the command line, "
        "$SHARDKV_TLS_CA/CERT/KEY or the profile): give all three or none");
  }
  return Status::OK();
}

std::string GlobalOptions::ClusterDir() const {
  if (!dir.empty()) return dir;
  if (const char* env = std::getenv("SHARDKV_DIR"); env && *env) return env;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.shardkv/local";
}

StatusOr<std::vector<std::string>> GlobalOptions::Seeds() const {
  if (!cluster.empty()) return cluster;
  const std::string d = ClusterDir();
  std::vector<std::string> seeds;
  std::error_code ec;
  // A local cluster keeps each node in <dir>/node-<id>/, whose `port` file the node writes.
  for (const auto& entry : fs::directory_iterator(d, ec)) {
    if (!entry.is_directory() || entry.path().filename().string().rfind("node-", 0) != 0) {
      continue;
    }
    // A node removed from the cluster (`cluster remove-node`) is no seed any more.
    if (fs::exists(entry.path() / "removed", ec)) continue;
    std::ifstream in(entry.path() / "port");
    int port = 0;
    if (in >> port && port > 0) seeds.push_back("127.0.0.1:" + std::to_string(port));
  }
  if (seeds.empty()) {
    return Status::Unavailable("no --cluster given and no running cluster found in " + d +
                               " (start one with 'shardkv cluster up')");
  }
  std::sort(seeds.begin(), seeds.end());
  return seeds;
}

StatusOr<GlobalOptions::ExpectedCluster> GlobalOptions::Expected() const {
  if (cluster_id != 0) return ExpectedCluster{cluster_id, "the --cluster-id given"};
  if (!cluster.empty()) return ExpectedCluster{};
  const std::string d = ClusterDir();
  auto conf = ReadClusterConf(d);
  if (!conf.ok()) {
    // No cluster.conf (a directory made by hand, or by an older version): nothing to check.
    if (conf.status().IsNotFound()) return ExpectedCluster{};
    return conf.status();
  }
  if (conf->cluster_id == 0) return ExpectedCluster{};
  return ExpectedCluster{conf->cluster_id, "the cluster in " + d};
}

StatusOr<std::unique_ptr<Client>> GlobalOptions::Connect() const {
  auto seeds = Seeds();
  if (!seeds.ok()) return seeds.status();
  auto expected = Expected();
  if (!expected.ok()) return expected.status();
  ClientOptions o;
  o.seeds = std::move(seeds).value();
  o.cluster_id = expected->id;
  o.cluster_id_source = expected->source;
  o.timeout_ms = timeout_ms;
  credentials.ApplyTo(&o);
  auto c = ParseConsistency(consistency);
  if (!c.ok()) return c.status();
  o.consistency = *c;
  return Client::Connect(std::move(o));
}

std::optional<int> ReasonExitCode(Status::Reason reason) {
  switch (reason) {
    case Status::Reason::kNone:
    case Status::Reason::kCount:
      return std::nullopt;
    case Status::Reason::kOutcomeUnknown:
    case Status::Reason::kLostInFlight:
    case Status::Reason::kQuorumMissed:
      return kExitIndeterminate;
    // Not applied because the cluster, or this side of it, could not take it now: unreachable
    // or no majority (docs/cli.md "Exit codes": 3), a request dropped unrun, a leader change.
    case Status::Reason::kNotApplied:
    case Status::Reason::kNoMajority:
    case Status::Reason::kUnformed:
    case Status::Reason::kStarting:
    case Status::Reason::kLate:
    case Status::Reason::kWrongCluster:
    case Status::Reason::kNotLeader:
    case Status::Reason::kClockRejected:
    case Status::Reason::kUnreachable:
      return kExitUnreachable;
    // Refused by the cluster: nothing changed, and asking again changes nothing.
    case Status::Reason::kSuperseded:
    case Status::Reason::kRefusedByPolicy:
    case Status::Reason::kUnexpectedEpoch:
    case Status::Reason::kNeedsRebuild:
    case Status::Reason::kWrongType:
      return kExitFailed;
  }
  return std::nullopt;
}

int Fail(const Status& status) { return ReportError(status, ExitCodeFor(status)); }

int ExitCodeFor(const Status& status) {
  if (status.ok()) return kExitOk;
  if (auto by_reason = ReasonExitCode(status.reason())) return *by_reason;
  switch (status.code()) {
    case Status::Code::kOk:
      return kExitOk;
    case Status::Code::kInvalidArgument:
      return kExitUsage;
    case Status::Code::kUnavailable:
    case Status::Code::kTimeout:
    case Status::Code::kUnauthenticated:
      return kExitUnreachable;
    default:
      return kExitFailed;
  }
}

int MutationExitCode(const Status& status) {
  switch (ClassifyMutation(status)) {
    case MutationOutcome::kApplied:
      return kExitOk;
    case MutationOutcome::kIndeterminate:
      return kExitIndeterminate;
    case MutationOutcome::kNotApplied:
      break;
  }
  return ExitCodeFor(status);
}

bool NoMajority(const Status& status) { return status.Is(Status::Reason::kNoMajority); }

}  // namespace shardkv::cli
