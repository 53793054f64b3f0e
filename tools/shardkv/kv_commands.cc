#include "kv_commands.h"

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <optional>

#include "cli_common.h"
#include "counter_commands.h"
#include "hash_commands.h"
#include "json_writer.h"
#include "kv_io.h"
#include "kv_limits.h"
#include "load_commands.h"
#include "ttl_commands.h"

namespace shardkv::cli {
namespace {

// `put` without --ttl (so that --ttl 0 is refused, as redis refuses SET ... EX 0).
constexpr int64_t kNoTtl = INT64_MIN;

}  // namespace

int FailMutation(const GlobalOptions& g, std::string_view key, const Status& error, bool sent) {
  const MutationOutcome outcome = sent ? ClassifyMutation(error) : MutationOutcome::kNotApplied;
  if (g.json) std::cout << MutationErrorJson(key, outcome, error) << std::endl;
  return ReportError(error, sent ? MutationExitCode(error) : ExitCodeFor(error));
}

namespace {

int DoPut(const GlobalOptions& g, const std::string& key, std::string value, int64_t ttl_s) {
  if (std::string why = CheckKey(key); !why.empty()) return ReportError(why, kExitUsage);
  PutOptions put_options;
  if (ttl_s != kNoTtl) {
    if (std::string why = CheckTtlSeconds(ttl_s); !why.empty()) {
      return ReportError(why, kExitUsage);
    }
    put_options.ttl = std::chrono::seconds(ttl_s);
  }
  if (value == "-") {
    // Bounded: a huge stdin is refused after limit + 1 bytes, before any network.
    auto read = ReadValueBounded(STDIN_FILENO, limits::kMaxValueBytes);
    if (!read.ok()) return Fail(read.status());
    value = std::move(read).value();
  } else if (std::string why = ValueTooLarge(value.size(), limits::kMaxValueBytes); !why.empty()) {
    return ReportError(why, kExitUsage);
  }
  auto client = g.Connect();
  if (!client.ok()) return FailMutation(g, key, client.status(), false);
  auto ts = (*client)->Put(key, value, put_options);
  if (!ts.ok()) return FailMutation(g, key, ts.status(), true);
  if (g.json) {
    JsonWriter w;
    w.Begin();
    BytesField(w, "key", key);
    w.Field("ts", *ts).Field("outcome", MutationOutcomeName(MutationOutcome::kApplied)).End();
    std::cout << w.str() << "\n";
  } else {
    std::cout << "OK\n";
  }
  return kExitOk;
}

int DoGet(const GlobalOptions& g, const std::string& key, bool raw) {
  if (std::string why = CheckKey(key); !why.empty()) return ReportError(why, kExitUsage);
  auto client = g.Connect();
  if (!client.ok()) return Fail(client.status());
  auto value = (*client)->Get(key);
  if (!value.ok() && !value.status().IsNotFound()) return Fail(value.status());
  if (g.json) {
    JsonWriter w;
    w.Begin();
    BytesField(w, "key", key);
    w.Field("found", value.ok());
    if (value.ok()) BytesField(w, "value", *value);
    w.End();
    std::cout << w.str() << "\n";
    return value.ok() ? kExitOk : kExitFailed;
  }
  if (!value.ok()) {
    std::fputs("not found\n", stderr);
    return kExitFailed;
  }
  // The exact bytes, unless a person reads them on a terminal: then a newline keeps the prompt
  // off the value's last line.
  std::cout.write(value->data(), static_cast<std::streamsize>(value->size()));
  if (!raw && isatty(STDOUT_FILENO) == 1) std::cout << "\n";
  std::cout.flush();
  return kExitOk;
}

// A delete writes a tombstone whether or not the key exists, so "existed" comes from a read at
// the same consistency just before: honest in the common case, not atomic (a write between
// the two is not seen), and unknown (null) when the read failed but the delete succeeded.
int DoDel(const GlobalOptions& g, const std::string& key) {
  if (std::string why = CheckKey(key); !why.empty()) return ReportError(why, kExitUsage);
  auto client = g.Connect();
  if (!client.ok()) return FailMutation(g, key, client.status(), false);
  auto before = (*client)->Get(key);
  std::optional<bool> existed;
  if (before.ok()) existed = true;
  if (before.status().IsNotFound()) existed = false;
  auto ts = (*client)->Delete(key);
  if (!ts.ok()) return FailMutation(g, key, ts.status(), true);
  if (g.json) {
    JsonWriter w;
    w.Begin();
    BytesField(w, "key", key);
    w.Key("existed");
    if (existed) {
      w.Value(*existed);
    } else {
      w.Raw("null");
    }
    w.Field("ts", *ts).Field("outcome", MutationOutcomeName(MutationOutcome::kApplied)).End();
    std::cout << w.str() << "\n";
  } else if (!existed) {
    std::cout << "OK (whether the key existed is unknown: " << before.status().message() << ")\n";
  } else {
    std::cout << (*existed ? "OK\n" : "OK (the key did not exist)\n");
  }
  return kExitOk;
}

// Every node's counters. A node that does not answer is listed with its error and the rest is
// still printed: exit 0 unless no node answered.
int DoStats(const GlobalOptions& g) {
  auto client = g.Connect();
  if (!client.ok()) return Fail(client.status());
  auto map = (*client)->map();
  JsonWriter w;
  w.BeginArray();
  size_t failures = 0;
  std::string last_error;
  for (const ClusterNode& n : map->nodes()) {
    auto s = (*client)->NodeStats(n.address);
    if (!s.ok()) {
      ++failures;
      last_error = s.status().message();
      if (g.json) {
        w.Begin().Field("id", n.id).Field("address", n.address).Field("error", last_error);
        w.End();
      } else {
        std::printf("node %u %s: NO ANSWER: %s\n", n.id, n.address.c_str(), last_error.c_str());
      }
      continue;
    }
    if (g.json) {
      w.Begin().Field("id", n.id).Field("address", n.address);
      for (const auto& [k, v] : s->counters) w.Field(k, v);
      for (const auto& [k, v] : s->gauges) w.Field(k, v);
      w.End();
      continue;
    }
    std::printf("node %u %s\n", n.id, n.address.c_str());
    for (const auto& [k, v] : s->counters) {
      std::printf("  %-20s %lld\n", k.c_str(), static_cast<long long>(v));
    }
    for (const auto& [k, v] : s->gauges) std::printf("  %-20s %.1f\n", k.c_str(), v);
  }
  w.EndArray();
  if (g.json) std::cout << w.str() << "\n";
  std::cout.flush();
  std::fflush(stdout);
  if (failures == map->nodes().size()) {
    return ReportError("no node answered (" + last_error + ")", kExitUnreachable);
  }
  if (failures > 0) {
    std::fprintf(stderr, "warning: %zu of %zu nodes did not answer\n", failures,
                 map->nodes().size());
  }
  return kExitOk;
}

}  // namespace

void RegisterKvCommands(CLI::App& app, GlobalOptions* g, int* exit_code) {
  auto* put = app.add_subcommand(
      "put", "Write one key; VALUE '-' (or none) reads stdin. Values up to 16 MiB");
  auto put_key = std::make_shared<std::string>();
  auto put_value = std::make_shared<std::string>("-");
  put->add_option("KEY", *put_key, "Key (1 byte to 64 KiB)")->required();
  put->add_option("VALUE", *put_value, "Value, or - for stdin");
  put->add_flag("--json", g->json, "JSON output: {\"key\",\"ts\",\"outcome\"} (on error too)");
  auto put_ttl = std::make_shared<int64_t>(kNoTtl);
  put->add_option("--ttl", *put_ttl,
                  "Expire the key SECONDS after the write (> 0); without it a put clears any TTL");
  put->callback([=] { *exit_code = DoPut(*g, *put_key, *put_value, *put_ttl); });

  auto* get = app.add_subcommand(
      "get",
      "Read one key (exit 1 and 'not found' if absent). Prints the value's exact bytes; on a "
      "terminal a newline follows unless --raw");
  auto get_key = std::make_shared<std::string>();
  auto get_raw = std::make_shared<bool>(false);
  get->add_option("KEY", *get_key, "Key")->required();
  get->add_flag("--json", g->json,
                "JSON output: {\"key\",\"found\",\"value\"}; bytes that are not UTF-8 come as "
                "\"key_base64\" / \"value_base64\"");
  get->add_flag("--raw", *get_raw, "No newline after the value, even on a terminal");
  get->callback([=] { *exit_code = DoGet(*g, *get_key, *get_raw); });

  auto* del = app.add_subcommand(
      "del", "Delete one key (exit 0 whether or not it existed; the output says which)");
  auto del_key = std::make_shared<std::string>();
  del->add_option("KEY", *del_key, "Key")->required();
  del->add_flag("--json", g->json, "JSON output: {\"key\",\"existed\",\"ts\",\"outcome\"}");
  del->callback([=] { *exit_code = DoDel(*g, *del_key); });

  RegisterLoadCommands(app, g, exit_code);
  RegisterTtlCommands(app, g, exit_code);
  RegisterCounterCommands(app, g, exit_code);
  RegisterHashCommands(app, g, exit_code);
  RegisterSetCommands(app, g, exit_code);

  auto* stats = app.add_subcommand(
      "stats",
      "Per-node counters: ops, errors, keys, latency. A node that does not answer is listed "
      "with its error (exit 3 only if none answers)");
  stats->add_flag("--json", g->json, "JSON output (a silent node has an \"error\" field)");
  stats->callback([=] { *exit_code = DoStats(*g); });
}

}  // namespace shardkv::cli
