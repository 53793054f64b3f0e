// The Redis command layer against a fake backend: Redis's reply types and error strings,
// arity, authentication, the refusals, and the batching of pipelined GETs and SETs.
#include "redis/redis_commands.h"

#include <catch2/catch.hpp>

#include "redis/cluster_commands.h"
#include "redis/command_harness.h"
#include "redis/command_table.h"
#include "redis/fake_backend.h"

using namespace shardkv;
using namespace shardkv::redis;

namespace {

struct Fixture : testing::CommandHarness<> {
  explicit Fixture(std::string secret = "")
      : testing::CommandHarness<>({.secret = secret, .allow_flush = false}) {}
};

}  // namespace

TEST_CASE("redis: arity errors name the command as redis does", "[redis]") {
  Fixture f;
  CHECK(f.One({"GET"}) == "-ERR wrong number of arguments for 'get' command\r\n");
  CHECK(f.One({"get", "a", "b"}) == "-ERR wrong number of arguments for 'get' command\r\n");
  CHECK(f.One({"CLIENT", "SETNAME"}) ==
        "-ERR wrong number of arguments for 'client|setname' command\r\n");
  CHECK(f.One({"mset", "a", "1", "b"}) == "-ERR wrong number of arguments for 'mset' command\r\n");
  CHECK(f.One({"nosuch", "x", "y"}) ==
        "-ERR unknown command 'nosuch', with args beginning with: 'x' 'y' \r\n");
  CHECK(f.One({"client", "nosuch"}) == "-ERR unknown subcommand 'nosuch'. Try CLIENT HELP.\r\n");
  CHECK(f.handler.calls == 0);
}

TEST_CASE("redis: GET, SET, MGET, MSET, DEL, EXISTS, STRLEN, GETRANGE, TYPE", "[redis]") {
  Fixture f;
  CHECK(f.One({"GET", "k"}) == "$-1\r\n");
  CHECK(f.One({"SET", "k", "hello"}) == "+OK\r\n");
  CHECK(f.One({"get", "k"}) == "$5\r\nhello\r\n");
  CHECK(f.One({"MSET", "a", "1", "b", "22"}) == "+OK\r\n");
  CHECK(f.One({"MGET", "a", "nope", "b"}) == "*3\r\n$1\r\n1\r\n$-1\r\n$2\r\n22\r\n");
  CHECK(f.One({"EXISTS", "a", "a", "nope"}) == ":2\r\n");
  CHECK(f.One({"STRLEN", "k"}) == ":5\r\n");
  CHECK(f.One({"STRLEN", "nope"}) == ":0\r\n");
  CHECK(f.One({"GETRANGE", "k", "1", "-2"}) == "$3\r\nell\r\n");
  CHECK(f.One({"GETRANGE", "k", "-1", "-5"}) == "$0\r\n\r\n");
  CHECK(f.One({"GETRANGE", "k", "x", "1"}) == "-ERR value is not an integer or out of range\r\n");
  CHECK(f.One({"TYPE", "k"}) == "+string\r\n");
  CHECK(f.One({"TYPE", "nope"}) == "+none\r\n");
  CHECK(f.One({"DEL", "a", "b", "a", "nope"}) == ":2\r\n");
  CHECK(f.One({"UNLINK", "a"}) == ":0\r\n");
  CHECK(f.handler.data.count("a") == 0);
}

TEST_CASE("redis: SET NX, XX and GET (read then write)", "[redis]") {
  Fixture f;
  CHECK(f.One({"SET", "k", "v1", "GET"}) == "$-1\r\n");  // a missing key: nil, and it is set
  CHECK(f.handler.data.at("k") == "v1");
  CHECK(f.One({"SET", "k", "v2", "GET"}) == "$2\r\nv1\r\n");
  CHECK(f.One({"SET", "k", "v3", "NX"}) == "$-1\r\n");
  CHECK(f.handler.data.at("k") == "v2");
  CHECK(f.One({"SET", "new", "v", "XX"}) == "$-1\r\n");
  CHECK(f.handler.data.count("new") == 0);
  CHECK(f.One({"SET", "new", "v", "NX"}) == "+OK\r\n");
  CHECK(f.One({"SET", "k", "v", "NX", "XX"}) == "-ERR syntax error\r\n");
  CHECK(f.One({"SET", "k", "v", "BOGUS"}) == "-ERR syntax error\r\n");
}

