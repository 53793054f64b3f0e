// The key-value commands of the CLI under adversarial use. Multi-process: real shardkv-node
// processes driven through the shardkv CLI (testing/cli_harness.h). Each case failed before its
// fix.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <random>
#include <string>

#include "testing/cli_harness.h"
#include "testing/cluster_util.h"

using namespace shardkv::testing;

namespace {

// The cluster_id line of DIR/cluster.conf.
std::string ClusterIdOf(const LocalCluster& c) { return ClusterIdInDir(c.dir()); }

bool PortFree(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

// A base port whose `n` ports are free right now, outside the ephemeral range (bounded tries).
int FreeBasePort(int n) {
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 30000);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const int base = pick(rng);
    bool all = true;
    for (int i = 0; i < n && all; ++i) all = PortFree(base + i);
    if (all) return base;
  }
  FAIL("no free port range found");
  return 0;
}

}  // namespace

TEST_CASE("hardening client: a cluster's dir never reads or writes another cluster on its ports",
          "[multiprocess][hardening]") {
  // Findings row 3: A stopped, B started on A's ports; `--dir A get k` said "not found" and
  // `--dir A put` wrote into B.
  LocalCluster a, b;
  const std::string port = std::to_string(FreeBasePort(2));
  REQUIRE(a.Run({"cluster", "up", "--nodes", "2", "--base-port", port}).exit_code == 0);
  REQUIRE(a.Run({"put", "k", "in-a"}).exit_code == 0);
  REQUIRE(a.Run({"cluster", "down"}).exit_code == 0);
  REQUIRE(b.Run({"cluster", "up", "--nodes", "2", "--base-port", port}).exit_code == 0);
  const std::string id_a = ClusterIdOf(a), id_b = ClusterIdOf(b);
  REQUIRE_FALSE(id_a.empty());
  REQUIRE(id_a != id_b);
  const std::string names_both =
      "belong to cluster " + id_b + ", not cluster " + id_a + " (the cluster in " + a.dir() + ")";

  for (const std::vector<std::string>& args : {std::vector<std::string>{"get", "k"},
                                               {"put", "written:to:a", "yes"},
                                               {"del", "k"},
                                               {"stats"},
                                               {"load", "--count", "10"},
                                               {"verify", "--count", "10"}}) {
    auto r = a.Run(args);
    INFO(args.front());
    CHECK(r.exit_code == 3);
    CHECK(r.err.find(names_both) != std::string::npos);
    CHECK(LineCount(r.err) == 1);
  }
  // B got nothing, and kept its keys.
  CHECK(b.Run({"get", "written:to:a"}).exit_code == 1);
  // --cluster with --cluster-id: the same refusal; without it, B is what answers.
  const std::string address = "127.0.0.1:" + port;
  auto r = b.Run({"--cluster", address, "--cluster-id", id_a, "get", "k"});
  CHECK(r.exit_code == 3);
  CHECK(r.err.find("belongs to cluster " + id_b + ", not cluster " + id_a +
                   " (the --cluster-id given)") != std::string::npos);
  CHECK(b.Run({"--cluster", address, "get", "k"}).exit_code == 1);
}

TEST_CASE("hardening client: usage errors exit 2 with one line that names the problem",
          "[multiprocess][hardening]") {
  LocalCluster c;  // no cluster runs: nothing here may need one
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  for (const Case& k : std::vector<Case>{
           {{"--cluster", "nonsense", "get", "x"}, "bad address \"nonsense\""},  // row 27
           {{"--cluster", "127.0.0.1:1,h:0", "get", "x"}, "port must be 1-65535"},
           {{"--cluster", "127.0.0.1:99999", "get", "x"}, "port must be 1-65535"},
           {{"frobnicate"}, "unknown command 'frobnicate'"},  // row 26
           {{"cluster", "frob"}, "unknown command 'frob' for 'shardkv cluster'"},
           {{"cluster", "up", "--nodes", "abc"}, "--nodes: abc is not a number"},  // row 23
           {{"load", "--count", "1e3"}, "--count: 1e3 is not a whole number"},
           {{"--cluster-id", "0", "get", "x"}, "--cluster-id: 0 is out of range"},
           {{"load", "--count", "1", "--max-errors", "-1"}, "--max-errors"},
           {{"load", "--count", "1", "--concurrency", "4096", "--value-size", "16777216"},
            "in flight"},
           {{"load", "--count", "1", "--prefix", std::string(65530, 'p')}, "--prefix"},
           {{"get", ""}, "key is empty"},
       }) {
    auto r = c.Run(k.args);
    INFO(k.args.front() << " -> " << r.err);
    CHECK(r.exit_code == 2);
    CHECK(LineCount(r.err) == 1);
    CHECK(r.err.rfind("error: ", 0) == 0);
    CHECK(r.err.find(k.says) != std::string::npos);
  }
}

