#include "multihost/scenario.h"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "shardkv/admin.h"

namespace shardkv::multihost {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

std::chrono::milliseconds Scale(std::chrono::milliseconds short_length) {
  const char* long_runs = std::getenv("SHARDKV_LONG");
  return long_runs != nullptr && std::string(long_runs) == "1" ? short_length * 4 : short_length;
}

// SHARDKV_BED_SEED=N adds N to every workload's seed, so that a scenario can be repeated with
// other key and operation sequences (the closing notes' per-seed tables); unset: 0.
namespace {
uint64_t SeedOffset() {
  const char* offset = std::getenv("SHARDKV_BED_SEED");
  return offset == nullptr ? 0 : std::strtoull(offset, nullptr, 10);
}
}  // namespace

StatusOr<std::unique_ptr<Scenario>> Scenario::Create(const std::string& name, int hosts,
                                                     const std::vector<std::string>& node_args) {
  auto dir = std::make_unique<testing::TempDir>();
  BedOptions options;
  options.hosts = hosts;
  options.node_args = node_args;
  options.dir = dir->path();
  options.node_path = SHARDKV_NODE_PATH;
  options.cli_path = SHARDKV_CLI_PATH;
  // One secret per run, for the nodes, the CLI (SHARDKV_AUTH_SECRET_FILE) and the workloads.
  options.secret_file = dir->Sub("secret");
  {
    std::ofstream secret(options.secret_file);
    secret << "shardkv-bed-secret-" << getpid() << "-0123456789abcdef\n";
  }
  // SHARDKV_BED_NODE_ARGS="--log-level debug ...": extra flags of every node, for a run whose
  // anomaly needs more of the nodes' logs (split at spaces).
  if (const char* extra = std::getenv("SHARDKV_BED_NODE_ARGS"); extra != nullptr) {
    std::istringstream words(extra);
    for (std::string w; words >> w;) options.node_args.push_back(w);
  }
  fs::permissions(options.secret_file, fs::perms::owner_read | fs::perms::owner_write);
  setenv("SHARDKV_AUTH_SECRET_FILE", options.secret_file.c_str(), 1);
  auto bed = Bed::Create(options);
  if (!bed.ok()) return bed.status();
  std::printf(
      "%s: bed %s, %d hosts, run dir %s; latency nemesis: delaying TCP proxy (no "
      "sch_netem in this kernel)\n",
      name.c_str(), (*bed)->tag().c_str(), hosts, dir->path().c_str());
  std::printf("%s: nodes get %s\n", name.c_str(),
              (*bed)->node_has_secret_flag() ? "--auth-secret-file (one secret per run)"
              : (*bed)->node_has_insecure()  ? "--insecure (no --auth-secret-file flag)"
                                             : "neither --auth-secret-file nor --insecure");
  auto scenario = std::unique_ptr<Scenario>(new Scenario(name, std::move(dir), std::move(*bed)));
  scenario->secret_file_ = options.secret_file;
  return scenario;
}

Scenario::Scenario(std::string name, std::unique_ptr<testing::TempDir> dir,
                   std::unique_ptr<Bed> bed)
    : name_(std::move(name)),
      dir_(std::move(dir)),
      bed_(std::move(bed)),
      nemesis_(bed_.get()),
      start_(Clock::now()) {}

Scenario::~Scenario() {
  processes_.clear();
  samplers_.clear();  // SIGKILLs workloads still running
  bed_->Cleanup();
}

Status Scenario::StartNodes(int n, const std::vector<int>& skews_ms) {
  for (int h = 1; h <= n; ++h) {
    const int skew = static_cast<size_t>(h - 1) < skews_ms.size() ? skews_ms[h - 1] : 0;
    SHARDKV_RETURN_IF_ERROR(bed_->StartNode(h, skew));
  }
  return Status::OK();
}

Status Scenario::Form(int n, int replicas, const std::string& mode) {
  std::vector<int> hosts;
  for (int h = 1; h <= n; ++h) hosts.push_back(h);
  std::string list;
  for (const std::string& a : bed_->Addresses(hosts)) list += (list.empty() ? "" : ",") + a;
  // The subcommand list of `shardkv cluster --help` ("  init   Form a new cluster ...").
  const Command help = RunCommand({bed_->cli_path(), "cluster", "--help"}, 10s);
  Command c;
  if (help.out.find("\n  init ") != std::string::npos) {
    std::printf("%s: forming with `shardkv cluster init`\n", name_.c_str());
    std::vector<std::string> args = {
        bed_->cli_path(), "cluster", "init", list, "--replicas", std::to_string(replicas), "--yes"};
    if (!mode.empty()) args.insert(args.end(), {"--mode", mode});
    c = RunCommand(args, 60s);
  } else {
    std::printf(
        "%s: forming with the workload's `form` (Admin::FormCluster): this CLI has no "
        "`cluster init`\n",
        name_.c_str());
    c = RunCommand({SHARDKV_WORKLOAD_PATH, "form", list, "--replicas", std::to_string(replicas),
                    "--auth-secret-file", secret_file_},
                   60s);
  }
  if (c.exit_code != 0) return Status::Unavailable("forming failed: " + c.out);
  formed_ = n;
  return Status::OK();
}

Command Scenario::Cli(int from, const std::vector<int>& seed_hosts, std::vector<std::string> args) {
  args.push_back("--yes");
  Command c = bed_->Cli(from, bed_->Addresses(seed_hosts), args);
  std::string text;
  for (const std::string& a : args) text += " " + a;
  std::printf("%s: shardkv%s -> exit %d\n", name_.c_str(), text.c_str(), c.exit_code);
  return c;
}

Status Scenario::Load(int count, int bytes) {
  Command c = RunCommand(
      {SHARDKV_WORKLOAD_PATH, "load", "--seeds", bed_->AllAddresses(), "--count",
       std::to_string(count), "--bytes", std::to_string(bytes), "--auth-secret-file", secret_file_},
      120s);
  if (c.exit_code != 0) return Status::Unavailable("load failed: " + c.out);
  return Status::OK();
}

void Scenario::StartWorkload(const WorkloadSpec& spec) {
  const std::string history =
      dir_->Sub("history-" + spec.prefix + "-" + std::to_string(histories_.size()) + ".txt");
  std::vector<int> seeds = spec.seed_hosts.empty() ? Members() : spec.seed_hosts;
  std::string seed_list;
  for (const std::string& a : bed_->Addresses(seeds))
    seed_list += (seed_list.empty() ? "" : ",") + a;
  std::string reads;
  for (const std::string& p : spec.read_prefixes) reads += (reads.empty() ? "" : ",") + p;
  std::vector<std::string> argv{SHARDKV_WORKLOAD_PATH,
                                "run",
                                "--seeds",
                                seed_list,
                                "--prefix",
                                spec.prefix,
                                "--writers",
                                std::to_string(spec.writers),
                                "--readers",
                                std::to_string(spec.readers),
                                "--duration-ms",
                                std::to_string(spec.duration.count()),
                                "--seed",
                                std::to_string(spec.seed + SeedOffset()),
                                "--history",
                                history};
  if (!reads.empty()) argv.insert(argv.end(), {"--read-prefixes", reads});
  if (spec.fresh_clients) argv.push_back("--fresh-clients");
  argv.insert(argv.end(),
              {"--keys", std::to_string(spec.keys), "--timeout-ms",
               std::to_string(spec.timeout.count()), "--auth-secret-file", secret_file_});
  processes_.push_back(std::make_unique<testing::BackgroundProcess>(
      bed_->InNamespace(spec.host, argv), history + ".log"));
  histories_.push_back(history);
}

void Scenario::StartCounters(int clients, int counters, std::chrono::milliseconds duration) {
  const std::string tally = dir_->Sub("counters-" + std::to_string(tallies_.size()) + ".txt");
  std::string seed_list;
  for (const std::string& a : bed_->Addresses(Members()))
    seed_list += (seed_list.empty() ? "" : ",") + a;
  std::vector<std::string> argv{SHARDKV_WORKLOAD_PATH,
                                "count",
                                "--seeds",
                                seed_list,
                                "--clients",
                                std::to_string(clients),
                                "--counters",
                                std::to_string(counters),
                                "--duration-ms",
                                std::to_string(duration.count()),
                                "--seed",
                                std::to_string(1 + SeedOffset()),
                                "--out",
                                tally,
                                "--auth-secret-file",
                                secret_file_};
  processes_.push_back(
      std::make_unique<testing::BackgroundProcess>(bed_->InNamespace(0, argv), tally + ".log"));
  tallies_.push_back(tally);
}

std::vector<std::string> Scenario::CheckCounters() {
  std::vector<std::string> violations;
  struct Bounds {
    int64_t acked = 0, failed_inc = 0, failed_dec = 0, ops = 0;
  };
  std::map<std::string, Bounds> expected;
  for (const std::string& path : tallies_) {
    std::ifstream in(path);
    std::string key;
    Bounds b;
    int lines = 0;
    while (lines < 100000 && in >> key >> b.acked >> b.failed_inc >> b.failed_dec >> b.ops) {
      Bounds& e = expected[key];
      e.acked += b.acked;
      e.failed_inc += b.failed_inc;
      e.failed_dec += b.failed_dec;
      e.ops += b.ops;
      ++lines;
    }
    if (lines == 0) violations.push_back("no counter tally in " + path);
  }
  ClientOptions options;
  options.seeds = bed_->Addresses(Members());
  options.timeout_ms = 5000;
  options.auth_secret_file = secret_file_;
  auto client = Client::Connect(options);
  if (!client.ok()) {
    violations.push_back("counter check: " + client.status().ToString());
    return violations;
  }
  // Every acknowledged HSET's field is read back from its hash (at consistency all).
  std::map<std::string, std::vector<std::string>> fields;
  for (const std::string& path : tallies_) {
    std::ifstream in(path + ".fields");
    std::string key, field;
    for (int n = 0; n < 10000000 && in >> key >> field; ++n) fields[key].push_back(field);
  }
  for (const auto& [key, names] : fields) {
    StatusOr<std::map<std::string, std::string>> hash = Status::Unavailable("not read");
    for (int round = 0; round < 2; ++round) hash = (*client)->HGetAll(key, Consistency::kAll);
    size_t missing = 0;
    for (const std::string& name : names) {
      if (!hash.ok() || hash->count(name) == 0) ++missing;
    }
    std::printf("%s: hash %s: %zu acknowledged fields, %zu read back, %zu missing%s\n",
                name_.c_str(), key.c_str(), names.size(), hash.ok() ? hash->size() : 0, missing,
                hash.ok() ? "" : (" (" + hash.status().ToString() + ")").c_str());
    if (missing != 0) {
      violations.push_back(key + ": " + std::to_string(missing) +
                           " acknowledged HSET fields are missing");
    }
  }
  // Every member an acknowledged SADD added and no acknowledged SREM saw is in its set; none an
  // acknowledged SREM saw is.
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> members;
  for (const std::string& path : tallies_) {
    std::ifstream in(path + ".members");
    std::string key, member, state;
    for (int n = 0; n < 10000000 && in >> key >> member >> state; ++n) {
      members[key].emplace_back(member, state);
    }
  }
  for (const auto& [key, list] : members) {
    StatusOr<std::vector<std::string>> set = Status::Unavailable("not read");
    for (int round = 0; round < 2; ++round) set = (*client)->SMembers(key, Consistency::kAll);
    size_t missing = 0, resurrected = 0, present = 0, absent = 0;
    for (const auto& [member, state] : list) {
      const bool in = set.ok() && std::binary_search(set->begin(), set->end(), member);
      if (state == "present") {
        ++present;
        if (!in) ++missing;
      } else if (state == "absent") {
        ++absent;
        if (in) ++resurrected;
      }
    }
    std::printf(
        "%s: set %s: %zu acknowledged members, %zu acknowledged removes, %zu read back, "
        "%zu missing, %zu removed ones present%s\n",
        name_.c_str(), key.c_str(), present, absent, set.ok() ? set->size() : 0, missing,
        resurrected, set.ok() ? "" : (" (" + set.status().ToString() + ")").c_str());
    if (missing != 0 || resurrected != 0 || !set.ok()) {
      violations.push_back(key + ": " + std::to_string(missing) +
                           " acknowledged SADD members missing, " + std::to_string(resurrected) +
                           " acknowledged SREMs undone" + (set.ok() ? "" : ", read failed"));
    }
  }
  for (const auto& [key, b] : expected) {
    StatusOr<std::string> value = Status::Unavailable("not read");
    for (int round = 0; round < 2; ++round) value = (*client)->Get(key, Consistency::kAll);
    const int64_t low = b.acked - b.failed_dec;
    const int64_t high = b.acked + b.failed_inc;
    std::printf("%s: counter %s: ops %" PRId64 ", acked sum %" PRId64 ", failed +1 %" PRId64
                ", failed -1 %" PRId64 ", read %s\n",
                name_.c_str(), key.c_str(), b.ops, b.acked, b.failed_inc, b.failed_dec,
                value.ok() ? value->c_str() : value.status().ToString().c_str());
    if (!value.ok()) {
      // A counter that never got an acknowledged change may read as missing.
      if (!(value.status().IsNotFound() && low <= 0 && 0 <= high)) {
        violations.push_back(key + ": final read failed: " + value.status().ToString());
      }
      continue;
    }
    const int64_t v = std::strtoll(value->c_str(), nullptr, 10);
    if (v < low || v > high) {
      violations.push_back(key + " reads " + *value + ", outside [" + std::to_string(low) + ", " +
                           std::to_string(high) + "] (acknowledged increments lost or invented)");
    }
  }
  return violations;
}

void Scenario::StartSamplers(std::chrono::milliseconds duration, std::vector<int> hosts) {
  if (hosts.empty()) {
    for (int h = 1; h <= bed_->hosts(); ++h) hosts.push_back(h);
  }
  for (int h : hosts) {
    const std::string out =
        dir_->Sub("samples-" + std::to_string(h) + "-" + std::to_string(samples_.size()) + ".txt");
    samplers_.push_back(std::make_unique<testing::BackgroundProcess>(
        bed_->InNamespace(h, {SHARDKV_WORKLOAD_PATH, "sample", "--node", bed_->Address(h), "--id",
                              std::to_string(h), "--out", out, "--auth-secret-file", secret_file_,
                              "--duration-ms", std::to_string(duration.count())}),
        out + ".log"));
    samples_.push_back(out);
  }
}

bool Scenario::WaitForOps(uint64_t ops, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    uint64_t lines = 0;
    for (const std::string& path : histories_) {
      std::ifstream in(path);
      lines += static_cast<uint64_t>(
          std::count(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>(), '\n'));
    }
    if (lines >= ops) return true;
    std::this_thread::sleep_for(100ms);  // polling interval, bounded by the deadline
  }
  return false;
}

