// TLS end to end: real shardkv-node processes started with --tls-* and a secret, formed with
// `shardkv cluster init` over TLS, then data commands through the CLI with the certificates given
// as flags, as environment variables and in a profile; clients without TLS, with a certificate of
// another CA, or with a node's expired certificate are refused with exit 3 and a message.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "integration/background_process.h"
#include "testing/cli_harness.h"
#include "testing/cluster_util.h"
#include "testing/subprocess.h"
#include "testing/temp_dir.h"
#include "testing/test_pki.h"

namespace {

using shardkv::testing::BackgroundProcess;
using shardkv::testing::Contains;
using shardkv::testing::ProcessResult;
using shardkv::testing::TestCert;

class TlsNodes {
 public:
  TlsNodes() {
    secret_ = dir_.Write("secret", "tls-cluster-secret-0123456789\n");
    ::chmod(secret_.c_str(), 0600);
    client_ = ca_.Issue("cli", {});
  }
  const shardkv::testing::TestPki& ca() const { return ca_; }
  shardkv::testing::TestPki& ca() { return ca_; }
  shardkv::testing::TestPki& other() { return other_; }
  const std::string& secret() const { return secret_; }
  const shardkv::testing::TempDir& dir() const { return dir_; }

  std::vector<std::string> NodeArgs(int id, const TestCert& cert) const {
    const std::string data = dir_.Sub("node-" + std::to_string(id));
    return {SHARDKV_NODE_PATH, "--id",        std::to_string(id),   "--data",   data,
            "--listen",        "127.0.0.1:0", "--auth-secret-file", secret_,    "--tls-cert",
            cert.cert_file,    "--tls-key",   cert.key_file,        "--tls-ca", ca_.ca_file()};
  }
  void Start(int id) {
    TestCert cert = ca_.Issue("node" + std::to_string(id), {"IP:127.0.0.1"});
    const std::string data = dir_.Sub("node-" + std::to_string(id));
    procs_.push_back(std::make_unique<BackgroundProcess>(NodeArgs(id, cert), data + ".log"));
    const std::string address = shardkv::testing::WaitForPortFile(data, std::chrono::seconds(30));
    REQUIRE_FALSE(address.empty());
    addresses_.push_back(address);
  }
  std::string All() const {
    std::string out;
    for (const auto& a : addresses_) out += (out.empty() ? "" : ",") + a;
    return out;
  }
  const std::string& operator[](size_t i) const { return addresses_[i]; }
  // The client's TLS flags (and the secret).
  std::vector<std::string> Flags(const TestCert* cert = nullptr,
                                 const std::string* ca = nullptr) const {
    const TestCert& c = cert != nullptr ? *cert : client_;
    return {"--auth-secret-file", secret_,     "--tls-ca",  ca != nullptr ? *ca : ca_.ca_file(),
            "--tls-cert",         c.cert_file, "--tls-key", c.key_file};
  }
  // `with_dir`: a --dir that does not exist, so nothing local is used (without it, a profile's
  // cluster applies).
  ProcessResult Run(std::vector<std::string> args, const std::vector<std::string>& flags,
                    bool with_dir = true) const {
    args.insert(args.begin(), SHARDKV_CLI_PATH);
    args.insert(args.end(), flags.begin(), flags.end());
    if (with_dir) {
      args.push_back("--dir");
      args.push_back(dir_.Sub("no-such-dir"));
    }
    ProcessResult r = shardkv::testing::RunProcess(args, std::chrono::seconds(60));
    UNSCOPED_INFO(r.Text());
    return r;
  }

 private:
  shardkv::testing::TempDir dir_;
  shardkv::testing::TestPki ca_{dir_.path(), "cluster"};
  shardkv::testing::TestPki other_{dir_.path(), "other"};
  std::string secret_;
  TestCert client_;
  std::vector<std::unique_ptr<BackgroundProcess>> procs_;
  std::vector<std::string> addresses_;
};

}  // namespace

