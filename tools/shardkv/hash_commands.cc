#include "hash_commands.h"

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cli_common.h"
#include "json_writer.h"
#include "kv_commands.h"
#include "kv_io.h"
#include "kv_limits.h"

namespace shardkv::cli {
namespace {

// A hash or set command's failure: a key holding another kind (WRONGTYPE) exits 1 with the node's
// message, as a refusal; the rest as any other failed command.
int FailHash(const GlobalOptions& g, const std::string& key, const Status& s, bool mutation) {
  if (s.reason() == Status::Reason::kWrongType || s.code() == Status::Code::kInvalidArgument) {
    return ReportError("WRONGTYPE: " + s.message(), kExitFailed);
  }
  return mutation ? FailMutation(g, key, s, true) : ReportError(s, ExitCodeFor(s));
}

// A hash or set write's answer: how many fields or members it added or removed, as a line or as
// {"key","added"|"removed"} with --json.
int PrintChanged(const GlobalOptions& g, const std::string& key, bool remove, uint32_t changed) {
  if (g.json) {
    JsonWriter w;
    w.Begin();
    BytesField(w, "key", key);
    w.Field(remove ? "removed" : "added", static_cast<uint64_t>(changed)).End();
    std::cout << w.str() << "\n";
  } else {
    std::cout << changed << "\n";
  }
  return kExitOk;
}

int DoWrite(const GlobalOptions& g, const std::string& key, const std::vector<std::string>& args,
            bool remove) {
  if (std::string why = CheckKey(key); !why.empty()) return ReportError(why, kExitUsage);
  if (!remove && args.size() % 2 != 0) {
    return ReportError("hset takes FIELD VALUE pairs", kExitUsage);
  }
  auto client = g.Connect();
  if (!client.ok()) return FailMutation(g, key, client.status(), false);
  StatusOr<uint32_t> changed = Status::Internal("not sent");
  if (remove) {
    changed = (*client)->HDel(key, args);
  } else {
    std::vector<std::pair<std::string, std::string>> fields;
    for (size_t i = 0; i + 1 < args.size(); i += 2) fields.emplace_back(args[i], args[i + 1]);
    changed = (*client)->HSet(key, fields);
  }
  if (!changed.ok()) return FailHash(g, key, changed.status(), true);
  return PrintChanged(g, key, remove, *changed);
}

// HGET (field given) or HGETALL: "not found" and exit 1 for a missing key or field.
int DoRead(const GlobalOptions& g, const std::string& key, const std::string* field) {
  if (std::string why = CheckKey(key); !why.empty()) return ReportError(why, kExitUsage);
  auto client = g.Connect();
  if (!client.ok()) return ReportError(client.status(), ExitCodeFor(client.status()));
  auto hash = (*client)->HGetAll(key);
  if (!hash.ok() && !hash.status().IsNotFound()) return FailHash(g, key, hash.status(), false);
  std::map<std::string, std::string> fields = hash.ok() ? std::move(*hash) : decltype(fields){};
  if (field != nullptr) {
    auto it = fields.find(*field);
    if (g.json) {
      JsonWriter w;
      w.Begin();
      BytesField(w, "key", key);
      BytesField(w, "field", *field);
      w.Field("found", it != fields.end());
      if (it != fields.end()) BytesField(w, "value", it->second);
      w.End();
      std::cout << w.str() << "\n";
      return it != fields.end() ? kExitOk : kExitFailed;
    }
    if (it == fields.end()) {
      std::fputs("not found\n", stderr);
      return kExitFailed;
    }
    std::cout << it->second << "\n";
    return kExitOk;
  }
  if (g.json) {
    JsonWriter w;
    w.Begin();
    BytesField(w, "key", key);
    w.Field("found", hash.ok());
    w.Key("fields").Begin();
    for (const auto& [name, value] : fields) BytesField(w, name, value);
    w.End();
    w.End();
    std::cout << w.str() << "\n";
    return hash.ok() ? kExitOk : kExitFailed;
  }
  if (!hash.ok()) {
    std::fputs("not found\n", stderr);
    return kExitFailed;
  }
  for (const auto& [name, value] : fields) std::cout << name << "\t" << value << "\n";
  return kExitOk;
}

// SADD or SREM: prints how many members were added or removed.
int DoSetWrite(const GlobalOptions& g, const std::string& key,
               const std::vector<std::string>& members, bool remove) {
  if (std::string why = CheckKey(key); !why.empty()) return ReportError(why, kExitUsage);
  for (const std::string& m : members) {
    if (m.size() > limits::kMaxKeyBytes) {
      return ReportError("a member is " + std::to_string(m.size()) + " bytes; the limit is " +
                             std::to_string(limits::kMaxKeyBytes),
                         kExitUsage);
    }
  }
  auto client = g.Connect();
  if (!client.ok()) return FailMutation(g, key, client.status(), false);
  StatusOr<uint32_t> changed =
      remove ? (*client)->SRem(key, members) : (*client)->SAdd(key, members);
  if (!changed.ok()) return FailHash(g, key, changed.status(), true);
  return PrintChanged(g, key, remove, *changed);
}

// SMEMBERS (member null) or SISMEMBER: exit 1 for a missing key, or a member not in the set.
int DoSetRead(const GlobalOptions& g, const std::string& key, const std::string* member) {
  if (std::string why = CheckKey(key); !why.empty()) return ReportError(why, kExitUsage);
  auto client = g.Connect();
  if (!client.ok()) return ReportError(client.status(), ExitCodeFor(client.status()));
  auto set = (*client)->SMembers(key);
  if (!set.ok() && !set.status().IsNotFound()) return FailHash(g, key, set.status(), false);
  const std::vector<std::string> members = set.ok() ? std::move(*set) : std::vector<std::string>{};
  if (member != nullptr) {
    const bool in = std::binary_search(members.begin(), members.end(), *member);
    if (g.json) {
      JsonWriter w;
      w.Begin();
      BytesField(w, "key", key);
      BytesField(w, "member", *member);
      w.Field("member_of", in).End();
      std::cout << w.str() << "\n";
    } else {
      std::cout << (in ? 1 : 0) << "\n";
    }
    return in ? kExitOk : kExitFailed;
  }
  if (g.json) {
    JsonWriter w;
    w.Begin();
    BytesField(w, "key", key);
    w.Field("found", set.ok());
    w.Key("members").BeginArray();
    // A member that is not UTF-8 as {"base64": ...}, so the output stays valid JSON.
    for (const std::string& m : members) {
      if (IsValidUtf8(m)) {
        w.Value(m);
      } else {
        w.Begin().Field("base64", Base64Encode(m)).End();
      }
    }
    w.EndArray();
    w.End();
    std::cout << w.str() << "\n";
    return set.ok() ? kExitOk : kExitFailed;
  }
  if (!set.ok()) {
    std::fputs("not found\n", stderr);
    return kExitFailed;
  }
  for (const std::string& m : members) std::cout << m << "\n";
  return kExitOk;
}

}  // namespace

void RegisterHashCommands(CLI::App& app, GlobalOptions* g, int* exit_code) {
  auto* hset = app.add_subcommand(
      "hset",
      "Set fields of the hash KEY, as redis HSET, and print how many were new. Fields set "
      "through different nodes at once all survive; a key holding a string exits 1");
  auto key = std::make_shared<std::string>();
  auto args = std::make_shared<std::vector<std::string>>();
  hset->add_option("KEY", *key, "Hash key")->required();
  hset->add_option("FIELD VALUE", *args, "Field value pairs")->required();
  hset->add_flag("--json", g->json, "JSON output: {\"key\",\"added\"}");
  hset->callback([=] { *exit_code = DoWrite(*g, *key, *args, false); });

  auto* hdel = app.add_subcommand(
      "hdel", "Delete fields of the hash KEY, as redis HDEL, and print how many existed");
  auto del_key = std::make_shared<std::string>();
  auto names = std::make_shared<std::vector<std::string>>();
  hdel->add_option("KEY", *del_key, "Hash key")->required();
  hdel->add_option("FIELD", *names, "Fields")->required();
  hdel->add_flag("--json", g->json, "JSON output: {\"key\",\"removed\"}");
  hdel->callback([=] { *exit_code = DoWrite(*g, *del_key, *names, true); });

  auto* hget = app.add_subcommand(
      "hget", "Print one field of the hash KEY, as redis HGET (exit 1 and 'not found' if absent)");
  auto get_key = std::make_shared<std::string>();
  auto field = std::make_shared<std::string>();
  hget->add_option("KEY", *get_key, "Hash key")->required();
  hget->add_option("FIELD", *field, "Field")->required();
  hget->add_flag("--json", g->json, "JSON output: {\"key\",\"field\",\"found\",\"value\"}");
  hget->callback([=] { *exit_code = DoRead(*g, *get_key, field.get()); });

  auto* hgetall = app.add_subcommand(
      "hgetall",
      "Print every field of the hash KEY, one 'FIELD<TAB>VALUE' line each in name order, as "
      "redis HGETALL (exit 1 and 'not found' if absent)");
  auto all_key = std::make_shared<std::string>();
  hgetall->add_option("KEY", *all_key, "Hash key")->required();
  hgetall->add_flag("--json", g->json, "JSON output: {\"key\",\"found\",\"fields\":{...}}");
  hgetall->callback([=] { *exit_code = DoRead(*g, *all_key, nullptr); });
}

void RegisterSetCommands(CLI::App& app, GlobalOptions* g, int* exit_code) {
  auto* sadd = app.add_subcommand(
      "sadd",
      "Add members to the set KEY, as redis SADD, and print how many were new. Members added "
      "through different nodes at once all survive, and an add wins over a remove that did not "
      "see it; a key holding another kind of value exits 1");
  auto add_key = std::make_shared<std::string>();
  auto added = std::make_shared<std::vector<std::string>>();
  sadd->add_option("KEY", *add_key, "Set key")->required();
  sadd->add_option("MEMBER", *added, "Members")->required();
  sadd->add_flag("--json", g->json, "JSON output: {\"key\",\"added\"}");
  sadd->callback([=] { *exit_code = DoSetWrite(*g, *add_key, *added, false); });

  auto* srem = app.add_subcommand(
      "srem", "Remove members of the set KEY, as redis SREM, and print how many were in it");
  auto rem_key = std::make_shared<std::string>();
  auto removed = std::make_shared<std::vector<std::string>>();
  srem->add_option("KEY", *rem_key, "Set key")->required();
  srem->add_option("MEMBER", *removed, "Members")->required();
  srem->add_flag("--json", g->json, "JSON output: {\"key\",\"removed\"}");
  srem->callback([=] { *exit_code = DoSetWrite(*g, *rem_key, *removed, true); });

  auto* smembers = app.add_subcommand(
      "smembers",
      "Print the members of the set KEY, one per line in byte order, as redis SMEMBERS (exit 1 "
      "and 'not found' if absent)");
  auto members_key = std::make_shared<std::string>();
  smembers->add_option("KEY", *members_key, "Set key")->required();
  smembers->add_flag(
      "--json", g->json,
      "JSON output: {\"key\",\"found\",\"members\":[...]} (a member that is not UTF-8 "
      "as {\"base64\":...})");
  smembers->callback([=] { *exit_code = DoSetRead(*g, *members_key, nullptr); });

  auto* sismember = app.add_subcommand(
      "sismember", "Print 1 if MEMBER is in the set KEY, else 0 (and exit 1), as redis SISMEMBER");
  auto is_key = std::make_shared<std::string>();
  auto member = std::make_shared<std::string>();
  sismember->add_option("KEY", *is_key, "Set key")->required();
  sismember->add_option("MEMBER", *member, "Member")->required();
  sismember->add_flag("--json", g->json, "JSON output: {\"key\",\"member\",\"member_of\"}");
  sismember->callback([=] { *exit_code = DoSetRead(*g, *is_key, member.get()); });
}

}  // namespace shardkv::cli
