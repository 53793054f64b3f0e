// `shardkv placement compare` through the real binary: output shapes, and every bad input path
// ending in exit code 2 with exactly one "error: ..." line on stderr.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "lab/json_value.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"

using shardkv::testing::JsonValue;
using shardkv::testing::ParseJson;
using shardkv::testing::ProcessResult;
using shardkv::testing::RunProcess;
using shardkv::testing::TempDir;

namespace {

// Few keys: these tests check the plumbing, not the numbers (seed_findings_test does those).
ProcessResult Compare(std::vector<std::string> args, bool small = true) {
  std::vector<std::string> argv = {SHARDKV_CLI_PATH, "placement", "compare"};
  if (small) {
    argv.push_back("--keys");
    argv.push_back("20000");
  }
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv);
}

size_t CountLines(const std::string& s) { return std::count(s.begin(), s.end(), '\n'); }

void RequireUsageError(const ProcessResult& r, const std::string& mention) {
  INFO("stdout: " << r.out << "\nstderr: " << r.err);
  CHECK(r.exit_code == 2);
  CHECK(CountLines(r.err) == 1);
  CHECK(r.err.rfind("error: ", 0) == 0);
  CHECK(r.err.find(mention) != std::string::npos);
  CHECK(r.out.empty());
}

}  // namespace

TEST_CASE("cli: default table, quiet stderr when not a terminal", "[lab][cli]") {
  ProcessResult r = Compare({});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.err.empty());  // no progress output into a pipe or file
  CHECK(r.out.find("20000 keys (user:%d, 0..19999), 10 nodes (cache-%02d)") != std::string::npos);
  for (const char* algo :
       {"\nring ", "\njump ", "\nmaglev ", "\nrendezvous ", "\nketama ", "\nmodulo "}) {
    CHECK(r.out.find(algo) != std::string::npos);
  }
  CHECK(CountLines(r.out) == 5 + 6);
}

TEST_CASE("cli: --json and --csv", "[lab][cli]") {
  ProcessResult json =
      Compare({"--json", "--algos", "ring,jump", "--vnodes", "1,100", "--hash", "crc32,xxh3"});
  REQUIRE(json.exit_code == 0);
  auto doc = ParseJson(json.out);
  REQUIRE(doc.has_value());
  const JsonValue* results = doc->Find("results");
  REQUIRE(results != nullptr);
  CHECK(results->array.size() == 2 * 2 + 2);
  CHECK(results->array[0].Find("hash")->string == "crc32");
  CHECK(results->array[0].Find("vnodes")->number == 1);

  ProcessResult csv = Compare({"--csv", "--algos", "modulo,ketama", "--hash", "crc32,fnv1a"});
  REQUIRE(csv.exit_code == 0);
  // modulo x 2 hashes, ketama once (always md5).
  CHECK(CountLines(csv.out) == 1 + 3);
  CHECK(csv.out.rfind("algorithm,hash,vnodes,", 0) == 0);
  CHECK(csv.out.find("\nketama,md5,,") != std::string::npos);
}

TEST_CASE("cli: --help documents every option and shows examples", "[lab][cli]") {
  ProcessResult r = Compare({"--help"}, false);
  CHECK(r.exit_code == 0);
  for (const char* opt :
       {"--algos", "--vnodes", "--hash", "--nodes", "--node-names", "--weights", "--keys",
        "--key-pattern", "--random-keys", "--key-file", "--seed", "--maglev-table", "--json",
        "--csv", "--svg", "Examples:", "cache-%02d", "user:%d", "1000000"}) {
    CHECK(r.out.find(opt) != std::string::npos);
  }
  ProcessResult top = RunProcess({SHARDKV_CLI_PATH, "--help"});
  CHECK(top.exit_code == 0);
  CHECK(top.out.find("placement") != std::string::npos);
}

