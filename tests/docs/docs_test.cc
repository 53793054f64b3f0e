// The reference pages in docs/ against the code they describe, so a table cannot drift: each
// list comes from the code itself (the metrics a node renders, the commands and flags the CLI's
// --help prints, the config keys the node accepts, the Redis command table and its refusals),
// and each test names what a page lacks or names in excess.
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "metrics/node_metrics.h"
#include "node_config.h"
#include "redis/command_table.h"
#include "redis/redis_commands.h"
#include "testing/subprocess.h"

namespace {

using shardkv::testing::RunProcess;

std::string ReadDoc(const std::string& relative) {
  std::ifstream in(std::string(SHARDKV_SOURCE_DIR) + "/" + relative);
  INFO("cannot read " << relative);
  REQUIRE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The part of `page` from the heading line `heading` to the next heading of the same level.
std::string Section(const std::string& page, const std::string& heading) {
  const size_t level = heading.find(' ');
  std::string out;
  bool in = false;
  for (const std::string& line : Lines(page)) {
    if (line == heading) {
      in = true;
      continue;
    }
    if (in && line.size() > level && line.compare(0, level + 1, heading.substr(0, level + 1)) == 0)
      break;
    if (in) out += line + "\n";
  }
  INFO("no section '" << heading << "'");
  REQUIRE(in);
  return out;
}

// The cells of a Markdown table row ("| a | b |"), trimmed; empty if `line` is no row.
std::vector<std::string> Cells(const std::string& line) {
  std::vector<std::string> cells;
  if (line.size() < 2 || line[0] != '|') return cells;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (line[i] == '|') {
      const size_t b = cell.find_first_not_of(' ');
      const size_t e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

// The `code` spans of `text`, in order.
std::vector<std::string> CodeSpans(const std::string& text) {
  std::vector<std::string> out;
  static const std::regex span("`([^`]+)`");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), span); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[1]);
  }
  return out;
}

std::string Join(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += "\n  " + n;
  return out;
}

// Fails, naming them, if `code` has names `doc` lacks or `doc` has names `code` lacks.
void CheckSameNames(const std::set<std::string>& code, const std::set<std::string>& doc,
                    const std::string& page, const std::string& what) {
  std::set<std::string> missing, extra;
  for (const std::string& n : code) {
    if (!doc.count(n)) missing.insert(n);
  }
  for (const std::string& n : doc) {
    if (!code.count(n)) extra.insert(n);
  }
  INFO(page << " lacks these " << what << ":" << Join(missing));
  CHECK(missing.empty());
  INFO(page << " names these " << what << ", which do not exist:" << Join(extra));
  CHECK(extra.empty());
}

// --- metrics -----------------------------------------------------------------------------------

TEST_CASE("docs: metrics.md lists every metric a node exports and no other", "[docs]") {
  // Every family is written even without samples; a change record makes the change's gauges
  // appear too.
  shardkv::metrics::NodeMetricsSnapshot snapshot;
  snapshot.version = "0.0.0";
  snapshot.change = shardkv::ChangeRecord{};
  const std::string scrape = shardkv::metrics::RenderNodeMetrics(snapshot);
  std::map<std::string, std::string> exported;  // name -> type
  static const std::regex type_line("^# TYPE (\\S+) (\\S+)$");
  for (const std::string& line : Lines(scrape)) {
    std::smatch m;
    if (std::regex_match(line, m, type_line)) exported[m[1]] = m[2];
  }
  REQUIRE(exported.size() > 50);

  // The table rows: | `name{labels}` | type | meaning |
  const std::string page = ReadDoc("docs/metrics.md");
  std::map<std::string, std::string> documented;
  for (const std::string& line : Lines(page)) {
    const std::vector<std::string> cells = Cells(line);
    if (cells.size() < 3) continue;
    const std::vector<std::string> spans = CodeSpans(cells[0]);
    if (spans.size() != 1 || spans[0].rfind("shardkv_", 0) != 0) continue;
    const std::string name = spans[0].substr(0, spans[0].find('{'));
    INFO("metrics.md lists " << name << " twice");
    CHECK(documented.emplace(name, cells[1]).second);
  }
  std::set<std::string> code_names, doc_names;
  for (const auto& [name, type] : exported) code_names.insert(name);
  for (const auto& [name, type] : documented) doc_names.insert(name);
  CheckSameNames(code_names, doc_names, "docs/metrics.md", "metrics");
  for (const auto& [name, type] : exported) {
    auto it = documented.find(name);
    if (it == documented.end()) continue;
    INFO(name << " is a " << type << ", but metrics.md says " << it->second);
    CHECK(it->second == type);
  }
}