void Scenario::WaitAll(std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  for (auto& p : processes_) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    p->Wait(std::max(left, 0ms));
  }
  processes_.clear();
}

std::vector<int> Scenario::Members() const {
  std::vector<int> out;
  for (int h = 1; h <= bed_->hosts(); ++h) {
    if (bed_->NodeRunning(h)) out.push_back(h);
  }
  return out;
}

Status Scenario::WaitChangeEnded(std::chrono::milliseconds limit) {
  AdminOptions options;
  options.seeds = bed_->Addresses(Members());
  options.timeout_ms = 2000;
  options.auth_secret_file = secret_file_;
  auto admin = Admin::Create(options);
  if (!admin.ok()) return admin.status();
  const auto deadline = Clock::now() + limit;
  std::string last;
  while (Clock::now() < deadline) {
    AdminReply r = (*admin)->ChangeStatus();
    if (r.status.ok() && (!r.report.has_change || ChangeEnded(r.report))) return Status::OK();
    last = r.status.ok() ? "still running" : r.status.ToString();
    std::this_thread::sleep_for(200ms);  // polling interval, bounded by the deadline
  }
  return Status::Timeout("the change did not end within " + std::to_string(limit.count()) +
                         " ms: " + last);
}

Status Scenario::Settle(std::chrono::milliseconds limit) {
  const auto t0 = Clock::now();
  const auto deadline = t0 + limit;
  AdminOptions options;
  options.seeds = bed_->Addresses(Members());
  options.timeout_ms = 2000;
  options.auth_secret_file = secret_file_;
  auto admin = Admin::Create(options);
  if (!admin.ok()) return admin.status();
  std::string last;
  while (Clock::now() < deadline) {
    // Every running node that the newest map lists: one epoch, one map, no change pending.
    std::set<std::pair<uint64_t, uint64_t>> maps;
    bool pending = false, all = true;
    for (int h : Members()) {
      StatusOr<ClusterMap> map = (*admin)->MapOf(bed_->Address(h));
      if (!map.ok()) {
        all = false;
        last = "node " + std::to_string(h) + ": " + map.status().ToString();
        break;
      }
      if (map->FindNodeByAddress(bed_->Address(h)) == nullptr) continue;  // removed
      maps.insert({map->epoch(), map->ContentHash()});
      pending = pending || map->has_pending();
    }
    if (all && maps.size() == 1 && !pending) {
      std::printf("%s: settled in %.1f s at epoch %llu\n", name_.c_str(),
                  std::chrono::duration<double>(Clock::now() - t0).count(),
                  static_cast<unsigned long long>(maps.begin()->first));
      return Status::OK();
    }
    if (all)
      last = std::to_string(maps.size()) + " distinct maps, pending " + (pending ? "yes" : "no");
    std::this_thread::sleep_for(250ms);  // polling interval, bounded by the deadline
  }
  return Status::Timeout("the cluster did not settle within " + std::to_string(limit.count()) +
                         " ms: " + last);
}

