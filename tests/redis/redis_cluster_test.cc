// The Redis front end with real clients (issue 13 §5): a 3-node `cluster up` cluster driven by
// redis-cli and redis-benchmark (Debian redis-tools), through a scale-out, and COMMAND INFO
// compared with redis-server's field by field.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "redis/command_table.h"
#include "testing/cli_harness.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

using shardkv::testing::LocalCluster;
using shardkv::testing::ProcessResult;
using shardkv::testing::RunProcess;
using shardkv::testing::RunProcessWithInput;

namespace {

constexpr char kRedisCli[] = "/usr/bin/redis-cli";
constexpr char kRedisBenchmark[] = "/usr/bin/redis-benchmark";
constexpr char kRedisServer[] = "/usr/bin/redis-server";
constexpr auto kLimit = std::chrono::seconds(120);

std::vector<std::string> RedisAddresses(const LocalCluster& c) {
  ProcessResult r = c.Run({"cluster", "status", "--json"});
  REQUIRE(r.exit_code == 0);
  std::vector<std::string> out;
  const std::regex re("\"redis_address\":\"([^\"]+)\"");
  for (auto it = std::sregex_iterator(r.out.begin(), r.out.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

std::string PortOf(const std::string& address) { return address.substr(address.rfind(':') + 1); }

// redis-cli's output for `args` against port `port` (no shell: arguments are passed as they are).
std::string Cli(const std::string& port, std::vector<std::string> args) {
  args.insert(args.begin(), {kRedisCli, "-p", port});
  ProcessResult r = RunProcess(args, kLimit);
  INFO(r.Text());
  REQUIRE(r.exit_code == 0);
  return r.out;
}

void RequireTools() {
  for (const char* tool : {kRedisCli, kRedisBenchmark, kRedisServer}) {
    INFO(tool << " is missing: install Debian's redis-tools and redis-server "
              << "(tools/install-deps.sh)");
    REQUIRE(std::filesystem::exists(tool));
  }
}

// redis-benchmark's output, which must show every test and no error reply.
void RequireCleanBenchmark(const ProcessResult& r, const std::vector<std::string>& tests) {
  INFO(r.Text());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("rror") == std::string::npos);
  CHECK(r.err.find("rror") == std::string::npos);
  for (const std::string& t : tests) CHECK(r.out.find(t + ": ") != std::string::npos);
}

}  // namespace

TEST_CASE("redis: redis-cli and redis-benchmark against a 3-node cluster, through a scale-out",
          "[multiprocess][redis]") {
  RequireTools();
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0", "--wait", "60"}).exit_code ==
          0);
  const std::vector<std::string> redis = RedisAddresses(c);
  REQUIRE(redis.size() == 3);
  const std::string p1 = PortOf(redis[0]), p2 = PortOf(redis[1]), p3 = PortOf(redis[2]);

  // Any node serves any key: no MOVED, no ASK.
  CHECK(Cli(p1, {"SET", "user:1", "alice"}) == "OK\n");
  CHECK(Cli(p2, {"GET", "user:1"}) == "alice\n");
  CHECK(Cli(p3, {"MSET", "a", "1", "b", "2"}) == "OK\n");
  CHECK(Cli(p1, {"MGET", "a", "b", "nope"}) == "1\n2\n\n");
  CHECK(Cli(p2, {"EXISTS", "a", "b", "nope"}) == "2\n");
  CHECK(Cli(p3, {"DEL", "a", "nope"}) == "1\n");
  CHECK(Cli(p1, {"GET", "a"}) == "\n");
  CHECK(Cli(p1, {"STRLEN", "user:1"}) == "5\n");
  CHECK(Cli(p1, {"GETRANGE", "user:1", "0", "2"}) == "ali\n");
  CHECK(Cli(p1, {"TYPE", "user:1"}) == "string\n");
  CHECK(Cli(p1, {"SET", "user:1", "bob", "GET"}) == "alice\n");
  CHECK(Cli(p1, {"SELECT", "1"}) == "ERR DB index is out of range\n\n");
  // Counters through different nodes add up (design.md "Counters"); APPEND stays refused.
  CHECK(Cli(p1, {"INCR", "n"}) == "1\n");
  CHECK(Cli(p2, {"INCRBY", "n", "4"}) == "5\n");
  CHECK(Cli(p3, {"DECR", "n"}) == "4\n");
  CHECK(Cli(p1, {"GET", "n"}) == "4\n");
  CHECK(Cli(p1, {"TTL", "n"}) == "-1\n");
  CHECK(Cli(p1, {"APPEND", "n", "x"}).find("read-modify-write is not atomic") != std::string::npos);
  CHECK(Cli(p2, {"SET", "t", "v", "EX", "1000"}) == "OK\n");
  const std::string ttl = Cli(p3, {"TTL", "t"});
  CHECK((ttl == "1000\n" || ttl == "999\n" || ttl == "998\n"));
  // The rest of the expiry family and the read-then-write string commands, each through another
  // node than the one that wrote the key.
  CHECK(Cli(p1, {"PERSIST", "t"}) == "1\n");
  CHECK(Cli(p2, {"TTL", "t"}) == "-1\n");
  CHECK(Cli(p3, {"EXPIRE", "t", "500", "NX"}) == "1\n");
  CHECK(Cli(p1, {"EXPIRE", "t", "100", "GT"}) == "0\n");
  const std::string pttl = Cli(p2, {"PTTL", "t"});
  CHECK(std::stol(pttl) > 400000);
  CHECK(std::stol(pttl) <= 500000);
  CHECK(Cli(p3, {"EXPIRETIME", "nope"}) == "-2\n");
  CHECK(Cli(p1, {"SETEX", "s", "100", "v"}) == "OK\n");
  CHECK(Cli(p2, {"PSETEX", "ps", "100000", "v"}) == "OK\n");
  CHECK(Cli(p3, {"GETEX", "s", "PERSIST"}) == "v\n");
  CHECK(Cli(p1, {"TTL", "s"}) == "-1\n");
  CHECK(Cli(p2, {"SETNX", "s", "other"}) == "0\n");
  CHECK(Cli(p3, {"GETSET", "s", "w"}) == "v\n");
  CHECK(Cli(p1, {"GETDEL", "s"}) == "w\n");
  CHECK(Cli(p2, {"EXISTS", "s"}) == "0\n");
  CHECK(Cli(p3, {"MSETNX", "m1", "1", "m2", "2"}) == "1\n");
  CHECK(Cli(p1, {"MSETNX", "m2", "x", "m3", "3"}) == "0\n");
  CHECK(Cli(p2, {"SET", "e", "v", "PXAT", "1"}) == "OK\n");  // a time in the past deletes
  CHECK(Cli(p3, {"GET", "e"}) == "\n");
  CHECK(Cli(p1, {"CLUSTER", "KEYSLOT", "foo"}) == "12182\n");
  CHECK(Cli(p1, {"SHARDKV", "CONSISTENCY", "all"}) == "OK\n");
  const std::string info = Cli(p2, {"INFO"});
  CHECK(info.find("loading:0") != std::string::npos);
  CHECK(info.find("cluster_enabled:1") != std::string::npos);
  CHECK(info.find("shardkv_epoch:1") != std::string::npos);
  CHECK(info.find("shardkv_rebalance_state:none") != std::string::npos);
  // The emulated slot table: 16384 slots over the three Redis listeners.
  const std::string nodes = Cli(p1, {"CLUSTER", "NODES"});
  for (const std::string& a : redis) CHECK(nodes.find(a + "@0") != std::string::npos);
  CHECK(nodes.find("connected 0-5460") != std::string::npos);
  CHECK(nodes.find("connected 10922-16383") != std::string::npos);
  // A scripted session on one connection, pipelined by redis-cli (an error reply in its raw
  // output is followed by an empty line; a map is shown as "key value" lines).
  ProcessResult piped = RunProcessWithInput(
      {kRedisCli, "-p", p3}, "HELLO 3\nSET k v\nGET k\nCLIENT SETNAME app\nCLIENT GETNAME\n");
  INFO(piped.Text());
  CHECK(piped.out.find("proto 3\n") != std::string::npos);
  CHECK(piped.out.find("OK\nv\nOK\napp\n") != std::string::npos);

  const std::vector<std::string> tests = {"SET", "GET", "MSET (10 keys)"};
  RequireCleanBenchmark(
      RunProcess({kRedisBenchmark, "-p", p1, "-t", "set,get,mset", "-n", "2000", "-q"}, kLimit),
      tests);
  RequireCleanBenchmark(
      RunProcess({kRedisBenchmark, "--cluster", "-p", p2, "-t", "set,get", "-n", "2000", "-q"},
                 kLimit),
      {"SET", "GET"});

  // A scale-out while redis-benchmark runs: no error reply.
  ProcessResult during;
  std::thread bench([&] {
    during = RunProcess(
        {kRedisBenchmark, "-p", p3, "-t", "set,get", "-n", "30000", "-r", "5000", "-q"}, kLimit);
  });
  ProcessResult add = c.Run({"cluster", "add-node", "--yes", "--wait", "60"});
  bench.join();
  REQUIRE(add.exit_code == 0);
  RequireCleanBenchmark(during, {"SET", "GET"});
  // The new node has a Redis listener too, and the slot table now spreads over four.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  std::vector<std::string> after = RedisAddresses(c);
  while (after.size() < 4 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // polling the status, bounded
    after = RedisAddresses(c);
  }
  REQUIRE(after.size() == 4);
  CHECK(Cli(PortOf(after[3]), {"GET", "user:1"}) == "bob\n");
}

TEST_CASE("redis: COMMAND INFO matches redis-server 7.0 field by field", "[multiprocess][redis]") {
  RequireTools();
  shardkv::testing::TempDir dir;
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "1", "--base-port", "0", "--wait", "60"}).exit_code ==
          0);
  const std::vector<std::string> redis = RedisAddresses(c);
  REQUIRE(redis.size() == 1);
  // redis-server on a Unix socket in the test's own directory (no TCP port to race for).
  const std::string sock = dir.path() + "/redis.sock";
  const pid_t server = fork();
  REQUIRE(server >= 0);
  if (server == 0) {
    execl(kRedisServer, kRedisServer, "--port", "0", "--unixsocket", sock.c_str(), "--save", "",
          "--appendonly", "no", "--dir", dir.path().c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!std::filesystem::exists(sock) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling for the socket
  }
  REQUIRE(std::filesystem::exists(sock));
  size_t compared = 0;
  for (const auto& spec : shardkv::redis::CommandTable()) {
    // Containers list only the subcommands each server has; compare the subcommands instead.
    // CLIENT SETINFO is redis 7.2's and SHARDKV is shardkv's own.
    if (!shardkv::redis::Subcommands(spec.name).empty() || spec.name == "client|setinfo" ||
        spec.name == "shardkv") {
      continue;
    }
    const std::string name(spec.name);
    // --no-raw shows each reply's type (a status, a "bulk", an (integer)); -3 the RESP3 ones
    // (sets, maps).
    for (const char* protocol : {"-2", "-3"}) {
      ProcessResult theirs = RunProcess(
          {kRedisCli, "--no-raw", protocol, "-s", sock, "COMMAND", "INFO", name}, kLimit);
      const std::string ours =
          Cli(PortOf(redis[0]), {"--no-raw", protocol, "COMMAND", "INFO", name});
      INFO(name << " " << protocol);
      CHECK(theirs.exit_code == 0);
      CHECK(ours == theirs.out);
    }
    ++compared;
  }
  CHECK(compared > 25);
  kill(server, SIGTERM);
  int status = 0;
  waitpid(server, &status, 0);
}
