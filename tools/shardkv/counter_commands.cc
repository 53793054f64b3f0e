#include "counter_commands.h"

#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>
#include <string>

#include "cli_common.h"
#include "json_writer.h"
#include "kv_commands.h"
#include "kv_io.h"
#include "kv_limits.h"

namespace shardkv::cli {
namespace {

// Adds `delta` to KEY and prints the value after it (exit 0); a refusal (not an integer, an
// overflow) exits 1 with Redis's message, an outcome left unknown says so.
int DoIncr(const GlobalOptions& g, const std::string& key, int64_t delta) {
  if (key.empty()) return ReportError("key is empty", kExitUsage);
  if (key.size() > limits::kMaxKeyBytes) {
    return ReportError("key is " + std::to_string(key.size()) + " bytes; the limit is " +
                           std::to_string(limits::kMaxKeyBytes),
                       kExitUsage);
  }
  auto client = g.Connect();
  if (!client.ok()) return FailMutation(g, key, client.status(), false);
  auto value = (*client)->Incr(key, delta);
  if (!value.ok()) {
    // The node's refusal (the value is not an integer, the result would overflow) is no usage
    // error: the command line was fine, the stored value is why (exit 1, nothing written).
    if (value.status().code() == Status::Code::kInvalidArgument) {
      if (g.json) {
        std::cout << MutationErrorJson(key, MutationOutcome::kNotApplied, value.status())
                  << std::endl;
      }
      return ReportError(value.status(), kExitFailed);
    }
    return FailMutation(g, key, value.status(), true);
  }
  if (g.json) {
    JsonWriter w;
    w.Begin();
    BytesField(w, "key", key);
    w.Field("value", *value).End();
    std::cout << w.str() << "\n";
  } else {
    std::cout << *value << "\n";
  }
  return kExitOk;
}

void AddOne(CLI::App& app, GlobalOptions* g, int* exit_code, bool down) {
  auto* cmd = app.add_subcommand(
      down ? "decr" : "incr",
      std::string(down ? "Subtract DELTA (default 1) from" : "Add DELTA (default 1) to") +
          " the counter KEY and print its value, as redis " + (down ? "DECRBY" : "INCRBY") +
          ". Increments through different nodes at once all count; a missing key counts from "
          "0; a value that is not an integer is refused (exit 1)");
  auto key = std::make_shared<std::string>();
  auto delta = std::make_shared<int64_t>(1);
  cmd->add_option("KEY", *key, "Counter key")->required();
  cmd->add_option("DELTA", *delta, "Amount (a 64-bit integer)");
  cmd->add_flag("--json", g->json, "JSON output: {\"key\",\"value\"}");
  cmd->callback([=] {
    if (down && *delta == std::numeric_limits<int64_t>::min()) {
      *exit_code = ReportError("decrement would overflow", kExitUsage);
      return;
    }
    *exit_code = DoIncr(*g, *key, down ? -*delta : *delta);
  });
}

}  // namespace

void RegisterCounterCommands(CLI::App& app, GlobalOptions* g, int* exit_code) {
  AddOne(app, g, exit_code, false);
  AddOne(app, g, exit_code, true);
}

}  // namespace shardkv::cli
