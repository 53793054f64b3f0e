// shardkv-node's --config file and command line (tools/shardkv-node/node_config.h,
// node_flags.h): every key, flags over the file, and the errors that name file, line and key.
#include "node_config.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "node_flags.h"
#include "shardkv/options.h"
#include "testing/temp_dir.h"

using namespace shardkv;
using shardkv::node_tool::NodeCommandLine;
using shardkv::node_tool::NodeConfig;
using shardkv::node_tool::ParseNodeConfig;
using shardkv::testing::TempDir;

namespace {

constexpr char kEveryKey[] = R"(# every key
id = 7
cluster_id = "18446744073709551615"
listen = "0.0.0.0:7100"
advertise = "10.0.0.7:7100"
data_dir = "/var/lib/shardkv"
seeds = ["10.0.0.1:7100", "[::1]:7100"]
threads = 4
sync = true
log_level = "debug"
tombstone_grace_s = 3600

[limits]
max_key_bytes = 1024
max_value_bytes = 2048

[auth]
secret_file = "/etc/shardkv/secret"
client_secret_file = "/etc/shardkv/client-secret"
insecure = true

[tls]
cert = "/etc/shardkv/node.crt"
key = "/etc/shardkv/node.key"
ca = "/etc/shardkv/ca.crt"

[metrics]
listen = "127.0.0.1:9107"

[redis]
listen = "127.0.0.1:6307"
allow_flush = true

[repair]
background = false
period = 5000
rate = 250
)";

Status Parse(const std::string& text, NodeConfig* c) {
  return ParseNodeConfig(text, "/etc/shardkv/node.toml", c);
}

// The error for `text`, which must fail.
std::string ErrorOf(const std::string& text) {
  NodeConfig c;
  const Status s = Parse(text, &c);
  INFO(text);
  REQUIRE_FALSE(s.ok());
  CHECK(s.IsInvalidArgument());
  return s.message();
}

std::string WriteFile(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.Sub(name);
  std::ofstream(path) << text;
  return path;
}

// Runs the command line parser over `args` (argv[0] added).
int ParseArgs(std::vector<std::string> args, NodeCommandLine* out, std::string* error) {
  args.insert(args.begin(), "shardkv-node");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return node_tool::ParseNodeCommandLine(static_cast<int>(argv.size()), argv.data(), out, error);
}

}  // namespace

TEST_CASE("node config: every key sets its option", "[node][config]") {
  NodeConfig c;
  REQUIRE(Parse(kEveryKey, &c).ok());
  const NodeOptions& o = c.options;
  CHECK(o.id == 7);
  CHECK(o.cluster_id == UINT64_MAX);
  CHECK(o.listen == "0.0.0.0:7100");
  CHECK(o.advertise == "10.0.0.7:7100");
  CHECK(o.data_dir == "/var/lib/shardkv");
  CHECK(o.seeds == std::vector<std::string>{"10.0.0.1:7100", "[::1]:7100"});
  CHECK(o.io_threads == 4);
  CHECK(o.sync);
  CHECK(c.log_level == "debug");
  CHECK(o.tombstone_grace_ms == 3600u * 1000);
  CHECK(o.max_key_bytes == 1024);
  CHECK(o.max_value_bytes == 2048);
  CHECK(o.auth_secret_file == "/etc/shardkv/secret");
  CHECK(o.client_secret_file == "/etc/shardkv/client-secret");
  CHECK(o.insecure);
  CHECK(o.tls_cert_file == "/etc/shardkv/node.crt");
  CHECK(o.tls_key_file == "/etc/shardkv/node.key");
  CHECK(o.tls_ca_file == "/etc/shardkv/ca.crt");
  CHECK(o.metrics_listen == "127.0.0.1:9107");
  CHECK(o.redis_listen == "127.0.0.1:6307");
  CHECK(o.redis_allow_flush);
  CHECK_FALSE(o.background_repair);
  CHECK(o.repair_period_ms == 5000);
  CHECK(o.repair_rate == 250);
  CHECK(c.keys.size() == 24);
  CHECK(c.keys.size() == node_tool::NodeConfigKeys().size());
  CHECK(c.keys.count("limits.max_value_bytes") == 1);
  // The file is read whole and its options pass validation (the TLS files themselves are
  // loaded when the node starts); a [tls] section with one key missing is refused.
  CHECK(ValidateNodeOptions(o).ok());
  NodeOptions partial_tls = o;
  partial_tls.tls_key_file = "";
  CHECK_THAT(ValidateNodeOptions(partial_tls).message(), Catch::Contains("go together"));

  // A cluster id also as a TOML integer; keys left out keep their defaults.
  NodeConfig small;
  REQUIRE(Parse("cluster_id = 42\n", &small).ok());
  CHECK(small.options.cluster_id == 42);
  CHECK(small.options.listen == NodeOptions{}.listen);
  CHECK(small.options.io_threads == NodeOptions{}.io_threads);
  CHECK(small.log_level == "info");
  CHECK(small.keys == std::set<std::string>{"cluster_id"});
  // An empty file is a valid one.
  NodeConfig empty;
  CHECK(Parse("", &empty).ok());
  CHECK(empty.keys.empty());
}