StatusOr<std::string> Scenario::FinishChange(std::chrono::milliseconds limit, int resumes) {
  const auto deadline = Clock::now() + limit;
  for (int round = 0;; ++round) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    SHARDKV_RETURN_IF_ERROR(WaitChangeEnded(std::max(left, 1ms)));
    AdminOptions options;
    options.seeds = bed_->Addresses(Members());
    options.auth_secret_file = secret_file_;
    auto admin = Admin::Create(options);
    if (!admin.ok()) return admin.status();
    AdminReply r = (*admin)->ChangeStatus();
    if (!r.status.ok()) return r.status;
    if (!r.report.has_change) return std::string("none");
    const std::string state(ChangeStateName(r.report.record.state));
    if (r.report.record.state != ChangeState::kFailed || round >= resumes) return state;
    std::printf("%s: the change failed; resuming it (rebalance resume)\n", name_.c_str());
    AdminReply resumed = (*admin)->Resume();
    if (!resumed.status.ok()) {
      std::printf("%s: resume: %s\n", name_.c_str(), resumed.status.ToString().c_str());
    }
  }
}

uint32_t Scenario::Driver(std::string* state) {
  AdminOptions options;
  options.seeds = bed_->Addresses(Members());
  options.timeout_ms = 2000;
  options.auth_secret_file = secret_file_;
  auto admin = Admin::Create(options);
  if (!admin.ok()) return 0;
  AdminReply r = (*admin)->ChangeStatus();
  if (!r.status.ok() || !r.report.has_change) return 0;
  if (state != nullptr) *state = std::string(ChangeStateName(r.report.record.state));
  return r.report.driver;
}