TEST_CASE("kv cli: a value over 16 MiB is refused offline after 16 MiB + 1 bytes",
          "[multiprocess][hardening]") {
  // Rows 31, 32: a huge stdin was read whole, sent, retried, then refused cryptically. Port 1
  // has no node: the refusal must come before any network.
  LocalCluster c;
  const std::string big((size_t{16} << 20) + 1, 'v');
  auto r = c.RunWithInput({"--cluster", "127.0.0.1:1", "put", "big"}, big);
  CHECK(r.exit_code == 2);
  CHECK(r.err == "error: value is larger than the 16 MiB limit\n");
  auto dash = c.RunWithInput({"--cluster", "127.0.0.1:1", "put", "big", "-"}, big + big);
  CHECK(dash.exit_code == 2);
  CHECK(dash.err == "error: value is larger than the 16 MiB limit\n");
}

TEST_CASE("kv cli: get prints exact bytes and valid JSON for any bytes and del is honest",
          "[multiprocess][hardening]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "1", "--base-port", "0"}).exit_code == 0);
  const std::string binary("a\0b\xff\n", 5);
  REQUIRE(c.RunWithInput({"put", "bin"}, binary).exit_code == 0);
  auto get = c.Run({"get", "bin"});
  CHECK(get.exit_code == 0);
  CHECK(get.out == binary);  // row 30: no newline appended off a terminal
  CHECK(c.Run({"get", "bin", "--raw"}).out == binary);

  auto json = c.Run({"get", "bin", "--json"});  // row 33
  CHECK(json.out == "{\"key\":\"bin\",\"found\":true,\"value_base64\":\"YQBi/wo=\"}\n");
  const std::string bad_key("k\xfe", 2);
  REQUIRE(c.Run({"put", bad_key, "ok\n"}).exit_code == 0);
  CHECK(c.Run({"get", bad_key, "--json"}).out ==
        "{\"key_base64\":\"a/4=\",\"found\":true,\"value\":\"ok\\n\"}\n");

  auto missing = c.Run({"get", "nokey", "--json"});
  CHECK(missing.exit_code == 1);
  CHECK(missing.out == "{\"key\":\"nokey\",\"found\":false}\n");

  // del: "existed" says whether there was a value (the key "deleted":true before, always).
  auto never = c.Run({"del", "never", "--json"});
  CHECK(never.exit_code == 0);
  CHECK(Field(never.out, "existed") == "false");
  CHECK(c.Run({"del", "never"}).out == "OK (the key did not exist)\n");
  auto existed = c.Run({"del", "bin", "--json"});
  CHECK(Field(existed.out, "existed") == "true");
  CHECK(c.Run({"del", "bin", "--json"}).out.find("\"existed\":false") != std::string::npos);
  CHECK(c.Run({"get", "bin"}).exit_code == 1);
}

TEST_CASE("kv cli: stats survives a dead node and load and verify stop at --max-errors",
          "[multiprocess][hardening]") {
  LocalCluster c;
  REQUIRE(c.Run({"cluster", "up", "--nodes", "3", "--base-port", "0"}).exit_code == 0);
  REQUIRE(c.Run({"load", "--count", "50"}).exit_code == 0);
  REQUIRE(c.Run({"cluster", "stop-node", "3", "--kill"}).exit_code == 0);

  // Row 22: one node of three down made stats exit 3.
  auto stats = c.Run({"stats"});
  CHECK(stats.exit_code == 0);
  CHECK(stats.out.find("node 1 ") != std::string::npos);
  CHECK(stats.out.find("NO ANSWER") != std::string::npos);
  CHECK(stats.err.find("1 of 3 nodes did not answer") != std::string::npos);
  auto stats_json = c.Run({"stats", "--json"});
  CHECK(stats_json.exit_code == 0);
  CHECK(stats_json.out.find("\"error\":") != std::string::npos);

  // With two of three down no write reaches its quorum: load stops after --max-errors (row 10:
  // it went on for 186,274 errors). The live coordinator is a replica of every key and keeps
  // each failed put, so their outcome is unknown: exit 4, the last line says why.
  REQUIRE(c.Run({"cluster", "stop-node", "2", "--kill"}).exit_code == 0);
  auto load = c.Run({"load", "--count", "5000", "--max-errors", "20", "--prefix", "dead:"});
  CHECK(load.exit_code == 4);
  CHECK(load.err.find("error: stopped after") != std::string::npos);
  CHECK(load.err.find("--max-errors 20") != std::string::npos);
  auto verify = c.Run({"verify", "--count", "5000", "--prefix", "dead:"});  // default 1000
  CHECK(verify.exit_code == 3);
  CHECK(verify.err.find("--max-errors 1000") != std::string::npos);
}
