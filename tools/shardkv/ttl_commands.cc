#include "ttl_commands.h"

#include <chrono>
#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>

#include "cli_common.h"
#include "json_writer.h"
#include "kv_commands.h"
#include "kv_io.h"
#include "kv_limits.h"

namespace shardkv::cli {
namespace {

// Expiry times are signed 64-bit milliseconds (as in Redis).
constexpr int64_t kMaxTtlSeconds = INT64_MAX / 1000 / 2;

// `shardkv ttl`: seconds left (rounded as redis TTL rounds), -1 with no expiry, -2 missing.
int DoTtl(const GlobalOptions& g, const std::string& key) {
  if (std::string why = CheckKey(key); !why.empty()) return ReportError(why, kExitUsage);
  auto client = g.Connect();
  if (!client.ok()) return Fail(client.status());
  auto ttl = (*client)->Ttl(key);
  if (!ttl.ok() && !ttl.status().IsNotFound()) return Fail(ttl.status());
  int64_t seconds = -2, ms = -2;
  if (ttl.ok()) {
    ms = ttl->has_value() ? (*ttl)->count() : -1;
    seconds = ttl->has_value() ? (ms + 500) / 1000 : -1;
  }
  if (g.json) {
    JsonWriter w;
    w.Begin();
    BytesField(w, "key", key);
    w.Field("found", ttl.ok()).Field("ttl_s", seconds).Field("ttl_ms", ms).End();
    std::cout << w.str() << "\n";
  } else {
    std::cout << seconds << "\n";
  }
  return ttl.ok() ? kExitOk : kExitFailed;
}

// `shardkv expire` (seconds >= 1 sets a TTL, <= 0 deletes, as redis EXPIRE) and `persist`.
int DoExpire(const GlobalOptions& g, const std::string& key, std::optional<int64_t> seconds) {
  if (std::string why = CheckKey(key); !why.empty()) return ReportError(why, kExitUsage);
  if (seconds && *seconds > kMaxTtlSeconds) {
    return ReportError("invalid expire time: " + std::to_string(*seconds) + " seconds is too large",
                       kExitUsage);
  }
  auto client = g.Connect();
  if (!client.ok()) return FailMutation(g, key, client.status(), false);
  auto ts =
      seconds ? (*client)->Expire(key, std::chrono::seconds(*seconds)) : (*client)->Persist(key);
  if (!ts.ok() && !ts.status().IsNotFound()) return FailMutation(g, key, ts.status(), true);
  if (g.json) {
    JsonWriter w;
    w.Begin();
    BytesField(w, "key", key);
    w.Field("found", ts.ok());
    if (ts.ok()) w.Field("ts", *ts);
    // A missing key is a refusal: nothing was written (exit 1).
    w.Field("outcome", MutationOutcomeName(ts.ok() ? MutationOutcome::kApplied
                                                   : MutationOutcome::kNotApplied));
    w.End();
    std::cout << w.str() << "\n";
  } else if (ts.ok()) {
    std::cout << "OK\n";
  } else {
    std::cerr << "not found\n";
  }
  return ts.ok() ? kExitOk : kExitFailed;
}

}  // namespace

std::string CheckTtlSeconds(int64_t seconds) {
  if (seconds <= 0) return "invalid expire time: --ttl must be > 0 seconds";
  if (seconds > kMaxTtlSeconds) {
    return "invalid expire time: --ttl " + std::to_string(seconds) + " is too large";
  }
  return "";
}

void RegisterTtlCommands(CLI::App& app, GlobalOptions* g, int* exit_code) {
  auto* ttl = app.add_subcommand(
      "ttl",
      "Seconds until KEY expires (like redis TTL): -1 if it has no expiry, -2 (exit 1) if it "
      "is missing");
  auto ttl_key = std::make_shared<std::string>();
  ttl->add_option("KEY", *ttl_key, "Key")->required();
  ttl->add_flag("--json", g->json, "JSON output: {\"key\",\"found\",\"ttl_s\",\"ttl_ms\"}");
  ttl->callback([=] { *exit_code = DoTtl(*g, *ttl_key); });

  auto* expire = app.add_subcommand(
      "expire",
      "Expire KEY in SECONDS (<= 0 deletes it), without changing its value; exit 1 if the key "
      "is missing. Not atomic with a concurrent write elsewhere (read, then write)");
  auto expire_key = std::make_shared<std::string>();
  auto expire_s = std::make_shared<int64_t>(0);
  expire->add_option("KEY", *expire_key, "Key")->required();
  expire->add_option("SECONDS", *expire_s, "Seconds from now")->required();
  expire->add_flag("--json", g->json, "JSON output: {\"key\",\"found\",\"ts\",\"outcome\"}");
  expire->callback([=] { *exit_code = DoExpire(*g, *expire_key, *expire_s); });

  auto* persist = app.add_subcommand(
      "persist", "Remove KEY's expiry, keeping its value; exit 1 if the key is missing");
  auto persist_key = std::make_shared<std::string>();
  persist->add_option("KEY", *persist_key, "Key")->required();
  persist->add_flag("--json", g->json, "JSON output: {\"key\",\"found\",\"ts\",\"outcome\"}");
  persist->callback([=] { *exit_code = DoExpire(*g, *persist_key, std::nullopt); });
}

}  // namespace shardkv::cli