TEST_CASE("redis: refusals say why", "[redis]") {
  Fixture f;
  const std::string append = f.One({"APPEND", "k", "x"});
  CHECK(append.rfind("-ERR APPEND is refused by shardkv: a read-modify-write is not atomic", 0) ==
        0);
  CHECK(f.One({"INCRBYFLOAT", "k", "1.5"}).find("read-modify-write") != std::string::npos);
  CHECK(f.One({"SET", "k", "v", "EX", "-1"}) == "-ERR invalid expire time in 'set' command\r\n");
  CHECK(f.One({"SET", "k", "v", "EX", "x"}) == "-ERR value is not an integer or out of range\r\n");
  CHECK(f.One({"SETRANGE", "k", "0", "x"}).find("read-modify-write") != std::string::npos);
  CHECK(f.One({"RENAME", "k", "j"}).find("read-modify-write") != std::string::npos);
  CHECK(f.One({"WATCH", "a", "b"}).find("no multi-key transactions") != std::string::npos);
  // A malformed call of a refused command gets Redis's arity error first, as redis-server
  // answers it.
  CHECK(f.One({"INCRBYFLOAT", "k"}) ==
        "-ERR wrong number of arguments for 'incrbyfloat' command\r\n");
  CHECK(f.One({"append", "k"}) == "-ERR wrong number of arguments for 'append' command\r\n");
  CHECK(f.One({"COPY", "a"}) == "-ERR wrong number of arguments for 'copy' command\r\n");
  CHECK(f.One({"MULTI", "x"}) == "-ERR wrong number of arguments for 'multi' command\r\n");
  CHECK(f.One({"WATCH"}) == "-ERR wrong number of arguments for 'watch' command\r\n");
  CHECK(f.handler.calls == 0);
}

