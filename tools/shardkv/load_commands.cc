#include "load_commands.h"

#include <string.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <iostream>
#include <mutex>

#include "change_guard.h"
#include "cli_common.h"
#include "json_writer.h"
#include "kv_limits.h"
#include "progress.h"
#include "workload.h"

namespace shardkv::cli {
namespace {

struct WorkloadFlags {
  uint64_t count = 0;
  std::string prefix = "key:";
  size_t value_size = 100;
  int concurrency = 64;
  uint64_t seed = 1;
  uint64_t max_errors = limits::kDefaultMaxErrors;
};

void AddWorkloadFlags(CLI::App* cmd, WorkloadFlags* f) {
  cmd->add_option("--count", f->count, "Number of keys")
      ->required()
      ->check(CLI::Range(limits::kMinCount, limits::kMaxCount));
  cmd->add_option("--prefix", f->prefix, "Key prefix: keys are <prefix>0 .. <prefix>N-1")
      ->capture_default_str();
  cmd->add_option("--value-size", f->value_size, "Bytes per value")
      ->capture_default_str()
      ->check(CLI::Range(size_t{0}, limits::kMaxValueSize));
  cmd->add_option("--concurrency", f->concurrency,
                  "Requests in flight (times --value-size at most 1 GiB)")
      ->capture_default_str()
      ->check(CLI::Range(limits::kMinConcurrency, limits::kMaxConcurrency));
  cmd->add_option("--seed", f->seed, "Seed of the deterministic values")->capture_default_str();
  cmd->add_option("--max-errors", f->max_errors,
                  "Stop (exit 3; 4 if a failed put may have been applied) after this many "
                  "failed requests; 0 = never stop")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{0}, limits::kMaxMaxErrors));
}

// The flag combinations that cannot work, refused before anything is sent. "" if fine.
std::string CheckWorkloadFlags(const WorkloadFlags& f) {
  if (f.prefix.size() > limits::kMaxPrefixBytes) {
    return "--prefix is " + std::to_string(f.prefix.size()) + " bytes; keys would pass the " +
           std::to_string(limits::kMaxKeyBytes) + "-byte key limit (at most " +
           std::to_string(limits::kMaxPrefixBytes) + ")";
  }
  const uint64_t in_flight = static_cast<uint64_t>(f.concurrency) * f.value_size;
  if (in_flight > limits::kMaxBytesInFlight) {
    return "--concurrency " + std::to_string(f.concurrency) + " x --value-size " +
           std::to_string(f.value_size) + " puts " + std::to_string(in_flight >> 20) +
           " MiB in flight; the limit is " + std::to_string(limits::kMaxBytesInFlight >> 20) +
           " MiB: lower one of them";
  }
  return "";
}

struct RunResult {
  uint64_t issued = 0;  // requests sent (all of them answered by the time Run returns)
  uint64_t errors = 0;
  bool stopped = false;  // --max-errors reached: the rest was never sent
  int interrupted = 0;   // the signal (SIGINT, SIGTERM, SIGHUP) that stopped it early; 0: none
};

// Runs `issue(i, done)` for i in [0, count) with at most `concurrency` in flight; each issue
// must call done(status) exactly once, from any thread. Stops issuing once `max_errors` requests
// failed (0 = never): a dead cluster costs a bounded number of errors, not `count`; and once
// `guard` caught a signal (the requests in flight are still awaited). Draws progress.
template <typename Issue>
RunResult RunBounded(uint64_t count, int concurrency, uint64_t max_errors, ProgressBar* bar,
                     InterruptGuard* guard, Issue issue, std::vector<std::string>* first_errors) {
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
  RunResult result;
  for (uint64_t i = 0; i < count; ++i) {
    {
      std::unique_lock lock(mu);
      while (in_flight >= static_cast<uint64_t>(concurrency)) {
        cv.wait_for(lock, std::chrono::milliseconds(100));
        bar->Update(done, errors);
      }
      if (max_errors != 0 && errors >= max_errors) {
        result.stopped = true;
        break;
      }
      if ((result.interrupted = guard->Interrupted()) != 0) break;
      ++in_flight;
    }
    issue(i, finish);
    ++result.issued;
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
  result.errors = errors;
  return result;
}

// Prints the first errors, then, if the run stopped early, why; returns the exit code
// (`exit_if_stopped` when it stopped early, else `exit_if_failed`).
int ReportErrors(const RunResult& r, const WorkloadFlags& f,
                 const std::vector<std::string>& first_errors, int exit_if_failed,
                 int exit_if_stopped = kExitUnreachable) {
  for (const auto& e : first_errors) std::fprintf(stderr, "error: %s\n", e.c_str());
  if (r.stopped) {
    return ReportError("stopped after " + std::to_string(r.errors) + " failed requests (" +
                           std::to_string(r.issued) + " of " + std::to_string(f.count) +
                           " sent; --max-errors " + std::to_string(f.max_errors) +
                           ", 0 = never stop): is the cluster up?",
                       exit_if_stopped);
  }
  return exit_if_failed;
}

// The signal's name for messages: "SIGINT".
std::string SignalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev != nullptr ? std::string("SIG") + abbrev : "signal " + std::to_string(sig);
}

