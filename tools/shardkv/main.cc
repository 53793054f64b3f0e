// shardkv: the command-line tool. main() only builds the CLI11 tree; each command family lives
// in its own file and registers itself (placement_command.cc, later put/get, cluster, ...).
#include <CLI/CLI.hpp>
#include <string>

#include "cli_common.h"
#include "cluster_commands.h"
#include "global_options.h"
#include "huge_page_malloc.h"
#include "kv_commands.h"
#include "membership_commands.h"
#include "orphan_nodes.h"
#include "placement_command.h"
#include "rebalance_commands.h"
#include "repair_command.h"
#include "scan_command.h"
#include "usage_errors.h"

int main(int argc, char** argv) {
  // Before anything else: a put or get of a large value is mostly page faults without it.
  shardkv::process::ReexecWithHugePageMalloc(argv);
  CLI::App app{"shardkv: a sharded key-value store on consistent hashing, and its tools.",
               "shardkv"};
  app.require_subcommand(1);
  app.footer("Run 'shardkv COMMAND --help' for a command's options.");

  int exit_code = shardkv::cli::kExitOk;
  shardkv::cli::GlobalOptions globals;
  globals.Register(app);
  shardkv::cli::RegisterKvCommands(app, &globals, &exit_code);
  shardkv::cli::RegisterScanCommand(app, &globals, &exit_code);
  shardkv::cli::RegisterClusterCommands(app, &globals, &exit_code);
  shardkv::cli::RegisterMembershipCommands(app, &globals, &exit_code);
  shardkv::cli::RegisterForgetNodeCommand(app, &globals, &exit_code);
  shardkv::cli::RegisterRebalanceCommands(app, &globals, &exit_code);
  shardkv::cli::RegisterRepairCommand(app, &globals, &exit_code);
  shardkv::cli::RegisterPlacementCommands(app, &exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" to CLI11 with exit code 0; it prints them itself.
    if (e.get_exit_code() == 0) return app.exit(e);
    return shardkv::cli::ReportError(shardkv::cli::UsageMessage(app, e), shardkv::cli::kExitUsage);
  }
  return exit_code;
}
