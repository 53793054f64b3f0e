// shardkv-node's metrics listener settings: the `[metrics] listen` key and the
// --metrics-listen flag (tools/shardkv-node), and ValidateNodeOptions's checks of the address.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "node_config.h"
#include "node_flags.h"
#include "shardkv/options.h"

using namespace shardkv;

namespace {

int ParseArgs(std::vector<std::string> args, node_tool::NodeCommandLine* out, std::string* error) {
  args.insert(args.begin(), "shardkv-node");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  return node_tool::ParseNodeCommandLine(static_cast<int>(argv.size()), argv.data(), out, error);
}

}  // namespace

TEST_CASE("metrics config: [metrics] listen sets metrics_listen, and bad values name the key") {
  node_tool::NodeConfig c;
  REQUIRE(
      node_tool::ParseNodeConfig("[metrics]\nlisten = \"127.0.0.1:9100\"\n", "n.toml", &c).ok());
  CHECK(c.options.metrics_listen == "127.0.0.1:9100");
  CHECK(c.keys.count("metrics.listen") == 1);

  node_tool::NodeConfig bad;
  Status s = node_tool::ParseNodeConfig("[metrics]\nlisten = \"no-port\"\n", "n.toml", &bad);
  CHECK(s.IsInvalidArgument());
  CHECK(s.message().find("n.toml:2") != std::string::npos);
  CHECK(s.message().find("metrics.listen") != std::string::npos);
  node_tool::NodeConfig unknown;
  s = node_tool::ParseNodeConfig("[metrics]\nlisten_port = 9100\n", "n.toml", &unknown);
  CHECK(s.message().find("unknown key 'metrics.listen_port'") != std::string::npos);
}

TEST_CASE("metrics config: --metrics-listen sets metrics_listen, and the default is none") {
  node_tool::NodeCommandLine none;
  std::string error;
  INFO(error);
  REQUIRE(ParseArgs({"--id", "1", "--data", "/tmp/x"}, &none, &error) == node_tool::kRunNode);
  CHECK(none.options.metrics_listen.empty());
  node_tool::NodeCommandLine set;
  REQUIRE(ParseArgs({"--id", "1", "--data", "/tmp/x", "--metrics-listen", "127.0.0.1:0"}, &set,
                    &error) == node_tool::kRunNode);
  CHECK(set.options.metrics_listen == "127.0.0.1:0");
}

TEST_CASE("metrics config: ValidateNodeOptions checks the metrics address and protected mode") {
  NodeOptions o;
  o.data_dir = "/tmp/unused";
  o.metrics_listen = "127.0.0.1:0";
  CHECK(ValidateNodeOptions(o).ok());
  o.metrics_listen = "[::1]:9100";
  CHECK(ValidateNodeOptions(o).ok());
  o.metrics_listen = "::1:9100";
  CHECK(ValidateNodeOptions(o).message().find("--metrics-listen") != std::string::npos);
  o.metrics_listen = "127.0.0.1:70000";
  CHECK(ValidateNodeOptions(o).message().find("--metrics-listen") != std::string::npos);
  o.metrics_listen = "10.0.0.1:9100";  // not loopback, no secret
  const Status refused = ValidateNodeOptions(o);
  CHECK(refused.IsInvalidArgument());
  CHECK(refused.message().find("--metrics-listen 10.0.0.1") != std::string::npos);
  o.insecure = true;
  CHECK(ValidateNodeOptions(o).ok());
}