TEST_CASE("node config: every listed key is known in its section and as a dotted key",
          "[node][config]") {
  // A key's section must be accepted as a [section] table (the [redis] keys once were not).
  for (const std::string& key : node_tool::NodeConfigKeys()) {
    const size_t dot = key.find('.');
    const std::string as_table = dot == std::string::npos ? key + " = 0\n"
                                                          : "[" + key.substr(0, dot) + "]\n" +
                                                                key.substr(dot + 1) + " = 0\n";
    for (const std::string& text : {as_table, key + " = 0\n"}) {
      NodeConfig c;
      const Status s = Parse(text, &c);
      INFO(text << " -> " << s.message());
      CHECK_THAT(s.message(), !Catch::Contains("unknown key"));
      CHECK_THAT(s.message(), !Catch::Contains("must be a table"));
    }
  }
}

TEST_CASE("node config: an unknown key names the file, the line and the key", "[node][config]") {
  CHECK(ErrorOf("id = 1\n\n# a comment\n\n\n\nlistne = \"127.0.0.1:7000\"\n") ==
        "/etc/shardkv/node.toml:7: unknown key 'listne'");
  CHECK(ErrorOf("[limits]\nmax_key = 5\n") ==
        "/etc/shardkv/node.toml:2: unknown key 'limits.max_key'");
  CHECK(ErrorOf("[auth]\nsecret = \"x\"\n") ==
        "/etc/shardkv/node.toml:2: unknown key 'auth.secret'");
  CHECK(ErrorOf("[tls]\ncrt = \"x\"\n") == "/etc/shardkv/node.toml:2: unknown key 'tls.crt'");
  CHECK(ErrorOf("[storage]\nsync = true\n") == "/etc/shardkv/node.toml:1: unknown key 'storage'");
  // A section key at the top level, or a top-level key in a section, is unknown too.
  CHECK(ErrorOf("max_key_bytes = 5\n") == "/etc/shardkv/node.toml:1: unknown key 'max_key_bytes'");
  CHECK(ErrorOf("[limits]\nid = 5\n") == "/etc/shardkv/node.toml:2: unknown key 'limits.id'");
}

