#include "redis/command_table.h"

#include <algorithm>
#include <cctype>
#include <string>

#include "redis/ascii_case.h"

namespace shardkv::redis {
namespace {

// Flags and ACL categories are status strings, tips bulk strings, as redis-server writes them.
void WriteSet(const std::vector<std::string_view>& items, resp::RespWriter* out,
              bool bulk = false) {
  out->SetHeader(items.size());
  for (std::string_view item : items) bulk ? out->Bulk(item) : out->SimpleString(item);
}

void WriteKeySpec(const KeySpec& k, resp::RespWriter* out) {
  out->MapHeader(k.notes.empty() ? 3 : 4);
  if (!k.notes.empty()) {
    out->Bulk("notes");
    out->Bulk(k.notes);
  }
  out->Bulk("flags");
  WriteSet(k.flags, out);
  out->Bulk("begin_search");
  out->MapHeader(2);
  out->Bulk("type");
  out->Bulk("index");
  out->Bulk("spec");
  out->MapHeader(1);
  out->Bulk("index");
  out->Integer(k.begin_index);
  out->Bulk("find_keys");
  out->MapHeader(2);
  out->Bulk("type");
  out->Bulk("range");
  out->Bulk("spec");
  out->MapHeader(3);
  out->Bulk("lastkey");
  out->Integer(k.last_key);
  out->Bulk("keystep");
  out->Integer(k.key_step);
  out->Bulk("limit");
  out->Integer(k.limit);
}

}  // namespace

bool CommandSpec::HasFlag(std::string_view flag) const {
  return std::find(flags.begin(), flags.end(), flag) != flags.end();
}

bool CommandSpec::ArityOk(size_t argc) const {
  const auto n = static_cast<int64_t>(argc);
  return arity > 0 ? n == arity : n >= -arity;
}

const std::vector<CommandSpec>& CommandTable() {
  static const auto* table = new std::vector<CommandSpec>{
#include "redis/command_table_data.inc"
  };
  return *table;
}

const CommandSpec* FindCommand(std::string_view name) {
  const std::string lower = Lower(name);
  for (const CommandSpec& spec : CommandTable()) {
    if (spec.name == lower) return &spec;
  }
  return nullptr;
}

std::vector<const CommandSpec*> TopLevelCommands() {
  std::vector<const CommandSpec*> out;
  for (const CommandSpec& spec : CommandTable()) {
    if (spec.container.empty()) out.push_back(&spec);
  }
  return out;
}

std::vector<const CommandSpec*> Subcommands(std::string_view container) {
  std::vector<const CommandSpec*> out;
  for (const CommandSpec& spec : CommandTable()) {
    if (!container.empty() && spec.container == container) out.push_back(&spec);
  }
  return out;
}

void WriteCommandInfo(const CommandSpec& spec, resp::RespWriter* out) {
  out->ArrayHeader(10);
  out->Bulk(spec.name);
  out->Integer(spec.arity);
  WriteSet(spec.flags, out);
  out->Integer(spec.first_key);
  out->Integer(spec.last_key);
  out->Integer(spec.step);
  WriteSet(spec.acl_categories, out);
  WriteSet(spec.tips, out, /*bulk=*/true);
  // As redis-server 7.0 writes them: the key specs as a set, the subcommands as an array but
  // none as an empty set (they differ only in RESP3).
  out->SetHeader(spec.key_specs.size());
  for (const KeySpec& k : spec.key_specs) WriteKeySpec(k, out);
  const auto subs = Subcommands(spec.name);
  subs.empty() ? out->SetHeader(0) : out->ArrayHeader(subs.size());
  for (const CommandSpec* sub : subs) WriteCommandInfo(*sub, out);
}

void WriteCommandDocs(const CommandSpec& spec, resp::RespWriter* out) {
  out->Bulk(spec.name);
  const auto subs = Subcommands(spec.name);
  out->MapHeader(subs.empty() ? 4 : 5);
  out->Bulk("summary");
  out->Bulk(spec.summary);
  out->Bulk("since");
  out->Bulk(spec.since);
  out->Bulk("group");
  out->Bulk(spec.group);
  out->Bulk("complexity");
  out->Bulk(spec.complexity);
  if (!subs.empty()) {
    out->Bulk("subcommands");
    out->MapHeader(subs.size());
    for (const CommandSpec* sub : subs) WriteCommandDocs(*sub, out);
  }
}

}  // namespace shardkv::redis
