#include "cli_profile.h"

#include <toml++/toml.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "kv_limits.h"
#include "shardkv/client.h"

namespace shardkv::cli {
namespace {

std::string Where(const std::string& path, const toml::node& n) {
  const toml::source_region& r = n.source();
  return path + ":" + std::to_string(r.begin.line);
}

Status Bad(const std::string& path, const toml::node& n, std::string_view key,
           const std::string& why) {
  return Status::InvalidArgument(Where(path, n) + ": key '" + std::string(key) + "': " + why);
}

Status AddAddresses(const std::string& path, const toml::node& n, const std::string& text,
                    std::vector<std::string>* out) {
  std::stringstream in(text);
  std::string one;
  bool any = false;
  while (std::getline(in, one, ',')) {
    std::string host;
    uint16_t port = 0;
    if (Status s = ParseHostPort(one, &host, &port); !s.ok()) {
      return Bad(path, n, "cluster", "bad address \"" + one + "\": " + s.message());
    }
    out->push_back(one);
    any = true;
  }
  if (!any) return Bad(path, n, "cluster", "no address");
  return Status::OK();
}

Status ParseCluster(const std::string& path, const toml::node& n, CliProfile* p) {
  if (const auto* s = n.as_string()) return AddAddresses(path, n, s->get(), &p->cluster);
  const auto* array = n.as_array();
  if (array == nullptr) {
    return Bad(path, n, "cluster", "expected an array of \"host:port\" strings or one string");
  }
  for (const toml::node& item : *array) {
    const auto* s = item.as_string();
    if (s == nullptr) return Bad(path, item, "cluster", "every entry must be a \"host:port\"");
    if (Status st = AddAddresses(path, item, s->get(), &p->cluster); !st.ok()) return st;
  }
  if (p->cluster.empty()) return Bad(path, n, "cluster", "no address");
  return Status::OK();
}

Status ParseClusterId(const std::string& path, const toml::node& n, CliProfile* p) {
  // 64-bit ids exceed TOML's signed integers: a string is accepted too (as status prints it).
  if (const auto* i = n.as_integer()) {
    if (i->get() <= 0) return Bad(path, n, "cluster_id", "must be positive");
    p->cluster_id = static_cast<uint64_t>(i->get());
    return Status::OK();
  }
  const auto* s = n.as_string();
  if (s == nullptr) return Bad(path, n, "cluster_id", "expected an integer or a string of digits");
  const std::string& text = s->get();
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || text[0] == '-' || *end != '\0' || errno != 0 || v == 0) {
    return Bad(path, n, "cluster_id", "\"" + text + "\" is no positive 64-bit integer");
  }
  p->cluster_id = v;
  return Status::OK();
}

Status ParseKey(const std::string& path, std::string_view key, const toml::node& n, CliProfile* p) {
  if (key == "cluster") return ParseCluster(path, n, p);
  if (key == "cluster_id") return ParseClusterId(path, n, p);
  std::string* file = key == "auth_secret_file" ? &p->credentials.auth_secret_file
                      : key == "tls_ca_file"    ? &p->credentials.tls_ca_file
                      : key == "tls_cert_file"  ? &p->credentials.tls_cert_file
                      : key == "tls_key_file"   ? &p->credentials.tls_key_file
                                                : nullptr;
  if (file != nullptr) {
    const auto* s = n.as_string();
    if (s == nullptr || s->get().empty()) return Bad(path, n, key, "expected a file path string");
    *file = s->get();
    return Status::OK();
  }
  if (key == "timeout_ms") {
    const auto* i = n.as_integer();
    if (i == nullptr) return Bad(path, n, key, "expected an integer");
    if (i->get() < limits::kMinTimeoutMs || i->get() > limits::kMaxTimeoutMs) {
      return Bad(path, n, key,
                 "must be between " + std::to_string(limits::kMinTimeoutMs) + " and " +
                     std::to_string(limits::kMaxTimeoutMs));
    }
    p->timeout_ms = static_cast<uint32_t>(i->get());
    return Status::OK();
  }
  if (key == "consistency") {
    const auto* s = n.as_string();
    if (s == nullptr) return Bad(path, n, key, "expected \"one\", \"quorum\" or \"all\"");
    if (s->get() != "one" && s->get() != "quorum" && s->get() != "all") {
      return Bad(path, n, key, "\"" + s->get() + "\" is not one, quorum or all");
    }
    p->consistency = s->get();
    return Status::OK();
  }
  return Bad(path, n, key,
             "unknown key (known: cluster, cluster_id, auth_secret_file, tls_ca_file, "
             "tls_cert_file, tls_key_file, timeout_ms, consistency)");
}

}  // namespace

StatusOr<CliProfile> ParseProfile(std::string_view text, const std::string& path) {
  toml::table table;
  try {
    table = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.source().begin.line) + ": " +
                                   std::string(e.description()));
  } catch (const std::exception& e) {
    return Status::InvalidArgument(path + ": " + e.what());
  }
  CliProfile p;
  p.path = path;
  for (const auto& [key, node] : table) {
    if (Status s = ParseKey(path, key.str(), node, &p); !s.ok()) return s;
  }
  return p;
}

std::string DefaultProfilePath() {
  if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/shardkv/cli.toml";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.config/shardkv/cli.toml";
  }
  return "";
}

StatusOr<CliProfile> LoadProfile(const std::string& explicit_path) {
  const std::string path = explicit_path.empty() ? DefaultProfilePath() : explicit_path;
  if (path.empty()) return CliProfile{};
  std::error_code ec;
  if (explicit_path.empty() && !std::filesystem::exists(path, ec)) {
    return CliProfile{};  // no default profile: nothing to apply
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::InvalidArgument("cannot read the profile " + path +
                                   (explicit_path.empty() ? "" : " (--profile)"));
  }
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::InvalidArgument("cannot read the profile " + path);
  return ParseProfile(text.str(), path);
}

}  // namespace shardkv::cli
