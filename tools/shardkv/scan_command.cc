#include "scan_command.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli_common.h"
#include "json_writer.h"
#include "kv_io.h"

namespace shardkv::cli {
namespace {

// Set by SIGINT/SIGTERM: the loop stops between batches and says where to resume. A scan only
// reads, so stopping anywhere is safe; the handler just keeps the output whole.
std::atomic<bool> g_interrupted{false};
extern "C" void OnInterrupt(int) { g_interrupted.store(true); }

struct ScanArgs {
  std::string match;
  uint32_t count = 0;
  std::optional<uint64_t> cursor;  // given: one batch from there
  bool json = false;
};

void PrintKey(const std::string& key, bool json) {
  if (json) {
    JsonWriter w;
    w.Begin();
    BytesField(w, "key", key);
    w.End();
    std::cout << w.str() << "\n";
    return;
  }
  std::cout.write(key.data(), static_cast<std::streamsize>(key.size()));
  std::cout << "\n";
}

// How far through the token space `cursor` is, in percent (jump mode places tokens below
// shards << 32 only).
double Percent(const ClusterMap& map, uint64_t cursor) {
  const double end = map.ring() == nullptr
                         ? static_cast<double>(uint64_t{map.params().shards} << 32)
                         : 18446744073709551616.0;
  return 100.0 * static_cast<double>(cursor) / end;
}

int DoScan(const GlobalOptions& g, const ScanArgs& a) {
  auto client = g.Connect();
  if (!client.ok()) return ReportError(client.status(), ExitCodeFor(client.status()));
  const bool json = a.json || g.json;
  const bool progress = StderrIsTerminal() && !a.cursor;
  uint64_t cursor = a.cursor.value_or(0);
  uint64_t keys = 0;
  uint64_t batches = 0;
  auto last_draw = std::chrono::steady_clock::now();
  struct sigaction sa = {};
  sa.sa_handler = OnInterrupt;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int = {}, old_term = {};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  int rc = kExitOk;
  while (true) {
    auto page = (*client)->Scan(cursor, ScanOptions{a.match, a.count});
    if (!page.ok()) {
      std::cout.flush();
      if (progress) std::fputs("\n", stderr);
      rc = ReportError(
          page.status().message() + " (resume with --cursor " + std::to_string(cursor) + ")",
          ExitCodeFor(page.status()));
      break;
    }
    ++batches;
    for (const auto& k : page->keys) PrintKey(k, json);
    keys += page->keys.size();
    cursor = page->cursor;
    std::cout.flush();
    if (a.cursor || cursor == 0) break;
    if (g_interrupted.load()) {
      if (progress) std::fputs("\n", stderr);
      rc = ReportError("interrupted after " + std::to_string(keys) +
                           " keys; resume with --cursor " + std::to_string(cursor),
                       130);
      break;
    }
    const auto now = std::chrono::steady_clock::now();
    if (progress && now - last_draw >= std::chrono::milliseconds(500)) {
      last_draw = now;
      std::fprintf(stderr, "\rscan: %llu keys, %.1f%% of the token space",
                   static_cast<unsigned long long>(keys), Percent(*(*client)->map(), cursor));
    }
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  if (rc != kExitOk) return rc;
  if (progress && batches > 1) {
    std::fprintf(stderr, "\rscan: %llu keys in %llu batches%20s\n",
                 static_cast<unsigned long long>(keys), static_cast<unsigned long long>(batches),
                 "");
  }
  if (json) {
    // The cursor as a string: JSON readers keep integers above 2^53 as doubles.
    JsonWriter w;
    w.Begin().Field("keys", keys).Field("cursor", std::to_string(cursor)).End();
    std::cout << w.str() << "\n";
  } else if (a.cursor) {
    std::fprintf(stderr, "cursor %llu\n", static_cast<unsigned long long>(cursor));
  }
  std::cout.flush();
  return kExitOk;
}

}  // namespace

void RegisterScanCommand(CLI::App& app, GlobalOptions* g, int* exit_code) {
  auto* scan = app.add_subcommand(
      "scan",
      "Every key of the cluster, one per line, in no particular order (an unordered scan: a key "
      "may come twice around a membership change, never missing). With --cursor, one batch, "
      "and the next cursor on stderr (0: done)");
  auto args = std::make_shared<ScanArgs>();
  scan->add_option("--match", args->match,
                   "Only keys matching this Redis glob (*, ?, [abc], [^a-z], \\ escapes)");
  scan->add_option("--count", args->count,
                   "Entries each batch examines (a hint, as Redis's SCAN COUNT; default 10)")
      ->check(CLI::Range(1u, 100000u));
  scan->add_option_function<uint64_t>(
      "--cursor", [args](uint64_t c) { args->cursor = c; },
      "One batch from this cursor (0: the start) instead of the whole scan");
  scan->add_flag("--json", args->json,
                 "JSON lines: {\"key\"} (or \"key_base64\") per key, then {\"keys\",\"cursor\"}");
  scan->callback([=] { *exit_code = DoScan(*g, *args); });
}

}  // namespace shardkv::cli
