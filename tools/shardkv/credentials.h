// Credentials: what the CLI proves itself with (the secret file and the TLS files), gathered from
// the flags, the environment and the profile (global_options.h), and handed the same way to
// every Client and Admin it creates.
#pragma once

#include <string>

namespace shardkv::cli {

struct Credentials {
  std::string auth_secret_file;  // --auth-secret-file / $SHARDKV_AUTH_SECRET_FILE / profile
  std::string tls_ca_file;       // --tls-ca / $SHARDKV_TLS_CA / profile
  std::string tls_cert_file;     // --tls-cert / $SHARDKV_TLS_CERT / profile
  std::string tls_key_file;      // --tls-key / $SHARDKV_TLS_KEY / profile

  // ClientOptions and AdminOptions name the fields alike.
  template <typename Options>
  void ApplyTo(Options* o) const {
    o->auth_secret_file = auth_secret_file;
    o->tls_ca_file = tls_ca_file;
    o->tls_cert_file = tls_cert_file;
    o->tls_key_file = tls_key_file;
  }
};

}  // namespace shardkv::cli