TEST_CASE("docs: metrics.md names the stats that have no metric", "[docs]") {
  const std::string page = ReadDoc("docs/metrics.md");
  std::set<std::string> spans;
  for (const std::string& s : CodeSpans(page)) spans.insert(s);
  std::set<std::string> missing;
  for (std::string_view stat : shardkv::metrics::SkippedStats()) {
    if (!spans.count(std::string(stat))) missing.insert(std::string(stat));
  }
  INFO("docs/metrics.md does not say why these stats have no metric:" << Join(missing));
  CHECK(missing.empty());
}

// --- CLI ---------------------------------------------------------------------------------------

struct CommandHelp {
  std::set<std::string> flags;  // every option name --help prints but -h/--help
  std::vector<std::string> subcommands;
};

CommandHelp HelpOf(const std::vector<std::string>& path) {
  std::vector<std::string> argv = {SHARDKV_CLI_PATH};
  argv.insert(argv.end(), path.begin(), path.end());
  argv.push_back("--help");
  const auto r = RunProcess(argv, std::chrono::seconds(30));
  INFO(r.Text());
  REQUIRE(r.exit_code == 0);
  CommandHelp help;
  bool in_subcommands = false;
  for (const std::string& line : Lines(r.out)) {
    if (line == "Subcommands:") {
      in_subcommands = true;
      continue;
    }
    if (line.empty() || line[0] != ' ') in_subcommands = false;
    if (line.size() < 3 || line.compare(0, 2, "  ") != 0 || line[2] == ' ') continue;
    const std::string first = line.substr(2, line.find(' ', 2) - 2);
    if (in_subcommands) {
      help.subcommands.push_back(first);
    } else if (first[0] == '-') {
      // "  -y,--yes", "  --algos,--algo LIST=[...]": the names before the first space.
      std::istringstream names(first);
      for (std::string name; std::getline(names, name, ',');) {
        if (name != "-h" && name != "--help") help.flags.insert(name);
      }
    }
  }
  return help;
}

void Walk(const std::vector<std::string>& path, std::map<std::string, std::set<std::string>>* out) {
  const CommandHelp help = HelpOf(path);
  std::string name = "shardkv";
  for (const std::string& p : path) name += " " + p;
  (*out)[name] = help.flags;
  for (const std::string& sub : help.subcommands) {
    std::vector<std::string> next = path;
    next.push_back(sub);
    Walk(next, out);
  }
}

TEST_CASE("docs: cli.md indexes every command and flag that --help prints", "[docs]") {
  std::map<std::string, std::set<std::string>> commands;
  Walk({}, &commands);
  REQUIRE(commands.count("shardkv cluster up") == 1);
  REQUIRE(commands.size() > 20);

  // The command index: | `shardkv cluster up` | `--nodes` `--mode` ... |
  const std::string index = Section(ReadDoc("docs/cli.md"), "## Command index");
  std::map<std::string, std::set<std::string>> documented;
  for (const std::string& line : Lines(index)) {
    const std::vector<std::string> cells = Cells(line);
    if (cells.size() < 2) continue;
    const std::vector<std::string> command = CodeSpans(cells[0]);
    if (command.size() != 1 || command[0].rfind("shardkv", 0) != 0) continue;
    std::set<std::string> flags;
    for (const std::string& span : CodeSpans(cells[1])) {
      if (!span.empty() && span[0] == '-') flags.insert(span.substr(0, span.find(' ')));
    }
    INFO("cli.md indexes " << command[0] << " twice");
    CHECK(documented.emplace(command[0], flags).second);
  }
  std::set<std::string> code_names, doc_names;
  for (const auto& [name, flags] : commands) code_names.insert(name);
  for (const auto& [name, flags] : documented) doc_names.insert(name);
  CheckSameNames(code_names, doc_names, "docs/cli.md's command index", "commands");
  for (const auto& [name, flags] : commands) {
    auto it = documented.find(name);
    if (it == documented.end()) continue;
    CheckSameNames(flags, it->second, "docs/cli.md's row of `" + name + "`", "flags");
  }
}

// --- node configuration ------------------------------------------------------------------------

TEST_CASE("docs: operations.md lists every key of the node's configuration file", "[docs]") {
  std::set<std::string> code;  // as the page writes them: `[limits] max_key_bytes`, `id`
  for (const std::string& key : shardkv::node_tool::NodeConfigKeys()) {
    const size_t dot = key.find('.');
    code.insert(dot == std::string::npos ? key
                                         : "[" + key.substr(0, dot) + "] " + key.substr(dot + 1));
  }
  REQUIRE(code.count("[redis] listen") == 1);
  const std::string table = Section(ReadDoc("docs/operations.md"), "## Configuration file");
  std::set<std::string> documented;
  for (const std::string& line : Lines(table)) {
    const std::vector<std::string> cells = Cells(line);
    if (cells.size() < 4) continue;
    const std::vector<std::string> spans = CodeSpans(cells[0]);
    if (spans.size() == 1) documented.insert(spans[0]);
  }
  CheckSameNames(code, documented, "docs/operations.md's configuration table", "keys");
}