TEST_CASE("cli: keys and names from files, random keys, svg", "[lab][cli]") {
  TempDir dir;
  std::string keys = dir.Write("keys.txt", "a\nb\nc\nd\ne\nf\ng\nh\n");
  std::string names = dir.Write("names.txt", "alpha\nbeta\ngamma\ndelta\n");
  std::string svg = dir.Sub("out.svg");
  ProcessResult r = Compare(
      {"--key-file", keys, "--node-names", names, "--nodes", "3", "--svg", svg, "--json"}, false);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto doc = ParseJson(r.out);
  REQUIRE(doc.has_value());
  CHECK(doc->Find("keys")->number == 8);
  CHECK(doc->Find("nodes")->array.size() == 3);
  CHECK(doc->Find("added_node")->Find("name")->string == "delta");
  std::ifstream in(svg);
  std::stringstream s;
  s << in.rdbuf();
  CHECK(s.str().rfind("<svg", 0) == 0);

  ProcessResult a = Compare({"--random-keys", "--seed", "9", "--csv", "--algos", "jump"});
  ProcessResult b = Compare({"--random-keys", "--seed", "9", "--csv", "--algos", "jump"});
  ProcessResult c = Compare({"--random-keys", "--seed", "10", "--csv", "--algos", "jump"});
  REQUIRE((a.exit_code == 0 && b.exit_code == 0 && c.exit_code == 0));
  // Same seed, same keys: the shares (columns 4-7) agree; timings may not.
  auto shares = [](const std::string& csv) {
    std::string row = csv.substr(csv.find('\n') + 1);
    size_t from = 0;
    for (int i = 0; i < 3; ++i) from = row.find(',', from) + 1;
    size_t to = from;
    for (int i = 0; i < 4; ++i) to = row.find(',', to) + 1;
    return row.substr(from, to - from);
  };
  CHECK(shares(a.out) == shares(b.out));
  CHECK(shares(a.out) != shares(c.out));
}

TEST_CASE("cli: bad input exits 2 with one error line", "[lab][cli]") {
  TempDir dir;
  std::string empty = dir.Write("empty.txt", "\n\n");
  std::string keys = dir.Write("keys.txt", "k1\nk2\n");

  RequireUsageError(Compare({"--algos", "ring,foo"}), "unknown algorithm 'foo'");
  RequireUsageError(Compare({"--hash", "sha1"}), "sha1");
  RequireUsageError(Compare({"--nodes", "0"}), "--nodes");
  RequireUsageError(Compare({"--nodes", "-3"}), "--nodes");
  RequireUsageError(Compare({"--key-file", "/nonexistent/keys.txt"}, false),
                    "/nonexistent/keys.txt");
  RequireUsageError(Compare({"--key-file", empty}, false), "no keys");
  RequireUsageError(Compare({"--algos", "maglev", "--maglev-table", "997"}), "maglev");
  RequireUsageError(Compare({"--algos", "maglev", "--nodes", "200", "--maglev-table", "10007"}),
                    "maglev");
  RequireUsageError(Compare({"--nodes", "201"}), "--nodes must be between 1 and 200");
  RequireUsageError(Compare({"--weights", "1,2"}), "--weights has 2 values for 10 nodes");
  RequireUsageError(Compare({"--weights", "1,x,1,1,1,1,1,1,1,1"}), "--weights");
  RequireUsageError(Compare({"--weights", "1,0,1,1,1,1,1,1,1,1"}), "weight");
  RequireUsageError(Compare({"--algos", "ketama", "--weights", "1.5,1,1,1,1,1,1,1,1,1"}), "ketama");
  RequireUsageError(Compare({"--vnodes", "100,0"}), "--vnodes");
  RequireUsageError(Compare({"--keys", "0"}, false), "--keys");
  RequireUsageError(Compare({"--keys", "many"}, false), "--keys");
  RequireUsageError(Compare({"--keys", "-5"}, false), "--keys must be at least 1, got -5");
  RequireUsageError(Compare({"--json", "--csv"}), "--csv");
  RequireUsageError(Compare({"--random-keys", "--key-file", keys}), "--key-file");
  RequireUsageError(Compare({"--seed", "5"}), "--random-keys");
  RequireUsageError(Compare({"--key-pattern", "user:%s"}), "user:%s");
  RequireUsageError(Compare({"--node-names", "/nonexistent/names.txt"}), "/nonexistent/names.txt");
  RequireUsageError(Compare({"--svg", "/nonexistent/dir/out.svg"}), "/nonexistent/dir/out.svg");
  RequireUsageError(Compare({"--frobnicate"}), "--frobnicate");
  RequireUsageError(Compare({"extra"}), "extra");
  RequireUsageError(RunProcess({SHARDKV_CLI_PATH}), "needs a command");
  RequireUsageError(RunProcess({SHARDKV_CLI_PATH, "placement"}), "needs a command");
  RequireUsageError(RunProcess({SHARDKV_CLI_PATH, "placement", "frob"}), "'frob'");
}
