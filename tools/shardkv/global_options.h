// The flags every cluster-facing command shares (design.md "CLI"): where the cluster is (and
// which cluster it must be), the output format, the per-operation timeout and the consistency
// level.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "credentials.h"
#include "shardkv/client.h"
#include "shardkv/mutation_outcome.h"
#include "shardkv/options.h"
#include "shardkv/status.h"

namespace shardkv::cli {

struct GlobalOptions {
  std::vector<std::string> cluster;  // --cluster host:port[,...]
  std::string dir;                   // --dir, else $SHARDKV_DIR, else ~/.shardkv/local
  bool json = false;
  uint32_t timeout_ms = 5000;
  std::string consistency = "quorum";
  uint64_t cluster_id = 0;  // --cluster-id; 0 = not given
  // The secret and TLS files for every Client/Admin: from the flags, else the environment, else
  // the profile.
  Credentials credentials;
  std::string profile;       // --profile FILE; "" = the default path (cli_profile.h)
  std::string profile_used;  // the profile file applied ("" if none)

  // The cluster the client must talk to: --cluster-id, else (without --cluster) the id in the
  // cluster directory's cluster.conf, else 0 (adopt the first that answers). `source` says
  // where the id came from, for the wrong-cluster error.
  struct ExpectedCluster {
    uint64_t id = 0;
    std::string source;
  };
  StatusOr<ExpectedCluster> Expected() const;

  // Adds the flags to `app`; subcommands see them through fallthrough. Once the command line is
  // parsed, and before any command runs, the profile fills what neither the command line nor the
  // environment gave (a bad profile is a usage error, exit 2).
  void Register(CLI::App& app);
  // Applies the profile (cli_profile.h) to the options not given on the command line or in the
  // environment. The profile's cluster applies only when no --dir and no $SHARDKV_DIR name a
  // local cluster either.
  Status ApplyProfile();
  // --cluster was given on the command line (not just by the profile).
  bool ClusterGiven() const;
  // The cluster directory after defaults.
  std::string ClusterDir() const;
  // Seeds: --cluster, else the ports of the nodes recorded in the cluster directory.
  StatusOr<std::vector<std::string>> Seeds() const;
  // Connects a client with these options.
  StatusOr<std::unique_ptr<Client>> Connect() const;

 private:
  CLI::Option* cluster_opt_ = nullptr;
  CLI::Option* cluster_id_opt_ = nullptr;
  CLI::Option* dir_opt_ = nullptr;
  CLI::Option* timeout_opt_ = nullptr;
  CLI::Option* consistency_opt_ = nullptr;
};

// The exit code an error with `reason` has, whatever its code (docs/design.md "Error reasons"):
// 4 outcome unknown, 3 not applied for now (unreachable, no majority, ...), 1 refused; nullopt
// for kNone (the code decides). Every reason but kNone has one.
std::optional<int> ReasonExitCode(Status::Reason reason);
// Maps a failed Status to the CLI's exit codes: by its reason (ReasonExitCode), else by its code:
// 1 not found / failed, 2 bad input, 3 cluster unreachable (a node of another cluster answering
// at its address included: Client reports that as Unavailable).
int ExitCodeFor(const Status& status);
// Reports a failed `status` (ReportError) and returns its exit code (ExitCodeFor).
int Fail(const Status& status);
// The exit code of a mutation (put, del, expire, a cluster change) that returned `status`: 0
// applied, 4 indeterminate, else ExitCodeFor (1 refused, 2 bad input, 3 unreachable, no quorum
// or no majority).
int MutationExitCode(const Status& status);
// True for the refusal of a side that cannot reach a majority of the voters (reason
// kNoMajority): exit 3, like an unreachable cluster, though a node answered.
bool NoMajority(const Status& status);

}  // namespace shardkv::cli