int DoLoad(const GlobalOptions& g, const WorkloadFlags& f) {
  if (std::string why = CheckWorkloadFlags(f); !why.empty()) return ReportError(why, kExitUsage);
  // Before the client's threads start (InterruptGuard): SIGINT, SIGTERM or SIGHUP stop sending;
  // the result so far is printed, then the command dies of the signal (at the guard's end).
  InterruptGuard guard;
  guard.Busy();
  auto client = g.Connect();
  if (!client.ok()) return Fail(client.status());
  ProgressBar bar("load", f.count, StderrIsTerminal());
  std::vector<std::string> first_errors;
  // Failed puts by outcome: a definite "not applied" and "may have been applied" differ for
  // whoever reruns the load.
  std::atomic<uint64_t> indeterminate{0};
  const RunResult r = RunBounded(
      f.count, f.concurrency, f.max_errors, &bar, &guard,
      [&](uint64_t i, auto finish) {
        std::string key = WorkloadKey(f.prefix, i);
        std::string value = WorkloadValue(f.seed, key, f.value_size);
        (*client)->PutAsync(
            std::move(key), std::move(value), [finish, &indeterminate](StatusOr<uint64_t> res) {
              if (ClassifyMutation(res.status()) == MutationOutcome::kIndeterminate) {
                ++indeterminate;
              }
              finish(res.status());
            });
      },
      &first_errors);
  const double secs = bar.ElapsedSeconds();
  const double rate = secs > 0 ? r.issued / secs : 0;
  const uint64_t written = r.issued - r.errors;
  const uint64_t unknown = indeterminate.load();
  // The load as a whole: applied when every put was; indeterminate when any put's outcome is
  // unknown; else not_applied (some puts were refused or never sent, and no other is in doubt).
  const bool complete = r.errors == 0 && !r.stopped && r.interrupted == 0;
  const MutationOutcome outcome = complete      ? MutationOutcome::kApplied
                                  : unknown > 0 ? MutationOutcome::kIndeterminate
                                                : MutationOutcome::kNotApplied;
  if (g.json) {
    JsonWriter w;
    w.Begin().Field("written", written).Field("errors", r.errors).Field("seconds", secs);
    w.Field("ops_per_s", rate).Field("stopped", r.stopped);
    w.Field("not_applied", r.errors - unknown).Field("indeterminate", unknown);
    w.Field("interrupted", r.interrupted != 0).Field("sent", r.issued).Field("count", f.count);
    w.Field("outcome", MutationOutcomeName(outcome)).End();
    std::cout << w.str() << std::endl;
  } else {
    std::printf("loaded %llu keys (%zu-byte values) in %.2f s: %.0f ops/s, %llu errors\n",
                static_cast<unsigned long long>(written), f.value_size, secs, rate,
                static_cast<unsigned long long>(r.errors));
    std::fflush(stdout);
  }
  if (r.interrupted != 0) {
    // The guard's destructor then ends the command by the signal, as an interrupted one ends.
    std::fprintf(stderr, "interrupted by %s after %llu of %llu keys were sent\n",
                 SignalName(r.interrupted).c_str(), static_cast<unsigned long long>(r.issued),
                 static_cast<unsigned long long>(f.count));
    for (const auto& e : first_errors) std::fprintf(stderr, "error: %s\n", e.c_str());
    return kExitFailed;
  }
  const int exit_if_unknown = unknown > 0 ? kExitIndeterminate : 0;
  return ReportErrors(r, f, first_errors,
                      exit_if_unknown ? exit_if_unknown
                      : r.errors      ? kExitFailed
                                      : kExitOk,
                      exit_if_unknown ? exit_if_unknown : kExitUnreachable);
}