TEST_CASE("node config: a value of the wrong type is refused", "[node][config]") {
  CHECK(ErrorOf("id = \"7\"\n") ==
        "/etc/shardkv/node.toml:1: 'id' must be an integer, not a string");
  CHECK(ErrorOf("threads = 2.5\n") ==
        "/etc/shardkv/node.toml:1: 'threads' must be an integer, not a float");
  CHECK(ErrorOf("sync = \"yes\"\n") ==
        "/etc/shardkv/node.toml:1: 'sync' must be true or false, not a string");
  CHECK(ErrorOf("listen = 7000\n") ==
        "/etc/shardkv/node.toml:1: 'listen' must be a string, not an integer");
  CHECK(ErrorOf("seeds = \"a:1\"\n") ==
        "/etc/shardkv/node.toml:1: 'seeds' must be an array of \"host:port\" strings, not a "
        "string");
  CHECK(ErrorOf("seeds = [\"a:1\", 2]\n") ==
        "/etc/shardkv/node.toml:1: 'seeds' must hold only strings, not an integer");
  CHECK(ErrorOf("cluster_id = true\n") ==
        "/etc/shardkv/node.toml:1: 'cluster_id' must be an integer or a string of digits, not a "
        "boolean");
  CHECK(ErrorOf("limits = 5\n") ==
        "/etc/shardkv/node.toml:1: 'limits' must be a table ([limits]), not an integer");
  CHECK(ErrorOf("[auth]\ninsecure = 1\n") ==
        "/etc/shardkv/node.toml:2: 'auth.insecure' must be true or false, not an integer");
  CHECK(ErrorOf("data_dir = \"\"\n") == "/etc/shardkv/node.toml:1: 'data_dir' must not be empty");
  CHECK(ErrorOf("[tls]\nca = []\n") ==
        "/etc/shardkv/node.toml:2: 'tls.ca' must be a string, not an array");
}

TEST_CASE("node config: a value out of range or malformed is refused", "[node][config]") {
  CHECK(ErrorOf("id = 0\n") == "/etc/shardkv/node.toml:1: 'id' must be between 1 and " +
                                   std::to_string(kMaxNodeId) + ", not 0");
  CHECK(ErrorOf("id = -3\n").find("'id' must be between 1 and") != std::string::npos);
  CHECK(ErrorOf("threads = 65\n") ==
        "/etc/shardkv/node.toml:1: 'threads' must be between 1 and 64, not 65");
  CHECK(ErrorOf("tombstone_grace_s = 0\n").find("'tombstone_grace_s' must be between 1 and") !=
        std::string::npos);
  CHECK(ErrorOf("[limits]\nmax_key_bytes = 0\n") ==
        "/etc/shardkv/node.toml:2: 'limits.max_key_bytes' must be between 1 and " +
            std::to_string(kMaxKeyBytesLimit) + ", not 0");
  CHECK(ErrorOf("[limits]\nmax_value_bytes = 40000000\n")
            .find("'limits.max_value_bytes' must be between 1 and " +
                  std::to_string(kMaxValueBytesLimit)) != std::string::npos);
  CHECK(ErrorOf("cluster_id = 0\n") ==
        "/etc/shardkv/node.toml:1: 'cluster_id' must be a positive number, not 0");
  CHECK(ErrorOf("cluster_id = \"18446744073709551616\"\n") ==
        "/etc/shardkv/node.toml:1: 'cluster_id' '18446744073709551616' is not a cluster id (a "
        "positive number)");
  CHECK(ErrorOf("cluster_id = \"-1\"\n").find("is not a cluster id") != std::string::npos);
  CHECK(ErrorOf("log_level = \"loud\"\n") ==
        "/etc/shardkv/node.toml:1: 'log_level' 'loud' is not one of trace, debug, info, warn, "
        "error, critical, off");
  CHECK(ErrorOf("listen = \"nonsense\"\n") ==
        "/etc/shardkv/node.toml:1: 'listen' 'nonsense' is not host:port");
  CHECK(ErrorOf("listen = \"127.0.0.1:65536\"\n").find("bad port") != std::string::npos);
  CHECK(ErrorOf("advertise = \"10.0.0.1:0\"\n") ==
        "/etc/shardkv/node.toml:1: 'advertise' '10.0.0.1:0' has port 0; give the port peers "
        "dial");
  CHECK(ErrorOf("advertise = \"0.0.0.0:7000\"\n").find("any-address") != std::string::npos);
  CHECK(ErrorOf("seeds = [\"10.0.0.1:7000\", \"10.0.0.2\"]\n") ==
        "/etc/shardkv/node.toml:1: 'seeds' '10.0.0.2' is not host:port");
  CHECK(ErrorOf("seeds = [\"10.0.0.1:0\"]\n").find("port 0") != std::string::npos);
}

