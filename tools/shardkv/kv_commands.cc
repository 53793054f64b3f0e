#include "kv_commands.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <mutex>

#include "cli_common.h"
#include "json_writer.h"
#include "progress.h"
#include "workload.h"

namespace shardkv::cli {
namespace {

int Fail(const Status& s) { return ReportError(s, ExitCodeFor(s)); }

struct WorkloadFlags {
  uint64_t count = 0;
  std::string prefix = "key:";
  size_t value_size = 100;
  int concurrency = 64;
  uint64_t seed = 1;
};

void AddWorkloadFlags(CLI::App* cmd, WorkloadFlags* f) {
  cmd->add_option("--count", f->count, "Number of keys")
      ->required()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  cmd->add_option("--prefix", f->prefix, "Key prefix: keys are <prefix>0 .. <prefix>N-1")
      ->capture_default_str();
  cmd->add_option("--value-size", f->value_size, "Bytes per value")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, size_t{16} << 20));
  cmd->add_option("--concurrency", f->concurrency, "Requests in flight")
      ->capture_default_str()
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--seed", f->seed, "Seed of the deterministic values")->capture_default_str();
}

// Runs `issue(i, done)` for i in [0, count) with at most `concurrency` in flight; each issue
// must call done(status) exactly once, from any thread. Draws progress; returns error count.
template <typename Issue>
uint64_t RunBounded(uint64_t count, int concurrency, ProgressBar* bar, Issue issue,
                    std::vector<std::string>* first_errors) {
  std::mutex mu;
  std::condition_variable cv;
  uint64_t in_flight = 0, done = 0, errors = 0;
  auto finish = [&](const Status& s) {
    std::lock_guard lock(mu);
    --in_flight;
    ++done;
    if (!s.ok()) {
      ++errors;
      if (first_errors->size() < 5) first_errors->push_back(s.ToString());
    }
    cv.notify_one();
  };
  for (uint64_t i = 0; i < count; ++i) {
    {
      std::unique_lock lock(mu);
      while (in_flight >= static_cast<uint64_t>(concurrency)) {
        cv.wait_for(lock, std::chrono::milliseconds(100));
        bar->Update(done, errors);
      }
      ++in_flight;
    }
    issue(i, finish);
    if ((i & 255) == 0) {
      std::lock_guard lock(mu);
      bar->Update(done, errors);
    }
  }
  std::unique_lock lock(mu);
  while (in_flight > 0) {
    cv.wait_for(lock, std::chrono::milliseconds(100));
    bar->Update(done, errors);
  }
  bar->Finish(done, errors);
  return errors;
}

int DoPut(const GlobalOptions& g, const std::string& key, std::string value) {
  if (value == "-") {
    value.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  }
  auto client = g.Connect();
  if (!client.ok()) return Fail(client.status());
  auto ts = (*client)->Put(key, value);
  if (!ts.ok()) return Fail(ts.status());
  if (g.json) {
    JsonWriter w;
    w.Begin().Field("key", key).Field("ts", *ts).End();
    std::cout << w.str() << "\n";
  } else {
    std::cout << "OK\n";
  }
  return kExitOk;
}

int DoGet(const GlobalOptions& g, const std::string& key) {
  auto client = g.Connect();
  if (!client.ok()) return Fail(client.status());
  auto value = (*client)->Get(key);
  if (!value.ok()) {
    if (value.status().IsNotFound()) {
      std::fputs("not found\n", stderr);
      return kExitFailed;
    }
    return Fail(value.status());
  }
  if (g.json) {
    JsonWriter w;
    w.Begin().Field("key", key).Field("value", *value).End();
    std::cout << w.str() << "\n";
  } else {
    std::cout << *value << "\n";
  }
  return kExitOk;
}

int DoDel(const GlobalOptions& g, const std::string& key) {
  auto client = g.Connect();
  if (!client.ok()) return Fail(client.status());
  auto ts = (*client)->Delete(key);
  if (!ts.ok()) return Fail(ts.status());
  std::cout << (g.json ? "{\"key\":" + JsonWriter::Quote(key) + ",\"deleted\":true}" : "OK")
            << "\n";
  return kExitOk;
}

int DoLoad(const GlobalOptions& g, const WorkloadFlags& f) {
  auto client = g.Connect();
  if (!client.ok()) return Fail(client.status());
  ProgressBar bar("load", f.count, StderrIsTerminal());
  std::vector<std::string> first_errors;
  const uint64_t errors = RunBounded(
      f.count, f.concurrency, &bar,
      [&](uint64_t i, auto finish) {
        std::string key = WorkloadKey(f.prefix, i);
        std::string value = WorkloadValue(f.seed, key, f.value_size);
        (*client)->PutAsync(std::move(key), std::move(value),
                            [finish](StatusOr<uint64_t> r) { finish(r.status()); });
      },
      &first_errors);
  const double secs = bar.ElapsedSeconds();
  const double rate = secs > 0 ? f.count / secs : 0;
  if (g.json) {
    JsonWriter w;
    w.Begin().Field("written", f.count - errors).Field("errors", errors).Field("seconds", secs);
    w.Field("ops_per_s", rate).End();
    std::cout << w.str() << "\n";
  } else {
    std::printf("loaded %llu keys (%zu-byte values) in %.2f s: %.0f ops/s, %llu errors\n",
                static_cast<unsigned long long>(f.count - errors), f.value_size, secs, rate,
                static_cast<unsigned long long>(errors));
  }
  for (const auto& e : first_errors) std::fprintf(stderr, "error: %s\n", e.c_str());
  return errors ? kExitFailed : kExitOk;
}

