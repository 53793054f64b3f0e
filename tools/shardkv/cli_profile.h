// The CLI profile: defaults for the global flags, so that a user of a remote cluster does not
// type --cluster, --auth-secret-file and --cluster-id on every call. A TOML file:
//
//   cluster = ["10.0.0.1:7000", "10.0.0.2:7000"]   # or "10.0.0.1:7000,10.0.0.2:7000"
//   auth_secret_file = "/etc/shardkv/secret"
//   tls_ca_file = "/etc/shardkv/ca.pem"              # and tls_cert_file, tls_key_file
//   cluster_id = "1234567890"                      # or an integer
//   timeout_ms = 5000
//   consistency = "quorum"                         # one, quorum or all
//
// Read from --profile FILE (which must exist), else $XDG_CONFIG_HOME/shardkv/cli.toml, else
// ~/.config/shardkv/cli.toml (which may be missing). The command line beats the environment,
// which beats the profile. Any error (syntax, an unknown key, a wrong type or value) is
// InvalidArgument naming FILE:LINE and the key. toml++ throws on a parse error; the throw is
// caught here and never leaves this file.
//
// Thread-safety: pure functions (LoadProfile reads the environment and one file).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "credentials.h"
#include "shardkv/status.h"

namespace shardkv::cli {

struct CliProfile {
  std::string path;  // where it was read from; empty when there was none
  std::vector<std::string> cluster;
  Credentials credentials;  // auth_secret_file, tls_ca_file, tls_cert_file, tls_key_file
  uint64_t cluster_id = 0;
  std::optional<uint32_t> timeout_ms;
  std::optional<std::string> consistency;
};

// Parses a profile's text; `path` names it in messages.
StatusOr<CliProfile> ParseProfile(std::string_view text, const std::string& path);

// $XDG_CONFIG_HOME/shardkv/cli.toml, else $HOME/.config/shardkv/cli.toml ("" without either).
std::string DefaultProfilePath();

// `explicit_path` non-empty: that file, which must exist and be readable. Else the default path,
// where a missing file is an empty profile.
StatusOr<CliProfile> LoadProfile(const std::string& explicit_path);

}  // namespace shardkv::cli