TEST_CASE("node config: a TOML syntax error names the line, and nothing escapes",
          "[node][config]") {
  const std::string e = ErrorOf("id = 1\nlisten = \"127.0.0.1:7000\n");
  CHECK(e.rfind("/etc/shardkv/node.toml:2: ", 0) == 0);
  CHECK(ErrorOf("id = 1\nid = 2\n").rfind("/etc/shardkv/node.toml:2: ", 0) == 0);  // duplicate
  CHECK(ErrorOf("[limits\n").rfind("/etc/shardkv/node.toml:1: ", 0) == 0);
  CHECK(ErrorOf(std::string("id = 1\n\xff\xfe = 2\n")).rfind("/etc/shardkv/node.toml:", 0) == 0);
}

TEST_CASE("node config: a missing file is a usage error naming it", "[node][config]") {
  TempDir dir;
  NodeConfig c;
  const Status s = node_tool::LoadNodeConfig(dir.Sub("absent.toml"), &c);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message() == "cannot read the configuration file " + dir.Sub("absent.toml"));
  NodeCommandLine cl;
  std::string error;
  CHECK(ParseArgs({"--config", dir.Sub("absent.toml")}, &cl, &error) == 2);
  CHECK(error == "cannot read the configuration file " + dir.Sub("absent.toml"));
  const std::string bad = WriteFile(dir, "bad.toml", "id = 1\n\nlistne = \"x:1\"\n");
  CHECK(ParseArgs({"--config=" + bad}, &cl, &error) == 2);
  CHECK(error == bad + ":3: unknown key 'listne'");
}

TEST_CASE("node flags: the file gives the options, and flags override it", "[node][config]") {
  TempDir dir;
  const std::string path = WriteFile(dir, "node.toml", kEveryKey);
  NodeCommandLine cl;
  std::string error;
  // The file alone: --id and --data are not required when it gives them.
  REQUIRE(ParseArgs({"--config", path}, &cl, &error) == node_tool::kRunNode);
  CHECK(cl.config_path == path);
  CHECK(cl.options.id == 7);
  CHECK(cl.options.data_dir == "/var/lib/shardkv");
  CHECK(cl.options.tombstone_grace_ms == 3600u * 1000);
  CHECK(cl.log_level == "debug");

  // Every flag given wins over its key; the keys without a flag given stay.
  NodeCommandLine over;
  REQUIRE(ParseArgs({"--id",
                     "8",
                     "--config",
                     path,
                     "--cluster-id",
                     "9",
                     "--listen",
                     "127.0.0.1:0",
                     "--advertise",
                     "127.0.0.2:7200",
                     "--data",
                     dir.Sub("d"),
                     "--seeds",
                     "127.0.0.1:1,127.0.0.1:2",
                     "--threads",
                     "1",
                     "--log-level",
                     "warn",
                     "--tombstone-grace",
                     "60",
                     "--max-key-bytes",
                     "10",
                     "--max-value-bytes",
                     "20",
                     "--auth-secret-file",
                     "s",
                     "--client-secret-file",
                     "cs",
                     "--tls-cert",
                     "c",
                     "--tls-key",
                     "k",
                     "--tls-ca",
                     "a"},
                    &over, &error) == node_tool::kRunNode);
  INFO(error);
  const NodeOptions& o = over.options;
  CHECK(o.id == 8);
  CHECK(o.cluster_id == 9);
  CHECK(o.listen == "127.0.0.1:0");
  CHECK(o.advertise == "127.0.0.2:7200");
  CHECK(o.data_dir == dir.Sub("d"));
  CHECK(o.seeds == std::vector<std::string>{"127.0.0.1:1", "127.0.0.1:2"});
  CHECK(o.io_threads == 1);
  CHECK(over.log_level == "warn");
  CHECK(o.tombstone_grace_ms == 60000);
  CHECK(o.max_key_bytes == 10);
  CHECK(o.max_value_bytes == 20);
  CHECK(o.auth_secret_file == "s");
  CHECK(o.client_secret_file == "cs");
  CHECK(o.tls_cert_file == "c");
  CHECK(o.tls_key_file == "k");
  CHECK(o.tls_ca_file == "a");
  CHECK(o.sync);      // from the file (no flag turns it off)
  CHECK(o.insecure);  // from the file

  // Without a file, --id and --data stay required, and the new flags parse.
  NodeCommandLine bare;
  CHECK(ParseArgs({"--data", dir.Sub("x")}, &bare, &error) == 2);
  CHECK(error.find("--id") != std::string::npos);
  const std::string partial = WriteFile(dir, "partial.toml", "id = 3\n");
  CHECK(ParseArgs({"--config", partial}, &bare, &error) == 2);
  CHECK(error.find("--data") != std::string::npos);
  REQUIRE(ParseArgs({"--config", partial, "--data", dir.Sub("x"), "--insecure", "--sync"}, &bare,
                    &error) == node_tool::kRunNode);
  CHECK(bare.options.id == 3);
  CHECK(bare.options.insecure);
  CHECK(bare.options.sync);
  CHECK(bare.options.advertise.empty());
}

