// TLS on the multi-host bed: nodes in their own namespaces, each with a certificate for its own
// bed address, formed and used from the root namespace over TLS (so every node-to-node call and
// every client call crosses a veth link encrypted, and each side checks the other's certificate
// against the advertised address it dialed), and a node whose certificate names another host is
// refused by the CLI and by its peers.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "multihost/scenario_macros.h"
#include "testing/test_pki.h"

using shardkv::multihost::Command;
using shardkv::testing::TestCert;
using shardkv::testing::TestPki;

namespace {

std::string HostOf(const std::string& address) { return address.substr(0, address.rfind(':')); }

// Sets the CLI's TLS environment for the scope (the bed runs the CLI with this environment),
// and puts back what was there before.
class TlsEnv {
 public:
  TlsEnv(const std::string& ca, const TestCert& c) {
    Set("SHARDKV_TLS_CA", ca);
    Set("SHARDKV_TLS_CERT", c.cert_file);
    Set("SHARDKV_TLS_KEY", c.key_file);
  }
  ~TlsEnv() {
    for (const auto& [name, value] : saved_) {
      if (value.empty()) {
        ::unsetenv(name.c_str());
      } else {
        ::setenv(name.c_str(), value.c_str(), 1);
      }
    }
  }

 private:
  void Set(const std::string& name, const std::string& value) {
    const char* old = std::getenv(name.c_str());
    saved_.emplace_back(name, old != nullptr ? old : "");
    ::setenv(name.c_str(), value.c_str(), 1);
  }
  std::vector<std::pair<std::string, std::string>> saved_;
};

}  // namespace

TEST_CASE("TLS across hosts: certificates for the advertised addresses", "[multihost][tls]") {
  MULTIHOST_SCENARIO(s, "tls", 4);
  TestPki ca(s.bed().dir(), "bed");
  auto tls_args = [&](int host, const std::string& named_host) {
    TestCert cert = ca.Issue("node" + std::to_string(host), {"IP:" + named_host});
    return std::vector<std::string>{"--tls-cert",  cert.cert_file, "--tls-key",
                                    cert.key_file, "--tls-ca",     ca.ca_file()};
  };
  for (int h = 1; h <= 3; ++h) {
    REQUIRE(s.bed().StartNode(h, 0, tls_args(h, HostOf(s.bed().Address(h)))).ok());
  }
  TlsEnv env(ca.ca_file(), ca.Issue("operator", {}));
  const shardkv::Status formed = s.Form(3);
  INFO(formed.ToString());
  REQUIRE(formed.ok());
  Command put = s.bed().Cli(0, s.bed().Addresses({1}), {"put", "tls-key", "tls-value"});
  INFO(put.out);
  REQUIRE(put.exit_code == 0);
  // ALL from node 3: node 3 reads every replica over node-to-node TLS.
  Command get = s.bed().Cli(0, s.bed().Addresses({3}), {"get", "--consistency", "all", "tls-key"});
  INFO(get.out);
  REQUIRE(get.exit_code == 0);
  CHECK(get.out.find("tls-value") != std::string::npos);

  // Node 4's certificate names node 2's address: the CLI refuses it, and so would its peers.
  REQUIRE(s.bed().StartNode(4, 0, tls_args(4, HostOf(s.bed().Address(2)))).ok());
  Command join = s.Cli(0, {1, 2, 3}, {"cluster", "join", s.bed().Address(4)});
  INFO(join.out);
  CHECK(join.exit_code == 3);
  CHECK(join.out.find("does not name " + HostOf(s.bed().Address(4))) != std::string::npos);

  // A client of another CA is refused; the cluster goes on serving the right one.
  TestPki other(s.bed().dir(), "other");
  {
    TlsEnv foreign(other.ca_file(), other.Issue("stranger", {}));
    Command refused = s.bed().Cli(0, s.bed().Addresses({2}), {"get", "tls-key"});
    INFO(refused.out);
    CHECK(refused.exit_code == 3);
    CHECK(refused.out.find("TLS handshake failed") != std::string::npos);
  }
  Command again = s.bed().Cli(0, s.bed().Addresses({2}), {"get", "tls-key"});
  INFO(again.out);
  CHECK(again.exit_code == 0);
  CHECK(s.Teardown().empty());
}
