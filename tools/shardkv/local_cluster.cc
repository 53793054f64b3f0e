// The processes of a local cluster (local_cluster.h); the directory's files are in
// cluster_dir.cc.
#include "local_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "cli_common.h"
#include "cluster_dir.h"

namespace shardkv::cli {

namespace fs = std::filesystem;

namespace {

bool IsExecutable(const std::string& path) {
  std::error_code ec;
  return !path.empty() && fs::is_regular_file(path, ec) && access(path.c_str(), X_OK) == 0;
}

// The process's command line from /proc, NUL-separated arguments. nullopt if unreadable.
std::optional<std::vector<std::string>> ProcCmdline(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<std::string> args;
  std::string arg;
  while (std::getline(in, arg, '\0')) args.push_back(arg);
  return args;
}

}  // namespace

// ---- Processes ----

StatusOr<std::string> FindNodeBinary() {
  std::vector<std::string> tried;
  if (const char* env = std::getenv("SHARDKV_NODE_BIN"); env && *env) {
    // An explicit choice is never silently replaced by another binary.
    if (IsExecutable(env)) return std::string(env);
    return Status::NotFound(std::string("SHARDKV_NODE_BIN=") + env + " is not an executable file");
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path here = self.parent_path();
    for (const fs::path& p :
         {here / "shardkv-node", here / ".." / "shardkv-node" / "shardkv-node"}) {
      const std::string candidate = p.lexically_normal().string();
      if (IsExecutable(candidate)) return candidate;
      tried.push_back(candidate);
    }
  }
  if (const char* path = std::getenv("PATH"); path && *path) {
    std::stringstream dirs(path);
    std::string d;
    while (std::getline(dirs, d, ':')) {
      if (d.empty()) continue;
      const std::string candidate = d + "/shardkv-node";
      if (IsExecutable(candidate)) return candidate;
    }
    tried.push_back("$PATH");
  }
  std::string list;
  for (const auto& t : tried) list += (list.empty() ? "" : ", ") + t;
  return Status::NotFound("cannot find the shardkv-node binary (tried " + list +
                          "); set SHARDKV_NODE_BIN to its path");
}

namespace {

// Exit statuses of the children ProcessAlive reaped (this invocation's nodes), by pid.
std::map<pid_t, int>& ReapedStatuses() {
  static std::map<pid_t, int> statuses;
  return statuses;
}

}  // namespace

std::optional<int> ExitStatusOf(pid_t pid) {
  auto it = ReapedStatuses().find(pid);
  if (it == ReapedStatuses().end() || !WIFEXITED(it->second)) return std::nullopt;
  return WEXITSTATUS(it->second);
}

bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  int status = 0;
  // Our own child (a node started by this invocation) that exited: reap it, it is dead.
  if (waitpid(pid, &status, WNOHANG) == pid) {
    ReapedStatuses()[pid] = status;
    return false;
  }
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return true;  // no /proc: trust kill()
  // The state follows the parenthesised command name, which may itself contain ") ".
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos || paren + 2 >= stat.size()) return true;
  const char state = stat[paren + 2];
  return state != 'Z' && state != 'X';
}

std::optional<pid_t> RunningNodePid(const std::string& node_dir) {
  auto pid = ReadPidFile(node_dir);
  if (!pid || !ProcessAlive(*pid)) return std::nullopt;
  auto cmdline = ProcCmdline(*pid);
  if (!cmdline) return pid;  // no /proc to check against: trust the pid file
  // The node is started with "--data <node_dir>"; anything else holding the pid is a stranger.
  // Compared as files, so another spelling of the same directory still matches.
  for (size_t i = 0; i + 1 < cmdline->size(); ++i) {
    std::error_code ec;
    if ((*cmdline)[i] == "--data" && fs::equivalent((*cmdline)[i + 1], node_dir, ec)) return pid;
  }
  return std::nullopt;
}