TEST_CASE("redis: nothing sent after a refused MULTI runs, and EXEC fails with EXECABORT",
          "[redis]") {
  Fixture f;
  const std::string execabort = "-EXECABORT Transaction discarded because of previous errors.\r\n";
  // What redis-py's pipeline() sends, in one batch: MULTI, the commands, EXEC.
  const std::string out = f.Run({{"MULTI"},
                                 {"SET", "a", "1"},
                                 {"SET", "b", "2"},
                                 {"DEL", "k"},
                                 {"GET", "a"},
                                 {"INCR", "n"},
                                 {"NOSUCH"},
                                 {"EXEC"},
                                 {"GET", "a"}});
  INFO(out);
  const std::string multi =
      "-ERR MULTI is refused by shardkv: it has no multi-key transactions (the commands up to "
      "EXEC or DISCARD are not run)\r\n";
  const std::string not_run =
      "-EXECABORT MULTI was refused (shardkv has no multi-key transactions): this command is not "
      "run, nor any other until EXEC or DISCARD\r\n";
  std::string expected = multi;
  for (int i = 0; i < 6; ++i) expected += not_run;
  expected += execabort + "$-1\r\n";  // after EXEC, commands run again
  CHECK(out == expected);
  CHECK(f.handler.data.empty());
  CHECK(f.handler.multi_puts == 0);
  CHECK(f.handler.calls == 1);  // only the last GET

  // The same sent one command at a time (redis-cli): the state lasts across batches.
  f.handler.data["k"] = "v";
  CHECK(f.One({"MULTI"}) == multi);
  CHECK(f.One({"SET", "a", "1"}) == not_run);
  CHECK(f.One({"DEL", "k"}) == not_run);
  CHECK(f.One({"MULTI"}) == "-ERR MULTI calls can not be nested\r\n");
  CHECK(f.One({"WATCH", "k"}) == "-ERR WATCH inside MULTI is not allowed\r\n");
  CHECK(f.One({"EXEC", "x"}) == "-ERR wrong number of arguments for 'exec' command\r\n");
  CHECK(f.One({"AUTH", "x"}) == not_run);
  CHECK(f.One({"DISCARD"}) == "+OK\r\n");  // DISCARD ends it too
  CHECK(f.handler.data.count("a") == 0);
  CHECK(f.handler.data.at("k") == "v");
  CHECK(f.One({"SET", "a", "1"}) == "+OK\r\n");
  // Outside a transaction EXEC and DISCARD are refused as before.
  CHECK(f.One({"EXEC"}).rfind("-ERR EXEC is refused by shardkv", 0) == 0);
  CHECK(f.One({"DISCARD"}).rfind("-ERR DISCARD is refused by shardkv", 0) == 0);
  // RESET ends the state, as it ends a transaction in redis-server; QUIT still closes.
  CHECK(f.One({"MULTI"}) == multi);
  CHECK(f.One({"RESET"}) == "+RESET\r\n");
  CHECK(f.One({"SET", "c", "3"}) == "+OK\r\n");
  // A malformed MULTI is an arity error, as redis-server answers it, and starts nothing.
  CHECK(f.One({"MULTI", "x"}) == "-ERR wrong number of arguments for 'multi' command\r\n");
  CHECK(f.One({"SET", "f", "6"}) == "+OK\r\n");
  bool closed = false;
  CHECK(f.Run({{"MULTI"}, {"SET", "d", "4"}, {"QUIT"}, {"SET", "e", "5"}}, &closed) ==
        multi + not_run + "+OK\r\n");
  CHECK(closed);
  CHECK(f.handler.data.count("d") == 0);
}

TEST_CASE("redis: FUNCTION FLUSH has nothing to flush, as redis-server answers it", "[redis]") {
  Fixture f;
  CHECK(f.One({"FUNCTION", "FLUSH"}) == "+OK\r\n");
  CHECK(f.One({"function", "flush", "ASYNC"}) == "+OK\r\n");
  CHECK(f.One({"FUNCTION", "FLUSH", "bogus"}) ==
        "-ERR FUNCTION FLUSH only supports SYNC|ASYNC option\r\n");
  CHECK(f.One({"FUNCTION", "FLUSH", "SYNC", "x"}) ==
        "-ERR unknown subcommand or wrong number of arguments for 'flush'. Try FUNCTION "
        "HELP.\r\n");
  CHECK(f.One({"FUNCTION", "LIST"}).rfind("-ERR unknown subcommand 'LIST'", 0) == 0);
  CHECK(f.handler.calls == 0);
}

TEST_CASE("redis: SELECT, PING, ECHO, QUIT, TIME", "[redis]") {
  Fixture f;
  CHECK(f.One({"SELECT", "0"}) == "+OK\r\n");
  CHECK(f.One({"SELECT", "1"}) == "-ERR DB index is out of range\r\n");
  CHECK(f.One({"SELECT", "x"}) == "-ERR value is not an integer or out of range\r\n");
  CHECK(f.One({"PING"}) == "+PONG\r\n");
  CHECK(f.One({"PING", "hi"}) == "$2\r\nhi\r\n");
  CHECK(f.One({"PING", "a", "b"}) == "-ERR wrong number of arguments for 'ping' command\r\n");
  CHECK(f.One({"ECHO", "x"}) == "$1\r\nx\r\n");
  CHECK(f.One({"TIME"}).rfind("*2\r\n$10\r\n", 0) == 0);
  bool closed = false;
  CHECK(f.Run({{"QUIT"}, {"PING"}}, &closed) == "+OK\r\n");  // nothing after QUIT runs
  CHECK(closed);
}