int DoVerify(const GlobalOptions& g, const WorkloadFlags& f) {
  auto client = g.Connect();
  if (!client.ok()) return Fail(client.status());
  ProgressBar bar("verify", f.count, StderrIsTerminal());
  std::atomic<uint64_t> missing{0}, mismatched{0};
  std::mutex examples_mu;
  std::vector<std::string> examples;
  std::vector<std::string> first_errors;
  auto note = [&](std::string line) {
    std::lock_guard lock(examples_mu);
    if (examples.size() < 5) examples.push_back(std::move(line));
  };
  const uint64_t errors = RunBounded(
      f.count, f.concurrency, &bar,
      [&](uint64_t i, auto finish) {
        std::string key = WorkloadKey(f.prefix, i);
        (*client)->GetAsync(key, [&, key, finish](StatusOr<std::string> r) {
          if (r.ok()) {
            if (*r != WorkloadValue(f.seed, key, f.value_size)) {
              ++mismatched;
              note("mismatched: " + key);
            }
            finish(Status::OK());
          } else if (r.status().IsNotFound()) {
            ++missing;
            note("missing: " + key);
            finish(Status::OK());
          } else {
            finish(r.status());
          }
        });
      },
      &first_errors);
  const uint64_t ok = f.count - missing - mismatched - errors;
  if (g.json) {
    JsonWriter w;
    w.Begin().Field("checked", f.count).Field("ok", ok).Field("missing", missing.load());
    w.Field("mismatched", mismatched.load()).Field("errors", errors);
    w.Field("seconds", bar.ElapsedSeconds()).End();
    std::cout << w.str() << "\n";
  } else {
    std::printf(
        "verified %llu keys in %.2f s: %llu ok, %llu missing, %llu mismatched, %llu errors\n",
        static_cast<unsigned long long>(f.count), bar.ElapsedSeconds(),
        static_cast<unsigned long long>(ok), static_cast<unsigned long long>(missing),
        static_cast<unsigned long long>(mismatched), static_cast<unsigned long long>(errors));
  }
  for (const auto& e : examples) std::fprintf(stderr, "  %s\n", e.c_str());
  for (const auto& e : first_errors) std::fprintf(stderr, "error: %s\n", e.c_str());
  return (missing || mismatched || errors) ? kExitFailed : kExitOk;
}

int DoStats(const GlobalOptions& g) {
  auto client = g.Connect();
  if (!client.ok()) return Fail(client.status());
  auto map = (*client)->map();
  JsonWriter w;
  w.BeginArray();
  int failures = 0;
  for (const ClusterNode& n : map->nodes()) {
    auto s = (*client)->NodeStats(n.address);
    if (!s.ok()) {
      ++failures;
      if (g.json) {
        w.Begin()
            .Field("id", n.id)
            .Field("address", n.address)
            .Field("error", s.status().message());
        w.End();
      } else {
        std::printf("node %u %s: %s\n", n.id, n.address.c_str(), s.status().message().c_str());
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
  return failures ? kExitUnreachable : kExitOk;
}

}  // namespace

void RegisterKvCommands(CLI::App& app, GlobalOptions* g, int* exit_code) {
  auto* put = app.add_subcommand("put", "Write one key; VALUE '-' (or none) reads stdin");
  auto put_key = std::make_shared<std::string>();
  auto put_value = std::make_shared<std::string>("-");
  put->add_option("KEY", *put_key, "Key")->required();
  put->add_option("VALUE", *put_value, "Value, or - for stdin");
  put->add_flag("--json", g->json, "JSON output");
  put->callback([=] { *exit_code = DoPut(*g, *put_key, *put_value); });

  auto* get = app.add_subcommand("get", "Read one key (exit 1 and 'not found' if absent)");
  auto get_key = std::make_shared<std::string>();
  get->add_option("KEY", *get_key, "Key")->required();
  get->add_flag("--json", g->json, "JSON output");
  get->callback([=] { *exit_code = DoGet(*g, *get_key); });

  auto* del = app.add_subcommand("del", "Delete one key");
  auto del_key = std::make_shared<std::string>();
  del->add_option("KEY", *del_key, "Key")->required();
  del->add_flag("--json", g->json, "JSON output");
  del->callback([=] { *exit_code = DoDel(*g, *del_key); });

  auto load_flags = std::make_shared<WorkloadFlags>();
  auto* load = app.add_subcommand("load", "Bulk-write deterministic keys and values");
  AddWorkloadFlags(load, load_flags.get());
  load->add_flag("--json", g->json, "JSON output");
  load->callback([=] { *exit_code = DoLoad(*g, *load_flags); });

  auto verify_flags = std::make_shared<WorkloadFlags>();
  auto* verify = app.add_subcommand("verify",
                                    "Read back what 'load' wrote and check every value (exit 1 "
                                    "if any key is missing or different)");
  AddWorkloadFlags(verify, verify_flags.get());
  verify->add_flag("--json", g->json, "JSON output");
  verify->callback([=] { *exit_code = DoVerify(*g, *verify_flags); });

  auto* stats = app.add_subcommand("stats", "Per-node counters: ops, errors, keys, latency");
  stats->add_flag("--json", g->json, "JSON output");
  stats->callback([=] { *exit_code = DoStats(*g); });
}

}  // namespace shardkv::cli
