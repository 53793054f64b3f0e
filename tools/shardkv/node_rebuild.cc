// `cluster start-node N --rebuild` (node_rebuild.h).
#include "node_rebuild.h"

#include <signal.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli_common.h"
#include "cluster_probe.h"
#include "cluster_up.h"
#include "local_cluster.h"
#include "rebuild_check.h"

namespace shardkv::cli {

namespace fs = std::filesystem;

namespace {

// The launcher files a start rewrites (LaunchNode, StopNodes, the node itself); a failed rebuild
// puts each back as it was, or removes it if it was not there.
constexpr const char* kRestoredFiles[] = {"args",         "stopped_at", "port",
                                          "metrics_port", "redis_port", "address"};

std::optional<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

// The marker's content: whether a db was set aside ("kept") or there was none ("none").
constexpr const char* kMarkerKept = "kept\n";
constexpr const char* kMarkerNone = "none\n";

// Puts node_dir's data back: the rebuilt (partial) db goes, the kept one returns.
Status RestoreDb(const std::string& node_dir, bool kept) {
  std::error_code ec;
  const std::string db = node_dir + "/db", old = node_dir + "/" + kKeptDbName;
  fs::remove_all(db, ec);
  if (ec) return Status::IOError("cannot remove the partly rebuilt " + db + ": " + ec.message());
  if (kept) {
    fs::rename(old, db, ec);
    if (ec) {
      return Status::IOError("cannot move " + old + " back to " + db + ": " + ec.message() +
                             " (the node's old data is in " + old + ")");
    }
  }
  return Status::OK();
}

std::string PortTakenWhy(uint16_t port) {
  return "port " + std::to_string(port) + " is taken by " + DescribePortHolder(port) +
         "; stop that process (another cluster's nodes stop with 'shardkv cluster down --dir "
         "THEIR_DIR') and run the command again";
}

}  // namespace

std::optional<std::string> FinishInterruptedRebuild(const std::string& dir, uint32_t id) {
  const std::string node_dir = NodeDir(dir, id);
  const std::string marker = node_dir + "/" + kRebuildMarkerName;
  const std::optional<std::string> content = ReadWhole(marker);
  if (!content) return std::nullopt;
  const std::string old = node_dir + "/" + kKeptDbName;
  std::string line;
  if (ReadPortFile(node_dir)) {
    // It served: the rebuild completed, the command that started it died before tidying up.
    std::error_code ec;
    fs::remove_all(old, ec);
    if (ec) return "cannot remove " + old + ": " + ec.message();
    line = "node " + std::to_string(id) +
           ": an interrupted rebuild had completed; its old data is removed";
  } else if (Exists(old) || *content == kMarkerNone) {
    if (Status s = RestoreDb(node_dir, Exists(old)); !s.ok()) return s.message();
    line = "node " + std::to_string(id) +
           ": an interrupted rebuild had not completed; its data is back as it was";
  } else {
    // Set aside was never reached: the db is the original.
    line = "node " + std::to_string(id) + ": an interrupted rebuild had not started; nothing lost";
  }
  if (auto args = ReadArgsFile(node_dir); args.ok()) {
    (void)WriteArgsFile(node_dir, WithoutRebuildFlags(std::move(args).value()));
  }
  RemoveFile(marker);
  return line;
}

int RebuildNode(const std::string& dir, uint32_t id, const ClusterConf& conf,
                std::vector<std::string> args, const std::string& binary, uint32_t wait_s,
                std::chrono::milliseconds probe_timeout, InterruptGuard* guard) {
  const std::string node_dir = NodeDir(dir, id);
  const std::string node = "node " + std::to_string(id);
  auto refuse = [&](const std::string& why, int code) {
    return ReportError("cannot rebuild " + node + ": " + why + "; nothing was changed", code);
  };
  const std::string db = node_dir + "/db", old = node_dir + "/" + kKeptDbName;
  // Every check before anything is touched.
  if (Exists(old)) {
    return refuse(old + " exists (not left by a rebuild of this launcher): move it away first",
                  kExitUsage);
  }
  const std::optional<uint16_t> listen = ListenPortInArgs(args);
  if (listen && *listen != 0 && !PortFree(*listen))
    return refuse(PortTakenWhy(*listen), kExitUsage);
  if (!conf.formed || conf.cluster_id == 0) {
    return refuse(
        "the cluster in " + dir + " was never formed, so there is nothing to rebuild from",
        kExitUsage);
  }
  Progress("checking that " + node + " can be rebuilt (asking the other nodes)");
  NodeProber prober;
  RebuildSource source;
  std::vector<std::string> others;
  for (const auto& [other, address] : LocalNodeAddresses(dir, {id})) others.push_back(address);
  const RebuildVerdict verdict = CheckRebuild(conf.cluster_id, id, listen.value_or(0), others,
                                              &prober, probe_timeout, &source);
  if (verdict.block != RebuildBlock::kNone) {
    return refuse(verdict.why, RebuildExitCode(verdict.block));
  }
  if (!listen || *listen == 0) {
    // Never pinned (a launch killed before it learned the port): the map says where it belongs.
    args = WithListenPort(std::move(args), source.port);
    if (!PortFree(source.port)) return refuse(PortTakenWhy(source.port), kExitUsage);
  }
  std::string seeds;
  for (const std::string& s : source.seeds) seeds += (seeds.empty() ? "" : ",") + s;

  // Set the data aside; remember the launcher files to put them back exactly.
  std::vector<std::pair<std::string, std::optional<std::string>>> saved;
  for (const char* name : kRestoredFiles)
    saved.emplace_back(name, ReadWhole(node_dir + "/" + name));
  const bool kept = Exists(db);
  // The port file goes first: once the marker exists, a port file means the rebuild completed.
  RemoveFile(node_dir + "/port");
  if (Status s =
          WriteTextFile(node_dir + "/" + kRebuildMarkerName, kept ? kMarkerKept : kMarkerNone);
      !s.ok()) {
    return ReportError(s, kExitFailed);
  }
  if (kept) {
    std::error_code ec;
    fs::rename(db, old, ec);
    if (ec) {
      RemoveFile(node_dir + "/" + kRebuildMarkerName);
      return refuse("cannot move " + db + " aside: " + ec.message(), kExitFailed);
    }
  }
  // Set by this thread once the node runs, read by the guard's thread on a signal.
  std::atomic<pid_t> launched{0};
  // Stops the node and puts everything back. Runs on failure, or on a signal (then from the
  // guard's thread; the process exits right after).
  auto undo = [&]() -> Status {
    // A signal between the spawn and `launched` being set: the pid file already names it.
    const pid_t pid = launched != 0 ? launched.load() : RunningNodePid(node_dir).value_or(0);
    if (pid != 0) {
      auto out =
          StopNodes(dir, {{id, pid}}, SIGTERM, DeadlineIn(10), true, std::chrono::seconds(5));
      if (!out.front().stopped) {
        return Status::Aborted(node + " (pid " + std::to_string(pid) +
                               ") does not exit, so its old data stays in " + old +
                               ": stop it, then run 'shardkv cluster start-node " +
                               std::to_string(id) + "' to put the data back");
      }
    }
    SHARDKV_RETURN_IF_ERROR(RestoreDb(node_dir, kept));
    for (const auto& [name, content] : saved) {
      const std::string path = node_dir + "/" + name;
      if (content) {
        (void)WriteTextFile(path, *content);
      } else {
        RemoveFile(path);
      }
    }
    RemoveFile(node_dir + "/" + kRebuildMarkerName);
    return Status::OK();
  };
  Status undone;
  guard->Arm([&] { undone = undo(); });
  std::vector<std::string> launch = args;
  launch.insert(launch.end(), {"--rebuild", "--seeds", seeds});
  // It listens only once its ranges are back.
  wait_s = std::max<uint32_t>(wait_s, 600);
  std::printf(
      "rebuilding %s: its data is set aside in %s until the rebuild completes; "
      "re-streaming its ranges from %s\n",
      node.c_str(), kept ? old.c_str() : "(no data)", seeds.c_str());
  std::fflush(stdout);
  auto pid = LaunchNode(binary, dir, id, launch);
  Status s = pid.status();
  std::vector<uint16_t> ports;
  uint32_t exited_id = 0;
  if (pid.ok()) {
    launched = *pid;
    Progress("waiting for " + node + " to rebuild and listen (up to " + std::to_string(wait_s) +
             " s)");
    s = WaitListening(
        dir, {{id, *pid}}, DeadlineIn(wait_s), &prober, [](size_t, size_t) {}, &ports, &exited_id);
  }
  if (!s.ok()) {
    ReportError(s.WithContext("rebuilding " + node), kExitFailed);
    for (const auto& line : TailLines(node_dir + "/node.log", 5)) {
      std::fprintf(stderr, "  | %s\n", line.c_str());
    }
    guard->UndoNow();
    if (!undone.ok()) return ReportError(undone, kExitFailed);
    std::fprintf(stderr, "%s is back as it was before the rebuild (its data in %s)\n", node.c_str(),
                 db.c_str());
    return kExitFailed;
  }
  // Done: from here a signal must not undo it.
  guard->Busy();
  (void)WriteArgsFile(node_dir, WithListenPort(args, ports[0]));
  std::error_code ec;
  fs::remove_all(old, ec);
  RemoveFile(node_dir + "/" + kRebuildMarkerName);
  if (ec)
    std::fprintf(stderr, "warning: cannot remove %s: %s\n", old.c_str(), ec.message().c_str());
  std::printf("%s rebuilt and up at 127.0.0.1:%u (pid %d); its old data is removed\n", node.c_str(),
              static_cast<unsigned>(ports[0]), static_cast<int>(launched.load()));
  guard->Disarm();
  return kExitOk;
}

}  // namespace shardkv::cli