TEST_CASE("redis: AUTH and HELLO with a secret", "[redis]") {
  Fixture f("sixteen-byte-secret");
  CHECK(f.One({"GET", "k"}) == "-NOAUTH Authentication required.\r\n");
  CHECK(f.One({"HELLO", "3"}).rfind("-NOAUTH HELLO must be called with the client already", 0) ==
        0);
  CHECK(f.One({"AUTH", "wrong"}) ==
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  CHECK(f.One({"AUTH", "admin", "sixteen-byte-secret"}) ==
        "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  CHECK(f.handler.calls == 0);
  CHECK(f.One({"AUTH", "sixteen-byte-secret"}) == "+OK\r\n");
  CHECK(f.One({"GET", "k"}) == "$-1\r\n");
  CHECK(f.One({"RESET"}) == "+RESET\r\n");  // RESET forgets the authentication
  CHECK(f.One({"GET", "k"}) == "-NOAUTH Authentication required.\r\n");
  const std::string hello = f.One({"HELLO", "3", "AUTH", "default", "sixteen-byte-secret"});
  CHECK(hello.rfind("%7\r\n$6\r\nserver\r\n", 0) == 0);
  CHECK(hello.find("$5\r\nproto\r\n:3\r\n") != std::string::npos);
  CHECK(f.session->protocol() == resp::Protocol::kResp3);
  CHECK(f.One({"GET", "k"}) == "_\r\n");  // RESP3 null
  CHECK(f.One({"HELLO", "4"}) == "-NOPROTO unsupported protocol version\r\n");
}

TEST_CASE("redis: AUTH without a secret answers as redis-server without a password", "[redis]") {
  Fixture f;
  CHECK(f.One({"AUTH", "x"}).rfind("-ERR AUTH <password> called without any password", 0) == 0);
  CHECK(f.One({"GET", "k"}) == "$-1\r\n");
}

TEST_CASE("redis: pipelined GETs and SETs become one multiGet or multiPut", "[redis]") {
  Fixture f;
  std::vector<Args> pipeline;
  for (int i = 0; i < 10; ++i) pipeline.push_back({"SET", "k" + std::to_string(i), "v"});
  for (int i = 0; i < 10; ++i) pipeline.push_back({"GET", "k" + std::to_string(9 - i)});
  pipeline.push_back({"GET", "missing"});
  std::string expected;
  for (int i = 0; i < 10; ++i) expected += "+OK\r\n";
  for (int i = 0; i < 10; ++i) expected += "$1\r\nv\r\n";
  expected += "$-1\r\n";
  CHECK(f.Run(pipeline) == expected);
  CHECK(f.handler.multi_puts == 1);
  CHECK(f.handler.multi_gets == 1);
  // An interleaved command ends a run: replies stay in order.
  CHECK(f.Run({{"GET", "k1"}, {"PING"}, {"GET", "k2"}}) == "$1\r\nv\r\n+PONG\r\n$1\r\nv\r\n");
  CHECK(f.handler.multi_gets == 3);
}

TEST_CASE("redis: a long synchronous pipeline does not recurse", "[redis]") {
  Fixture f;
  std::vector<Args> pipeline;
  for (int i = 0; i < 200000; ++i) pipeline.push_back(i % 2 ? Args{"PING"} : Args{"STRLEN", "k"});
  const std::string out = f.Run(pipeline);
  CHECK(out.size() == 100000 * (std::string("+PONG\r\n").size() + std::string(":0\r\n").size()));
}

TEST_CASE("redis: SHARDKV CONSISTENCY sets the level of the connection's requests", "[redis]") {
  Fixture f;
  CHECK(f.One({"SHARDKV", "CONSISTENCY"}) == "$7\r\ndefault\r\n");
  CHECK(f.One({"SHARDKV", "CONSISTENCY", "all"}) == "+OK\r\n");
  CHECK(f.One({"GET", "k"}) == "$-1\r\n");
  REQUIRE(!f.handler.consistencies.empty());
  CHECK(f.handler.consistencies.back() == net::Consistency::kAll);
  CHECK(f.One({"SHARDKV", "CONSISTENCY", "most"}).rfind("-ERR unknown consistency level", 0) == 0);
}

TEST_CASE("redis: backend errors become error replies", "[redis]") {
  Fixture f;
  // The node gives the reason (kv_service.cc); the words no longer decide.
  f.handler.fail_with = Status(Status::Code::kUnavailable, Status::Reason::kUnformed,
                               "node 1 is unformed (not in a cluster yet)");
  CHECK(f.One({"GET", "k"}).rfind("-CLUSTERDOWN node 1 is unformed", 0) == 0);
  f.handler.fail_with = Status::Unavailable("quorum not reached");
  CHECK(f.One({"SET", "k", "v"}) == "-ERR quorum not reached\r\n");
}

TEST_CASE("redis: CLIENT and COMMAND", "[redis]") {
  Fixture f;
  CHECK(f.One({"CLIENT", "GETNAME"}) == "$-1\r\n");
  CHECK(f.One({"CLIENT", "SETNAME", "bad name"}) ==
        "-ERR Client names cannot contain spaces, newlines or special characters.\r\n");
  CHECK(f.One({"CLIENT", "SETNAME", "app"}) == "+OK\r\n");
  CHECK(f.One({"CLIENT", "GETNAME"}) == "$3\r\napp\r\n");
  CHECK(f.One({"CLIENT", "ID"}) == ":7\r\n");
  CHECK(f.One({"CLIENT", "SETINFO", "lib-name", "redis-py"}) == "+OK\r\n");
  CHECK(f.One({"CLIENT", "SETINFO", "other", "x"}) == "-ERR Unrecognized option 'other'\r\n");
  CHECK(f.One({"CLIENT", "INFO"}).find("name=app") != std::string::npos);
  CHECK(f.One({"COMMAND", "INFO", "get"}).rfind("*1\r\n*10\r\n$3\r\nget\r\n:2\r\n", 0) == 0);
  CHECK(f.One({"COMMAND", "INFO", "nosuch"}) == "*1\r\n$-1\r\n");
  CHECK(f.One({"COMMAND", "COUNT"}) == ":" + std::to_string(TopLevelCommands().size()) + "\r\n");
  CHECK(f.One({"CONFIG", "GET", "save"}) == "*2\r\n$4\r\nsave\r\n$0\r\n\r\n");
  CHECK(f.One({"CONFIG", "GET", "databases"}) == "*2\r\n$9\r\ndatabases\r\n$1\r\n1\r\n");
  // CONFIG SET: encoding thresholds only, accepted and ignored (Redis's suite sets them).
  CHECK(f.One({"CONFIG", "SET", "hash-max-listpack-entries", "512"}) == "+OK\r\n");
  CHECK(f.One({"CONFIG", "SET", "set-max-intset-entries", "1", "list-max-listpack-size", "8"}) ==
        "+OK\r\n");
  CHECK(f.One({"CONFIG", "SET", "maxmemory", "1"}) ==
        "-ERR Unknown option or number of arguments for CONFIG SET - 'maxmemory'\r\n");
  CHECK(f.One({"CONFIG", "SET", "hash-max-listpack-entries"}).rfind("-ERR", 0) == 0);
}

TEST_CASE("redis: CLUSTER KEYSLOT is Redis Cluster's hash slot", "[redis]") {
  CHECK(KeySlot("foo") == 12182);
  CHECK(KeySlot("{user1000}.following") == KeySlot("user1000"));
  CHECK(KeySlot("{}x") == KeySlot("{}x"));
  Fixture f;
  CHECK(f.One({"CLUSTER", "KEYSLOT", "foo"}) == ":12182\r\n");
  CHECK(f.One({"CLUSTER", "SLOTS"}).rfind("-CLUSTERDOWN", 0) == 0);  // no map: unformed
}