std::unique_ptr<Admin> Scenario::MakeAdmin(uint32_t timeout_ms) {
  AdminOptions options;
  options.seeds = bed_->Addresses(Members());
  options.timeout_ms = timeout_ms;
  options.auth_secret_file = secret_file_;
  auto admin = Admin::Create(options);
  return admin.ok() ? std::move(*admin) : nullptr;  // only bad seeds fail, and these are not
}

Status Scenario::WaitServing(int host, std::chrono::milliseconds limit) {
  const auto t0 = Clock::now();
  const auto deadline = t0 + limit;
  std::unique_ptr<Admin> admin = MakeAdmin();
  if (admin == nullptr) return Status::InvalidArgument("no admin");
  std::string last;
  while (Clock::now() < deadline) {
    StatusOr<ClusterMap> own = admin->MapOf(bed_->Address(host));
    if (!own.ok()) {
      last = own.status().ToString();
    } else if (own->FindNodeByAddress(bed_->Address(host)) == nullptr) {
      last = "its map (epoch " + std::to_string(own->epoch()) + ") does not list it";
    } else {
      uint64_t newest = 0;
      for (int h : Members()) {
        if (h == host) continue;
        if (StatusOr<ClusterMap> m = admin->MapOf(bed_->Address(h)); m.ok()) {
          newest = std::max(newest, m->epoch());
        }
      }
      if (own->epoch() >= newest) {
        std::printf("%s: node %d serves at epoch %llu %.1f s after its start\n", name_.c_str(),
                    host, static_cast<unsigned long long>(own->epoch()),
                    std::chrono::duration<double>(Clock::now() - t0).count());
        return Status::OK();
      }
      last = "epoch " + std::to_string(own->epoch()) + ", others at " + std::to_string(newest);
    }
    std::this_thread::sleep_for(100ms);  // polling interval, bounded by the deadline
  }
  return Status::Timeout("node " + std::to_string(host) + " did not serve within " +
                         std::to_string(limit.count()) + " ms: " + last);
}