TEST_CASE("docs: operations.md names every flag that shardkv-node --help prints", "[docs]") {
  const auto r = RunProcess({SHARDKV_NODE_PATH, "--help"}, std::chrono::seconds(30));
  INFO(r.Text());
  REQUIRE(r.exit_code == 0);
  std::set<std::string> flags;
  for (const std::string& line : Lines(r.out)) {
    if (line.compare(0, 3, "  -") != 0) continue;
    std::istringstream names(line.substr(2, line.find(' ', 2) - 2));
    for (std::string name; std::getline(names, name, ',');) {
      if (name != "-h" && name != "--help") flags.insert(name);
    }
  }
  REQUIRE(flags.count("--redis-listen") == 1);
  const std::string nodes = Section(ReadDoc("docs/operations.md"), "## Nodes");
  std::set<std::string> missing;
  for (const std::string& flag : flags) {
    // The flag as a whole word: "--tls-ca" is not found in "--tls-cafile".
    const std::regex word(flag + "(?![A-Za-z0-9_-])");
    if (!std::regex_search(nodes, word)) missing.insert(flag);
  }
  INFO("the Nodes section of docs/operations.md lacks these shardkv-node flags:" << Join(missing));
  CHECK(missing.empty());
}

TEST_CASE("docs: the example configuration file loads as shipped", "[docs]") {
  shardkv::node_tool::NodeConfig config;
  const shardkv::Status s = shardkv::node_tool::LoadNodeConfig(
      std::string(SHARDKV_SOURCE_DIR) + "/conf/shardkv-node.toml", &config);
  INFO(s.message());
  CHECK(s.ok());
}

// --- Redis commands ----------------------------------------------------------------------------

// "client|setname" -> "CLIENT SETNAME"
std::string RedisName(std::string name) {
  for (char& c : name) c = c == '|' ? ' ' : static_cast<char>(std::toupper(c));
  return name;
}

TEST_CASE("docs: redis.md gives every command of the table and every refusal its decision",
          "[docs]") {
  // | `GET` | implemented | notes |, | `APPEND` | refused | the reason ... |
  const std::string index = Section(ReadDoc("docs/redis.md"), "## Every command");
  std::map<std::string, std::string> rows;  // name -> the whole row
  std::map<std::string, std::string> decisions;
  for (const std::string& line : Lines(index)) {
    const std::vector<std::string> cells = Cells(line);
    if (cells.size() < 3) continue;
    const std::vector<std::string> spans = CodeSpans(cells[0]);
    if (spans.size() != 1) continue;
    INFO("redis.md lists " << spans[0] << " twice");
    CHECK(rows.emplace(spans[0], line).second);
    decisions[spans[0]] = cells[1];
  }
  std::set<std::string> implemented, refused;
  for (const auto& spec : shardkv::redis::CommandTable())
    implemented.insert(RedisName(std::string(spec.name)));
  for (const std::string& name : shardkv::redis::RefusedCommands()) {
    refused.insert(RedisName(name));
  }
  REQUIRE(implemented.count("CLIENT SETNAME") == 1);
  REQUIRE(refused.count("INCRBYFLOAT") == 1);
  std::set<std::string> all = implemented;
  all.insert(refused.begin(), refused.end());
  std::set<std::string> documented;
  for (const auto& [name, row] : rows) documented.insert(name);
  CheckSameNames(all, documented, "docs/redis.md's command list", "commands");

  for (const std::string& name : implemented) {
    if (!decisions.count(name)) continue;
    INFO(name << " is implemented, but redis.md says: " << decisions[name]);
    CHECK(decisions[name].rfind("implemented", 0) == 0);
  }
  for (const std::string& name : refused) {
    if (!decisions.count(name)) continue;
    INFO(name << " is refused, but redis.md says: " << decisions[name]);
    CHECK(decisions[name] == "refused");
    // The reason the node gives, without the command's name and any parenthesis:
    // "APPEND is refused by shardkv: a read-modify-write is not atomic ... (docs/redis.md)".
    std::string lower = name;
    for (char& c : lower) c = static_cast<char>(std::tolower(c));
    std::string reason = shardkv::redis::RefusalReason(lower);
    reason = reason.substr(reason.find(": ") + 2);
    reason = reason.substr(0, reason.find(" ("));
    INFO("redis.md's row does not give the reason: " << reason << "\n" << rows[name]);
    CHECK(rows[name].find(reason) != std::string::npos);
  }
}

}  // namespace
