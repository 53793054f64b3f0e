// The outcome of a mutating `shardkv` command (docs/cli.md "Exit codes"): applied (exit 0),
// not_applied (3 when nothing could be sent, 1 when refused) and indeterminate (4: sent, and no
// answer came back), as the exit code and as "outcome" in --json, on error too. Driven against
// tools/fake_node.h, so the silent node is exactly "took the request and never answered".
#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "testing/subprocess.h"
#include "testing/temp_dir.h"
#include "tools/fake_node.h"

using shardkv::testing::ClosedPort;
using shardkv::testing::FakeNode;
using shardkv::testing::ProcessResult;
using shardkv::testing::RunProcess;
using shardkv::testing::TempDir;

namespace {

bool Contains(const std::string& s, const std::string& what) {
  return s.find(what) != std::string::npos;
}

// `shardkv --cluster ADDRESS --timeout MS ARGS...`, with a --dir and an empty profile of its
// own so no local cluster or profile of the machine leaks in; killed if it outlives the limit.
ProcessResult Cli(const TempDir& dir, const std::string& address, uint32_t timeout_ms,
                  std::vector<std::string> args) {
  std::ofstream(dir.Sub("empty-profile.toml")).flush();
  std::vector<std::string> argv = {SHARDKV_CLI_PATH,
                                   "--dir",
                                   dir.Sub("cluster"),
                                   "--profile",
                                   dir.Sub("empty-profile.toml"),
                                   "--cluster",
                                   address,
                                   "--timeout",
                                   std::to_string(timeout_ms)};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, std::chrono::seconds(60));
}

}  // namespace

TEST_CASE("cli outcome: a put to a cluster nobody listens at is not_applied, exit 3",
          "[multiprocess][outcome]") {
  TempDir dir;
  const std::string address = "127.0.0.1:" + std::to_string(ClosedPort());
  ProcessResult r = Cli(dir, address, 2000, {"put", "k", "v", "--json"});
  INFO(r.Text());
  CHECK(r.exit_code == 3);
  CHECK(Contains(r.out, "\"outcome\":\"not_applied\""));
  CHECK(Contains(r.err, "error: "));
  // Without --json only the error line.
  ProcessResult plain = Cli(dir, address, 2000, {"del", "k"});
  CHECK(plain.exit_code == 3);
  CHECK(plain.out.empty());
}

TEST_CASE("cli outcome: a put that the node answers is applied, exit 0",
          "[multiprocess][outcome]") {
  TempDir dir;
  FakeNode node(FakeNode::Mode::kApply);
  ProcessResult r = Cli(dir, node.address(), 5000, {"put", "k", "v", "--json"});
  INFO(r.Text());
  CHECK(r.exit_code == 0);
  CHECK(Contains(r.out, "\"outcome\":\"applied\""));
  CHECK(Contains(r.out, "\"ts\":42"));
  ProcessResult del = Cli(dir, node.address(), 5000, {"del", "k", "--json"});
  INFO(del.Text());
  CHECK(del.exit_code == 0);
  CHECK(Contains(del.out, "\"outcome\":\"applied\""));
}

TEST_CASE("cli outcome: a put the node refuses is not_applied, exit 1", "[multiprocess][outcome]") {
  TempDir dir;
  FakeNode node(FakeNode::Mode::kRefuse);
  ProcessResult r = Cli(dir, node.address(), 5000, {"put", "k", "v", "--json"});
  INFO(r.Text());
  CHECK(r.exit_code == 1);
  CHECK(Contains(r.out, "\"outcome\":\"not_applied\""));
  CHECK(Contains(r.out, "refuses writes"));
  CHECK(node.writes() == 1);  // refused once: a refusal is not retried
}

TEST_CASE("cli outcome: a put sent to a node that never answers is indeterminate, exit 4",
          "[multiprocess][outcome]") {
  TempDir dir;
  FakeNode node(FakeNode::Mode::kSilent);
  ProcessResult r = Cli(dir, node.address(), 600, {"put", "k", "v", "--json"});
  INFO(r.Text());
  CHECK(r.exit_code == 4);
  CHECK(Contains(r.out, "\"outcome\":\"indeterminate\""));
  CHECK(Contains(r.err, "timed out"));
  CHECK(node.writes() >= 1);  // it was sent: that is what makes the outcome unknown
  ProcessResult plain = Cli(dir, node.address(), 600, {"put", "k", "v"});
  CHECK(plain.exit_code == 4);
  CHECK(plain.out.empty());
}