TEST_CASE("tls: a cluster of three TLS nodes formed and used through the CLI", "[multiprocess]") {
  TlsNodes n;
  for (int id = 1; id <= 3; ++id) n.Start(id);
  const std::string all = n.All();

  ProcessResult r = n.Run({"cluster", "init", all, "--yes", "--json"}, n.Flags());
  REQUIRE(r.exit_code == 0);
  CHECK(Contains(r.out, "\"epoch\":1"));

  REQUIRE(n.Run({"put", "--cluster", all, "user:1", "alice"}, n.Flags()).exit_code == 0);
  // Read at ALL from the third node: the write reached every replica over node-to-node TLS.
  r = n.Run({"get", "--cluster", n[2], "--consistency", "all", "user:1"}, n.Flags());
  REQUIRE(r.exit_code == 0);
  CHECK(r.out == "alice");
  r = n.Run({"load", "--cluster", all, "--count", "200", "--prefix", "tls:"}, n.Flags());
  CHECK(r.exit_code == 0);
  r = n.Run({"verify", "--cluster", n[1], "--count", "200", "--prefix", "tls:"}, n.Flags());
  CHECK(r.exit_code == 0);

  SECTION("the certificates from the environment and from a profile") {
    const std::string profile =
        n.dir().Write("cli.toml", "cluster = \"" + all + "\"\nauth_secret_file = \"" + n.secret() +
                                      "\"\ntls_ca_file = \"" + n.ca().ca_file() + "\"\n");
    // The CA from the profile, the client certificate from the environment.
    const std::vector<std::string> flags = n.Flags();
    ::setenv("SHARDKV_TLS_CERT", flags[5].c_str(), 1);
    ::setenv("SHARDKV_TLS_KEY", flags[7].c_str(), 1);
    ::setenv("SHARDKV_DIR", "", 1);
    r = n.Run({"get", "--profile", profile, "user:1"}, {}, /*with_dir=*/false);
    ::unsetenv("SHARDKV_DIR");
    ::unsetenv("SHARDKV_TLS_CERT");
    ::unsetenv("SHARDKV_TLS_KEY");
    CHECK(r.exit_code == 0);
    CHECK(r.out == "alice");
  }
  SECTION("a client without TLS") {
    r = n.Run({"get", "--cluster", all, "user:1"}, {"--auth-secret-file", n.secret()});
    CHECK(r.exit_code == 3);
  }
  SECTION("a client certificate from another CA") {
    TestCert foreign = n.other().Issue("foreign-cli", {});
    const std::string other_ca = n.other().ca_file();
    r = n.Run({"get", "--cluster", all, "user:1"}, n.Flags(&foreign, &other_ca));
    CHECK(r.exit_code == 3);
    CHECK(Contains(r.err, "TLS handshake failed"));
  }
  SECTION("only some of the TLS flags") {
    r = n.Run({"get", "--cluster", all, "user:1"},
              {"--auth-secret-file", n.secret(), "--tls-ca", n.ca().ca_file()});
    CHECK(r.exit_code == 2);
    CHECK(Contains(r.err, "go together"));
  }
}

TEST_CASE("tls: a node refuses to start with a certificate it cannot use", "[multiprocess]") {
  TlsNodes n;
  SECTION("expired") {
    TestCert expired = n.ca().Issue("expired", {"IP:127.0.0.1"}, -7200, -3600);
    ProcessResult r =
        shardkv::testing::RunProcess(n.NodeArgs(1, expired), std::chrono::seconds(30));
    CHECK(r.exit_code == 1);
    CHECK(Contains(r.Text(), "--tls-cert"));
    CHECK(Contains(r.Text(), "expired on"));
  }
  SECTION("from another CA") {
    TestCert foreign = n.other().Issue("foreign", {"IP:127.0.0.1"});
    ProcessResult r =
        shardkv::testing::RunProcess(n.NodeArgs(1, foreign), std::chrono::seconds(30));
    CHECK(r.exit_code == 1);
    CHECK(Contains(r.Text(), "does not verify against the CA in --tls-ca"));
  }
}