TEST_CASE("node config: [repair] and its flags set background anti-entropy", "[node][config]") {
  // The defaults: on, the period from the tombstone grace (grace / 10, at least a second).
  NodeOptions defaults;
  CHECK(defaults.background_repair);
  CHECK(defaults.repair_period_ms == 0);
  CHECK(EffectiveRepairPeriodMs(defaults) == defaults.tombstone_grace_ms / 10);
  defaults.tombstone_grace_ms = 60000;
  CHECK(EffectiveRepairPeriodMs(defaults) == 6000);
  defaults.tombstone_grace_ms = 2000;
  CHECK(EffectiveRepairPeriodMs(defaults) == kMinRepairPeriodMs);
  defaults.repair_period_ms = 2500;
  CHECK(EffectiveRepairPeriodMs(defaults) == 2500);

  NodeConfig c;
  REQUIRE(Parse("[repair]\nperiod = 3000\nrate = 7\n", &c).ok());
  CHECK(c.options.background_repair);
  CHECK(c.options.repair_period_ms == 3000);
  CHECK(c.options.repair_rate == 7);
  CHECK(ErrorOf("[repair]\nperiod = 999\n").find("'repair.period' must be between 1000 and") !=
        std::string::npos);
  CHECK(ErrorOf("[repair]\nrate = 0\n").find("'repair.rate' must be between 1 and") !=
        std::string::npos);
  CHECK(ErrorOf("[repair]\nbackground = 1\n").find("'repair.background'") != std::string::npos);
  CHECK(ErrorOf("[repair]\nperiod_ms = 1000\n") ==
        "/etc/shardkv/node.toml:2: unknown key 'repair.period_ms'");

  // Flags override the file; --no-background-repair turns it off.
  TempDir dir;
  const std::string path = WriteFile(dir, "node.toml", "[repair]\nperiod = 3000\nrate = 7\n");
  NodeCommandLine cl;
  std::string error;
  REQUIRE(ParseArgs({"--config", path, "--id", "1", "--data", dir.Sub("d"), "--repair-period",
                     "4000", "--repair-rate", "9", "--no-background-repair"},
                    &cl, &error) == node_tool::kRunNode);
  INFO(error);
  CHECK_FALSE(cl.options.background_repair);
  CHECK(cl.options.repair_period_ms == 4000);
  CHECK(cl.options.repair_rate == 9);
  CHECK(ValidateNodeOptions(cl.options).ok());
  NodeCommandLine bad;
  CHECK(ParseArgs({"--id", "1", "--data", dir.Sub("d"), "--repair-period", "10"}, &bad, &error) ==
        2);
  CHECK(error.find("--repair-period") != std::string::npos);
  CHECK(ParseArgs({"--id", "1", "--data", dir.Sub("d"), "--repair-rate", "0"}, &bad, &error) == 2);
  // Options given directly are validated the same way.
  NodeOptions direct;
  direct.data_dir = dir.Sub("d");
  direct.repair_period_ms = 10;
  CHECK_THAT(ValidateNodeOptions(direct).message(), Catch::Contains("--repair-period"));
  direct.repair_period_ms = 0;
  direct.repair_rate = 0;
  CHECK_THAT(ValidateNodeOptions(direct).message(), Catch::Contains("--repair-rate"));
}
