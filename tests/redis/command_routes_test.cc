// The Redis front end's one command table (redis/command_routes.h): every command of the
// generated COMMAND INFO table has a row and a handler, every refusal has a reason and no spec,
// and every row, run through RedisCommands, is answered by its handler (never "unknown" or "not
// implemented").
#include "redis/command_routes.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "redis/command_harness.h"
#include "redis/command_table.h"
#include "redis/redis_commands.h"

using namespace shardkv::redis;

TEST_CASE("routes: every command of the table has a row and a handler", "[redis][routes]") {
  std::set<std::string> specs;
  for (const CommandSpec* spec : TopLevelCommands()) {
    INFO(spec->name);
    specs.insert(std::string(spec->name));
    const CommandRow* row = FindRow(spec->name);
    REQUIRE(row != nullptr);
    CHECK(row->spec == spec);
    CHECK(row->handler != Handler::kRefused);
  }
  size_t refused = 0;
  for (const CommandRow* row : CommandRows()) {
    INFO(row->name);
    CHECK(FindRow(row->name) == row);
    if (row->handler == Handler::kRefused) {
      ++refused;
      CHECK(row->spec == nullptr);
      CHECK(FindCommand(row->name) == nullptr);  // a client must not think it works
      CHECK_FALSE(row->refusal.empty());
      CHECK(row->refused_arity != 0);
      CHECK(RefusalReason(row->name) == row->refusal);
    } else {
      CHECK(row->spec != nullptr);
      CHECK(specs.count(row->name) == 1);
    }
  }
  CHECK(refused == RefusedCommands().size());
  CHECK(refused > 0);
  CHECK(FindRow("nosuch") == nullptr);
  CHECK(FindRow("GET") == nullptr);  // rows are found by the lower-case name
}

TEST_CASE("routes: every row is answered by its handler", "[redis][routes]") {
  for (const CommandRow* row : CommandRows()) {
    // A fresh connection each time (QUIT closes, MULTI starts a refused transaction).
    testing::CommandHarness<> h;
    const int arity = row->spec != nullptr ? row->spec->arity : row->refused_arity;
    Args args{row->name};
    const int argc = arity > 0 ? arity : -arity;
    while (static_cast<int>(args.size()) < argc) args.push_back("k");
    const std::string reply = h.One(args);
    INFO(row->name << " -> " << reply);
    CHECK_FALSE(reply.empty());
    CHECK(reply.find("unknown command") == std::string::npos);
    CHECK(reply.find("command not implemented") == std::string::npos);
    if (row->handler == Handler::kRefused) {
      CHECK(reply == "-ERR " + row->refusal + "\r\n");
    }
  }
}