StatusOr<pid_t> SpawnDetached(const std::string& binary, const std::vector<std::string>& args,
                              const std::string& log_path, const std::string& cwd) {
  // Everything the child needs is prepared before fork(): between fork and exec a child of a
  // multi-threaded process may only make async-signal-safe calls (no malloc, no locks).
  std::vector<std::string> storage;
  storage.push_back(binary);
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) return Status::IOError("cannot open " + log_path + ": " + std::strerror(errno));
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    close(log_fd);
    return Status::IOError(std::string("cannot open /dev/null: ") + std::strerror(errno));
  }
  // The child reports a failed exec through this pipe; a successful exec closes it (CLOEXEC).
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    close(log_fd);
    close(null_fd);
    return Status::IOError(std::string("pipe: ") + std::strerror(errno));
  }
  const pid_t pid = fork();
  if (pid == 0) {
    setsid();  // own session and process group: no terminal, no ^C from the user's shell
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    sigaction(SIGPIPE, &dfl, nullptr);  // ignored dispositions survive exec; reset them
    dup2(null_fd, STDIN_FILENO);
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
    // Close every other inherited descriptor except the report pipe (which exec closes).
    if (pipe_fds[1] > 3) close_range(3, pipe_fds[1] - 1, 0);
    close_range(pipe_fds[1] + 1, ~0U, 0);
    int err = 0;
    if (chdir(cwd.c_str()) != 0) {
      err = errno;
    } else {
      execv(argv[0], argv.data());
      err = errno;
    }
    ssize_t ignored = write(pipe_fds[1], &err, sizeof(err));
    (void)ignored;
    _exit(127);
  }
  const int fork_errno = errno;
  close(pipe_fds[1]);
  close(log_fd);
  close(null_fd);
  if (pid < 0) {
    close(pipe_fds[0]);
    return Status::IOError(std::string("fork: ") + std::strerror(fork_errno));
  }
  int child_err = 0;
  ssize_t n;
  do {
    n = read(pipe_fds[0], &child_err, sizeof(child_err));
  } while (n < 0 && errno == EINTR);
  close(pipe_fds[0]);
  if (n == static_cast<ssize_t>(sizeof(child_err))) {
    int status = 0;
    waitpid(pid, &status, 0);
    return Status::IOError("cannot run " + binary + ": " + std::strerror(child_err));
  }
  return pid;
}

StatusOr<pid_t> LaunchNode(const std::string& binary, const std::string& dir, uint32_t id,
                           const std::vector<std::string>& args) {
  const std::string node_dir = NodeDir(dir, id);
  std::error_code ec;
  fs::create_directories(node_dir, ec);
  if (ec) return Status::IOError("cannot create " + node_dir + ": " + ec.message());
  // A stale port file would make the wait below see the previous run as listening.
  RemoveFile(node_dir + "/port");
  RemoveFile(node_dir + "/metrics_port");
  Status s = WriteArgsFile(node_dir, args);
  if (!s.ok()) return s;
  {
    // A marker in the appended log, so each run's lines are easy to find.
    std::ofstream log(node_dir + "/node.log", std::ios::app);
    const std::time_t now = std::time(nullptr);
    char when[32];
    std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", std::localtime(&now));
    log << "=== " << when << " started by shardkv cluster ===\n";
  }
  auto pid = SpawnDetached(binary, args, node_dir + "/node.log", dir);
  if (!pid.ok()) return pid.status();
  s = WriteTextFile(node_dir + "/pid", std::to_string(*pid) + "\n");
  if (!s.ok()) {
    kill(*pid, SIGKILL);  // untracked, it could never be stopped by the launcher
    return s;
  }
  RemoveFile(node_dir + "/stopped_at");
  return pid;
}

bool PortFree(uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

std::vector<std::string> TailLines(const std::string& path, size_t max_lines) {
  std::ifstream in(path);
  std::deque<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > max_lines) lines.pop_front();
  }
  return {lines.begin(), lines.end()};
}

int64_t UnixNow() { return static_cast<int64_t>(std::time(nullptr)); }

bool PollUntil(SteadyClock::time_point deadline, const std::function<bool()>& done,
               std::chrono::milliseconds interval) {
  for (;;) {
    if (done()) return true;
    const auto now = SteadyClock::now();
    if (now >= deadline) return false;
    std::this_thread::sleep_for(std::min<SteadyClock::duration>(interval, deadline - now));
  }
}

// ---- Talking to nodes ----

NodeProber::NodeProber(const Credentials& credentials) {
  AdminOptions o;
  credentials.ApplyTo(&o);
  auto admin = Admin::Create(o);
  // Fails if a TLS file cannot be used (or the secret file, checked when the flags were parsed,
  // vanished since).
  if (!admin.ok()) std::exit(ReportError(admin.status(), kExitUsage));
  admin_ = std::move(admin).value();
}

namespace {

AdminCallOptions WithTimeout(std::chrono::milliseconds timeout) {
  AdminCallOptions call;
  call.timeout_ms = static_cast<uint32_t>(std::max<int64_t>(1, timeout.count()));
  return call;
}

}  // namespace

void NodeProber::SetTimeout(std::chrono::milliseconds timeout) { timeout_ = timeout; }

Status NodeProber::Ping(const std::string& address, std::chrono::milliseconds timeout) {
  return admin_->Ping(address, WithTimeout(timeout));
}

NodeProbe NodeProber::Probe(const std::string& address) {
  return admin_->Probe(address, WithTimeout(timeout_));
}

