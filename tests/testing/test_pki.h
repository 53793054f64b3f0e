// TestPki: a throw-away certificate authority for TLS tests. Certificates are made at test time
// with OpenSSL's API (no fixture files that expire, no openssl binary), in the test's own
// directory: a CA, leaves it signs with the names and validity a test wants (an expired one, one
// for another host), and a second, unrelated CA to show that its certificates are refused.
//
// Keys are P-256 (fast to generate); certificates are SHA-256 signed.
//
// Thread-safety: one TestPki per thread.
#pragma once

#include <string>
#include <vector>

namespace shardkv::testing {

struct TestCert {
  std::string cert_file;
  std::string key_file;
};

class TestPki {
 public:
  // Creates the CA's key and self-signed certificate in `dir` (which must exist) as
  // `<name>-ca.pem` / `<name>-ca.key`. Aborts the test binary on an OpenSSL failure.
  TestPki(std::string dir, std::string name);
  ~TestPki();
  TestPki(const TestPki&) = delete;
  TestPki& operator=(const TestPki&) = delete;

  const std::string& ca_file() const { return ca_.cert_file; }

  // A leaf signed by this CA, valid from now + not_before_s to now + not_after_s (seconds; give
  // a negative not_after_s for an expired certificate), with subjectAltName entries such as
  // "IP:127.0.0.1" or "DNS:node1.test". Usable as a server and as a client certificate.
  TestCert Issue(const std::string& name, const std::vector<std::string>& alt_names,
                 long not_before_s = -3600, long not_after_s = 24 * 3600);

 private:
  std::string dir_;
  std::string name_;
  TestCert ca_;
  void* ca_key_ = nullptr;   // EVP_PKEY*
  void* ca_cert_ = nullptr;  // X509*
  long serial_ = 1;
};

}  // namespace shardkv::testing