int DoVerify(const GlobalOptions& g, const WorkloadFlags& f) {
  if (std::string why = CheckWorkloadFlags(f); !why.empty()) return ReportError(why, kExitUsage);
  InterruptGuard guard;  // as in DoLoad: a signal stops it early, after the result so far
  guard.Busy();
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
  const RunResult r = RunBounded(
      f.count, f.concurrency, f.max_errors, &bar, &guard,
      [&](uint64_t i, auto finish) {
        std::string key = WorkloadKey(f.prefix, i);
        (*client)->GetAsync(key, [&, key, finish](StatusOr<std::string> res) {
          if (res.ok()) {
            if (*res != WorkloadValue(f.seed, key, f.value_size)) {
              ++mismatched;
              note("mismatched: " + key);
            }
            finish(Status::OK());
          } else if (res.status().IsNotFound()) {
            ++missing;
            note("missing: " + key);
            finish(Status::OK());
          } else {
            finish(res.status());
          }
        });
      },
      &first_errors);
  const uint64_t ok = r.issued - missing - mismatched - r.errors;
  if (g.json) {
    JsonWriter w;
    w.Begin().Field("checked", r.issued).Field("ok", ok).Field("missing", missing.load());
    w.Field("mismatched", mismatched.load()).Field("errors", r.errors);
    w.Field("seconds", bar.ElapsedSeconds()).Field("stopped", r.stopped);
    w.Field("interrupted", r.interrupted != 0).End();
    std::cout << w.str() << std::endl;
  } else {
    std::printf(
        "verified %llu keys in %.2f s: %llu ok, %llu missing, %llu mismatched, %llu errors\n",
        static_cast<unsigned long long>(r.issued), bar.ElapsedSeconds(),
        static_cast<unsigned long long>(ok), static_cast<unsigned long long>(missing),
        static_cast<unsigned long long>(mismatched), static_cast<unsigned long long>(r.errors));
    std::fflush(stdout);
  }
  for (const auto& e : examples) std::fprintf(stderr, "  %s\n", e.c_str());
  if (r.interrupted != 0) {
    std::fprintf(stderr, "interrupted by %s after %llu of %llu keys were checked\n",
                 SignalName(r.interrupted).c_str(), static_cast<unsigned long long>(r.issued),
                 static_cast<unsigned long long>(f.count));
    return kExitFailed;
  }
  return ReportErrors(r, f, first_errors,
                      (missing || mismatched || r.errors) ? kExitFailed : kExitOk);
}

}  // namespace

void RegisterLoadCommands(CLI::App& app, GlobalOptions* g, int* exit_code) {
  auto load_flags = std::make_shared<WorkloadFlags>();
  auto* load = app.add_subcommand("load", "Bulk-write deterministic keys and values");
  AddWorkloadFlags(load, load_flags.get());
  load->add_flag("--json", g->json,
                 "JSON output: written, errors (split into not_applied and indeterminate), "
                 "outcome of the whole load");
  load->callback([=] { *exit_code = DoLoad(*g, *load_flags); });

  auto verify_flags = std::make_shared<WorkloadFlags>();
  auto* verify = app.add_subcommand("verify",
                                    "Read back what 'load' wrote and check every value (exit 1 "
                                    "if any key is missing or different)");
  AddWorkloadFlags(verify, verify_flags.get());
  verify->add_flag("--json", g->json, "JSON output");
  verify->callback([=] { *exit_code = DoVerify(*g, *verify_flags); });
}

}  // namespace shardkv::cli