namespace {

// A node launched with --metrics-listen listens for metrics too once it writes metrics_port
// (before its port file); one launched without it never writes one.
bool MetricsPending(const std::string& node_dir) {
  auto args = ReadArgsFile(node_dir);
  if (!args.ok()) return false;
  bool wanted = false;
  for (const std::string& a : *args) wanted = wanted || a == "--metrics-listen";
  if (!wanted) return false;
  std::ifstream in(node_dir + "/metrics_port");
  int port = 0;
  return !(in >> port) || port <= 0 || port > 65535;
}

}  // namespace

std::vector<PendingNode> RunningNodes(const std::string& dir) {
  std::vector<PendingNode> running;
  for (uint32_t id : ListNodeIds(dir)) {
    if (auto pid = RunningNodePid(NodeDir(dir, id))) running.push_back({id, *pid});
  }
  return running;
}

Status WaitListening(const std::string& dir, const std::vector<PendingNode>& nodes,
                     SteadyClock::time_point deadline, NodeProber* prober,
                     const std::function<void(size_t, size_t)>& progress,
                     std::vector<uint16_t>* ports, uint32_t* exited_id) {
  ports->assign(nodes.size(), 0);
  *exited_id = 0;
  std::vector<bool> ready(nodes.size(), false);
  size_t ready_count = 0, reported = 0;
  Status failure;
  const bool all = PollUntil(deadline, [&] {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (ready[i]) continue;
      const std::string node_dir = NodeDir(dir, nodes[i].id);
      if (!ProcessAlive(nodes[i].pid)) {
        std::string msg = "node " + std::to_string(nodes[i].id) + " (pid " +
                          std::to_string(nodes[i].pid) + ") exited during startup; see " +
                          node_dir + "/node.log";
        failure = Status::Unavailable(msg);
        *exited_id = nodes[i].id;
        return true;
      }
      auto port = ReadPortFile(node_dir);
      if (!port || MetricsPending(node_dir)) continue;
      // The node writes its port file only once it listens; the ping proves it serves.
      if (!prober->Ping("127.0.0.1:" + std::to_string(*port), std::chrono::milliseconds(500))
               .ok()) {
        continue;
      }
      ready[i] = true;
      (*ports)[i] = *port;
      ++ready_count;
    }
    if (ready_count != reported) {
      reported = ready_count;
      progress(ready_count, nodes.size());
    }
    return ready_count == nodes.size();
  });
  if (!failure.ok()) return failure;
  if (all) return Status::OK();
  std::string missing;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!ready[i]) missing += (missing.empty() ? "" : ", ") + std::to_string(nodes[i].id);
  }
  return Status::Timeout("timed out waiting for node(s) " + missing +
                         " to listen; see their node.log in " + dir);
}

std::vector<StopOutcome> StopNodes(const std::string& dir, const std::vector<PendingNode>& nodes,
                                   int sig, SteadyClock::time_point deadline,
                                   bool kill_after_deadline, std::chrono::milliseconds kill_grace) {
  std::vector<StopOutcome> out;
  for (const auto& n : nodes) {
    out.push_back({n.id, n.pid, false, sig == SIGKILL});
    kill(n.pid, sig);
  }
  auto all_gone = [&] {
    bool all = true;
    for (auto& o : out) {
      if (!o.stopped && !ProcessAlive(o.pid)) o.stopped = true;
      all = all && o.stopped;
    }
    return all;
  };
  if (!PollUntil(deadline, all_gone) && kill_after_deadline && sig != SIGKILL) {
    for (auto& o : out) {
      if (o.stopped) continue;
      o.needed_kill = true;
      kill(o.pid, SIGKILL);
    }
    PollUntil(SteadyClock::now() + kill_grace, all_gone);
  }
  const std::string now = std::to_string(UnixNow()) + "\n";
  for (const auto& o : out) {
    if (!o.stopped) continue;
    const std::string node_dir = NodeDir(dir, o.id);
    RemoveFile(node_dir + "/pid");
    (void)WriteTextFile(node_dir + "/stopped_at",
                        now);  // best effort: only the grace check reads it
  }
  return out;
}

// ---- Locking ----

StatusOr<std::unique_ptr<DirLock>> DirLock::Acquire(const std::string& dir) {
  const std::string path = dir + "/.launcher.lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::IOError("cannot open " + path + ": " + std::strerror(errno));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return Status::FailedPrecondition("another 'shardkv cluster' command is working on " + dir);
  }
  return std::unique_ptr<DirLock>(new DirLock(fd));
}

DirLock::~DirLock() { close(fd_); }

}  // namespace shardkv::cli