Figures Scenario::Outcomes(const std::function<bool(const std::string& key)>& keep) {
  Figures figures;
  (void)LoadHistories(histories_, &figures, keep);
  return figures;
}

std::vector<std::string> Scenario::Teardown() {
  processes_.clear();
  samplers_.clear();
  bed_->Cleanup();
  std::vector<std::string> left = bed_->Leftovers();
  for (const std::string& l : left) std::printf("%s: LEFTOVER %s\n", name_.c_str(), l.c_str());
  return left;
}

Figures Scenario::Check() {
  WaitAll(120s);
  Figures figures;
  for (const std::string& path : histories_) {
    Figures one;
    (void)LoadHistories({path}, &one);
    std::ifstream log(path + ".log");
    std::string first_line;
    std::getline(log, first_line);
    std::printf("%s: %s: %s%s%s\n", name_.c_str(), path.substr(dir_->path().size() + 1).c_str(),
                one.Line().c_str(), first_line.empty() ? "" : "; log: ", first_line.c_str());
  }
  auto histories = LoadHistories(histories_, &figures);
  if (!histories.ok()) {
    figures.violations.push_back(histories.status().ToString());
    ++figures.unchecked;
    return figures;
  }
  std::vector<std::string> keys;
  for (const auto& [key, h] : *histories) keys.push_back(key);
  ClientOptions options;
  options.seeds = bed_->Addresses(Members());
  options.timeout_ms = 5000;
  options.auth_secret_file = secret_file_;
  const auto finals = FinalReads(options, keys, 6);
  CheckHistories(*histories, finals, &figures);
  samplers_.clear();  // SIGKILL: they flushed every sample; the settling is sampled too
  if (Status s = CheckSamples(samples_, &figures); !s.ok()) {
    figures.violations.push_back(s.ToString());
  }
  return figures;
}

