#include "node_config.h"

#include <toml++/toml.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <sstream>
#include <string_view>

namespace shardkv::node_tool {
namespace {

// One key of the file: where it goes, and how its value is checked.
struct Key {
  // Sets the value of `node` into `config`, or returns why it cannot ("must be ...").
  std::function<std::string(const toml::node& node, NodeConfig* config)> apply;
};

std::string TypeName(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a float";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date or time";
  }
}

// An integer in [min, max] into the field.
template <typename T>
Key IntegerField(std::function<T*(NodeConfig*)> field, uint64_t min, uint64_t max) {
  return Key{[field, min, max](const toml::node& node, NodeConfig* c) -> std::string {
    const auto* v = node.as_integer();
    if (v == nullptr) return "must be an integer, not " + TypeName(node);
    const int64_t got = v->get();
    if (got < 0 || static_cast<uint64_t>(got) < min || static_cast<uint64_t>(got) > max) {
      return "must be between " + std::to_string(min) + " and " + std::to_string(max) + ", not " +
             std::to_string(got);
    }
    *field(c) = static_cast<T>(got);
    return "";
  }};
}

Key Boolean(std::function<bool*(NodeConfig*)> field) {
  return Key{[field](const toml::node& node, NodeConfig* c) -> std::string {
    const auto* v = node.as_boolean();
    if (v == nullptr) return "must be true or false, not " + TypeName(node);
    *field(c) = v->get();
    return "";
  }};
}

// A non-empty string; `check` (may be empty) refuses bad ones with a reason.
Key String(std::function<std::string*(NodeConfig*)> field,
           std::function<std::string(const std::string&)> check = {}) {
  return Key{[field, check](const toml::node& node, NodeConfig* c) -> std::string {
    const auto* v = node.as_string();
    if (v == nullptr) return "must be a string, not " + TypeName(node);
    const std::string& text = v->get();
    if (text.empty()) return "must not be empty";
    if (check) {
      if (std::string why = check(text); !why.empty()) return why;
    }
    *field(c) = text;
    return "";
  }};
}

// Checks one address with ValidateNodeOptions (the rules the flags follow), and says what is
// wrong with it in the file's words: "'x' is not host:port" rather than "--listen 'x' ...".
std::function<std::string(const std::string&)> AddressCheck(std::string_view flag,
                                                            void (*set)(NodeOptions*,
                                                                        const std::string&)) {
  return [flag, set](const std::string& text) -> std::string {
    NodeOptions probe;
    probe.data_dir = "unused";
    probe.insecure = true;  // the address's form only: protected mode judges the whole options
    set(&probe, text);
    const Status s = ValidateNodeOptions(probe);
    if (s.ok()) return "";
    std::string why = s.message();
    if (why.rfind(flag, 0) == 0) why = why.substr(flag.size() + 1);
    return why;
  };
}

const std::map<std::string, Key>& Keys() {
  static const auto* keys = new std::map<std::string, Key>{
      {"id", IntegerField<uint32_t>([](NodeConfig* c) { return &c->options.id; }, 1, kMaxNodeId)},
      {"cluster_id",
       // A cluster id is any 64-bit number; TOML integers stop at 2^63-1, so a string of digits
       // is accepted too (cluster.conf's ids are often above that).
       Key{[](const toml::node& node, NodeConfig* c) -> std::string {
         if (const auto* v = node.as_integer()) {
           if (v->get() < 1) return "must be a positive number, not " + std::to_string(v->get());
           c->options.cluster_id = static_cast<uint64_t>(v->get());
           return "";
         }
         const auto* s = node.as_string();
         if (s == nullptr) return "must be an integer or a string of digits, not " + TypeName(node);
         const std::string& text = s->get();
         uint64_t id = 0;
         bool ok = !text.empty() && text.size() <= 20 &&
                   text.find_first_not_of("0123456789") == std::string::npos;
         for (char ch : text) {
           if (!ok) break;
           const uint64_t digit = static_cast<uint64_t>(ch - '0');
           if (id > (std::numeric_limits<uint64_t>::max() - digit) / 10) ok = false;
           id = id * 10 + digit;
         }
         if (!ok || id == 0) return "'" + text + "' is not a cluster id (a positive number)";
         c->options.cluster_id = id;
         return "";
       }}},
      {"listen", String([](NodeConfig* c) { return &c->options.listen; },
                        AddressCheck("--listen",
                                     [](NodeOptions* o, const std::string& v) { o->listen = v; }))},
      {"advertise",
       String([](NodeConfig* c) { return &c->options.advertise; },
              AddressCheck("--advertise",
                           [](NodeOptions* o, const std::string& v) { o->advertise = v; }))},
      {"redis.listen",
       String([](NodeConfig* c) { return &c->options.redis_listen; },
              AddressCheck("--redis-listen",
                           [](NodeOptions* o, const std::string& v) { o->redis_listen = v; }))},
      {"redis.allow_flush", Boolean([](NodeConfig* c) { return &c->options.redis_allow_flush; })},
      {"data_dir", String([](NodeConfig* c) { return &c->options.data_dir; })},
      {"seeds", Key{[](const toml::node& node, NodeConfig* c) -> std::string {
         const auto* array = node.as_array();
         if (array == nullptr) {
           return "must be an array of \"host:port\" strings, not " + TypeName(node);
         }
         std::vector<std::string> seeds;
         const auto check =
             AddressCheck("--seeds", [](NodeOptions* o, const std::string& v) { o->seeds = {v}; });
         for (const toml::node& element : *array) {
           const auto* s = element.as_string();
           if (s == nullptr) return "must hold only strings, not " + TypeName(element);
           if (std::string why = check(s->get()); !why.empty()) return why;
           seeds.push_back(s->get());
         }
         c->options.seeds = std::move(seeds);
         return "";
       }}},
      {"threads",
       IntegerField<int>([](NodeConfig* c) { return &c->options.io_threads; }, 1, kMaxIoThreads)},
      {"sync", Boolean([](NodeConfig* c) { return &c->options.sync; })},
      {"log_level", String([](NodeConfig* c) { return &c->log_level; },
                           [](const std::string& text) -> std::string {
                             for (const char* level : kLogLevels) {
                               if (text == level) return "";
                             }
                             return "'" + text +
                                    "' is not one of trace, debug, info, warn, error, critical, "
                                    "off";
                           })},
      {"tombstone_grace_s", Key{[](const toml::node& node, NodeConfig* c) -> std::string {
         uint64_t seconds = 0;
         const Key k = IntegerField<uint64_t>([&seconds](NodeConfig*) { return &seconds; }, 1,
                                              kMaxTombstoneGraceSeconds);
         if (std::string why = k.apply(node, c); !why.empty()) return why;
         c->options.tombstone_grace_ms = seconds * 1000;
         return "";
       }}},
      {"limits.max_key_bytes",
       IntegerField<size_t>([](NodeConfig* c) { return &c->options.max_key_bytes; }, 1,
                            kMaxKeyBytesLimit)},
      {"limits.max_value_bytes",
       IntegerField<size_t>([](NodeConfig* c) { return &c->options.max_value_bytes; }, 1,
                            kMaxValueBytesLimit)},
      {"auth.secret_file", String([](NodeConfig* c) { return &c->options.auth_secret_file; })},
      {"auth.client_secret_file",
       String([](NodeConfig* c) { return &c->options.client_secret_file; })},
      {"auth.insecure", Boolean([](NodeConfig* c) { return &c->options.insecure; })},
      {"metrics.listen",
       String([](NodeConfig* c) { return &c->options.metrics_listen; },
              AddressCheck("--metrics-listen",
                           [](NodeOptions* o, const std::string& v) { o->metrics_listen = v; }))},
      {"repair.background", Boolean([](NodeConfig* c) { return &c->options.background_repair; })},
      {"repair.period",
       IntegerField<uint64_t>([](NodeConfig* c) { return &c->options.repair_period_ms; },
                              kMinRepairPeriodMs, kMaxRepairPeriodMs)},
      {"repair.rate", IntegerField<uint64_t>([](NodeConfig* c) { return &c->options.repair_rate; },
                                             1, kMaxRepairRate)},
      {"tls.cert", String([](NodeConfig* c) { return &c->options.tls_cert_file; })},
      {"tls.key", String([](NodeConfig* c) { return &c->options.tls_key_file; })},
      {"tls.ca", String([](NodeConfig* c) { return &c->options.tls_ca_file; })},
  };
  return *keys;
}

// A section is the prefix of a dotted key ("redis" of "redis.listen"), so a key added to Keys()
// in a new section is accepted in its [section] without a second list to keep in step.
bool IsSection(std::string_view name) {
  const std::string prefix = std::string(name) + ".";
  return std::any_of(Keys().begin(), Keys().end(),
                     [&](const auto& key) { return key.first.rfind(prefix, 0) == 0; });
}

Status At(const std::string& path, const toml::source_region& where, const std::string& what) {
  return Status::InvalidArgument(path + ":" + std::to_string(where.begin.line) + ": " + what);
}

// Applies every key of `table` (the top level, or the section `prefix`).
Status ApplyTable(const toml::table& table, const std::string& prefix, const std::string& path,
                  NodeConfig* config) {
  for (const auto& [key, node] : table) {
    const std::string name =
        prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
    // A key's own position when toml++ has it (a key of a dotted or inline table may not).
    const toml::source_region& where = key.source().begin.line != 0 ? key.source() : node.source();
    if (prefix.empty() && IsSection(name)) {
      const auto* section = node.as_table();
      if (section == nullptr) {
        return At(path, where,
                  "'" + name + "' must be a table ([" + name + "]), not " + TypeName(node));
      }
      SHARDKV_RETURN_IF_ERROR(ApplyTable(*section, name, path, config));
      continue;
    }
    auto it = Keys().find(name);
    if (it == Keys().end()) return At(path, where, "unknown key '" + name + "'");
    if (std::string why = it->second.apply(node, config); !why.empty()) {
      return At(path, where, "'" + name + "' " + why);
    }
    config->keys.insert(name);
  }
  return Status::OK();
}

}  // namespace

Status ParseNodeConfig(const std::string& text, const std::string& path, NodeConfig* config) {
  toml::table table;
  // toml++ (Debian's shared library is built with exceptions) reports syntax errors by
  // throwing: caught here, so nothing escapes this module.
  try {
    table = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.source().begin.line) + ": " +
                                   std::string(e.description()));
  } catch (const std::exception& e) {
    return Status::InvalidArgument(path + ": " + e.what());
  }
  return ApplyTable(table, "", path, config);
}

std::vector<std::string> NodeConfigKeys() {
  std::vector<std::string> out;
  for (const auto& [name, key] : Keys()) out.push_back(name);
  return out;
}

Status LoadNodeConfig(const std::string& path, NodeConfig* config) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument("cannot read the configuration file " + path);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status::InvalidArgument("cannot read the configuration file " + path);
  return ParseNodeConfig(text.str(), path, config);
}

}  // namespace shardkv::node_tool