bool Scenario::Report(const Figures& figures, const std::string& expected_failure) {
  const bool held = figures.Clean() && figures.divergent_epochs == 0;
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  for (const std::string& v : figures.violations) std::printf("  %s\n", v.c_str());
  for (const std::string& e : nemesis_.Events()) std::printf("  event %s\n", e.c_str());
  std::printf("%s: %s in %.1f s\n", name_.c_str(), figures.Line().c_str(), seconds);
  if (!held && !expected_failure.empty()) {
    std::printf("%s: EXPECTED FAILURE (issue 12): %s\n", name_.c_str(), expected_failure.c_str());
  } else {
    std::printf("%s: %s\n", name_.c_str(), held ? "held" : "FAILED");
  }
  if (!held) KeepRunFiles();
  std::fflush(stdout);
  return held;
}

// SHARDKV_BED_KEEP=<dir>: a run that did not hold leaves its node logs, histories and samples
// (the top-level files of the run dir, not the databases) in <dir>/<name>-<pid>, since the run
// dir itself goes with the scenario and an anomaly is only explained by its logs.
void Scenario::KeepRunFiles() const {
  const char* keep = std::getenv("SHARDKV_BED_KEEP");
  if (keep == nullptr || *keep == '\0') return;
  const fs::path to = fs::path(keep) / (name_ + "-" + std::to_string(getpid()));
  std::error_code ec;
  fs::create_directories(to, ec);
  int copied = 0;
  for (const auto& entry : fs::directory_iterator(dir_->path(), ec)) {
    if (!entry.is_regular_file()) continue;
    std::error_code copy_ec;
    fs::copy_file(entry.path(), to / entry.path().filename(), fs::copy_options::overwrite_existing,
                  copy_ec);
    if (!copy_ec) ++copied;
  }
  std::printf("%s: kept %d run files in %s\n", name_.c_str(), copied, to.c_str());
}

}  // namespace shardkv::multihost
