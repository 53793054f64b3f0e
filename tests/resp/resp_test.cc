// The RESP codec (src/resp): request parsing as redis-server reads commands, and reply bytes
// for RESP2 and RESP3 as the RESP specification writes them.
#include <catch2/catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "resp/resp_parser.h"
#include "resp/resp_writer.h"

namespace shardkv::resp {
namespace {

using Args = std::vector<std::string>;

// Feeds `input` in chunks of `chunk` bytes and collects every command.
std::vector<Args> ParseAll(RespParser& p, std::string_view input, size_t chunk) {
  std::vector<Args> out;
  Args args;
  for (size_t i = 0; i < input.size(); i += chunk) {
    p.Feed(input.substr(i, chunk));
    while (p.Next(&args)) out.push_back(args);
  }
  return out;
}

std::vector<Args> ParseAll(std::string_view input, size_t chunk = 1 << 20) {
  RespParser p;
  auto out = ParseAll(p, input, chunk);
  REQUIRE(p.status().ok());
  return out;
}

// The error message after feeding `input` whole.
std::string ErrorOf(std::string_view input, ParserLimits limits = {}) {
  RespParser p(limits);
  p.Feed(input);
  Args args;
  while (p.Next(&args)) {
  }
  return p.status().message();
}

Args Split(std::string_view line) {
  Args args;
  REQUIRE(SplitInlineArgs(line, &args));
  return args;
}

bool SplitFails(std::string_view line) {
  Args args;
  return !SplitInlineArgs(line, &args);
}

}  // namespace

TEST_CASE("resp parser: multibulk command whole and byte at a time") {
  const std::string in = "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nvalue\r\n";
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, in.size()}) {
    CAPTURE(chunk);
    RespParser p;
    auto cmds = ParseAll(p, in, chunk);
    REQUIRE(cmds.size() == 1);
    CHECK(cmds[0] == Args{"SET", "key", "value"});
    CHECK(p.status().ok());
    CHECK_FALSE(p.MidCommand());
    CHECK(p.BufferedBytes() == 0);
  }
}

TEST_CASE("resp parser: MidCommand while a command is partial") {
  RespParser p;
  Args args;
  p.Feed("*2\r\n$4\r\nPING\r\n$2\r\nh");
  CHECK_FALSE(p.Next(&args));
  CHECK(p.MidCommand());
  p.Feed("i\r\n");
  REQUIRE(p.Next(&args));
  CHECK(args == Args{"PING", "hi"});
  CHECK_FALSE(p.MidCommand());
}

TEST_CASE("resp parser: pipelined commands, mixed forms, byte at a time") {
  const std::string in =
      "*1\r\n$4\r\nPING\r\nECHO hello\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n\r\n\n   \r\n"
      "*0\r\n*-1\r\nQUIT\n";
  const std::vector<Args> want = {{"PING"}, {"ECHO", "hello"}, {"GET", "k"}, {"QUIT"}};
  CHECK(ParseAll(in) == want);
  CHECK(ParseAll(in, 1) == want);
  CHECK(ParseAll(in, 5) == want);
}

TEST_CASE("resp parser: binary bulk with CRLF, NUL and '*' inside") {
  const std::string value("a\r\nb\0*$\r\n", 10);
  const std::string in = "*2\r\n$3\r\nSET\r\n$10\r\n" + value + "\r\n";
  for (size_t chunk : {size_t{1}, size_t{4}, in.size()}) {
    auto cmds = ParseAll(in, chunk);
    REQUIRE(cmds.size() == 1);
    CHECK(cmds[0] == Args{"SET", value});
  }
}

TEST_CASE("resp parser: empty bulk argument") {
  CHECK(ParseAll("*2\r\n$3\r\nGET\r\n$0\r\n\r\n") == std::vector<Args>{{"GET", ""}});
}

TEST_CASE("resp parser: multibulk count limit") {
  ParserLimits small;
  small.max_multibulk_count = 3;
  CHECK(ErrorOf("*4\r\n", small) == "Protocol error: invalid multibulk length");
  {
    RespParser p(small);
    p.Feed("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
    Args args;
    REQUIRE(p.Next(&args));
    CHECK(args.size() == 3);
  }
  CHECK(ErrorOf("*1048577\r\n") == "Protocol error: invalid multibulk length");
  CHECK(ErrorOf("*x\r\n") == "Protocol error: invalid multibulk length");
  CHECK(ErrorOf("*01\r\n") == "Protocol error: invalid multibulk length");
  CHECK(ErrorOf("*+1\r\n") == "Protocol error: invalid multibulk length");
  CHECK(ErrorOf("*\r\n") == "Protocol error: invalid multibulk length");
  CHECK(ErrorOf("*99999999999999999999\r\n") == "Protocol error: invalid multibulk length");
  CHECK(ErrorOf("*1\rx") == "Protocol error: invalid multibulk length");
  // The largest allowed count does not allocate for its arguments up front.
  RespParser p;
  p.Feed("*1048576\r\n$1\r\na\r\n");
  Args args;
  CHECK_FALSE(p.Next(&args));
  CHECK(p.status().ok());
  CHECK(p.MidCommand());
}

TEST_CASE("resp parser: an inline command is bounded by its line, not the multibulk count") {
  ParserLimits small;
  small.max_multibulk_count = 2;
  RespParser p(small);
  p.Feed("a b c d\r\n");
  Args args;
  REQUIRE(p.Next(&args));
  CHECK(args == Args{"a", "b", "c", "d"});
}

TEST_CASE("resp parser: bulk length limit, default and configured") {
  CHECK(ErrorOf("*1\r\n$536870913\r\n") == "Protocol error: invalid bulk length");
  CHECK(ErrorOf("*1\r\n$-1\r\n") == "Protocol error: invalid bulk length");
  CHECK(ErrorOf("*1\r\n$abc\r\n") == "Protocol error: invalid bulk length");
  CHECK(ErrorOf("*1\r\n$\r\n") == "Protocol error: invalid bulk length");
  ParserLimits small;
  small.max_bulk_bytes = 4;
  CHECK(ErrorOf("*1\r\n$5\r\n", small) == "Protocol error: invalid bulk length");
  CHECK(ErrorOf("*1\r\n$4\r\nabcd\r\n", small).empty());
  // The default maximum is accepted, and announcing it reserves only a bounded amount.
  RespParser p;
  p.Feed("*1\r\n$536870912\r\nabc");
  Args args;
  CHECK_FALSE(p.Next(&args));
  CHECK(p.status().ok());
  CHECK(p.BufferedBytes() == 3);
}

TEST_CASE("resp parser: expected '$'") {
  CHECK(ErrorOf("*1\r\n:3\r\n") == "Protocol error: expected '$', got ':'");
  CHECK(ErrorOf("*2\r\n$1\r\na\r\nGET\r\n") == "Protocol error: expected '$', got 'G'");
}

TEST_CASE("resp parser: bulk must be followed by CRLF") {
  CHECK(ErrorOf("*1\r\n$1\r\nabc\r\n") == "Protocol error: bulk argument not followed by CRLF");
}

TEST_CASE("resp parser: too big inline request and count lines") {
  const std::string line(64 * 1024 + 1, 'a');
  CHECK(ErrorOf(line) == "Protocol error: too big inline request");
  CHECK(ErrorOf(line + "\r\n") == "Protocol error: too big inline request");
  // Exactly the limit is fine.
  auto cmds = ParseAll(std::string(64 * 1024, 'a') + "\r\n");
  REQUIRE(cmds.size() == 1);
  CHECK(cmds[0][0].size() == 64 * 1024);
  // Fed a byte at a time, the error comes as soon as the limit is passed.
  RespParser p;
  ParseAll(p, line, 4096);
  CHECK(p.status().message() == "Protocol error: too big inline request");
  CHECK(ErrorOf("*" + std::string(64 * 1024 + 1, '1')) ==
        "Protocol error: too big mbulk count string");
  CHECK(ErrorOf("*1\r\n$" + std::string(64 * 1024 + 1, '1')) ==
        "Protocol error: too big bulk count string");
}

TEST_CASE("resp parser: unbalanced quotes") {
  CHECK(ErrorOf("set \"a b\r\n") == "Protocol error: unbalanced quotes in request");
  CHECK(ErrorOf("set 'a\r\n") == "Protocol error: unbalanced quotes in request");
  CHECK(ErrorOf("set \"a\"b\r\n") == "Protocol error: unbalanced quotes in request");
}

TEST_CASE("resp parser: poisoned after an error until Reset") {
  RespParser p;
  Args args;
  p.Feed("*1\r\n$x\r\n*1\r\n$4\r\nPING\r\n");
  CHECK_FALSE(p.Next(&args));
  CHECK(p.poisoned());
  CHECK(p.status().IsInvalidArgument());
  CHECK(p.status().message() == "Protocol error: invalid bulk length");
  p.Feed("PING\r\n");
  CHECK_FALSE(p.Next(&args));
  CHECK(p.BufferedBytes() == 0);
  CHECK_FALSE(p.MidCommand());
  p.Reset();
  CHECK(p.status().ok());
  p.Feed("PING\r\n");
  REQUIRE(p.Next(&args));
  CHECK(args == Args{"PING"});
}

TEST_CASE("resp parser: inline quoting as sdssplitargs") {
  CHECK(Split("set \"a b\" 'c'") == Args{"set", "a b", "c"});
  CHECK(Split("\"\\x41\"") == Args{"A"});
  CHECK(Split("\"\\x4g\"") == Args{"x4g"});  // not two hex digits: "\x" is just 'x'
  CHECK(Split("\"a\\nb\\r\\t\\b\\a\\\\\\\"\"") == Args{"a\nb\r\t\b\a\\\""});
  CHECK(Split("'it\\'s' 'a\\nb'") == Args{"it's", "a\\nb"});
  CHECK(Split("ab\"c d\"") == Args{"abc d"});  // a quote may open inside a word
  CHECK(Split("  \t a   b\t") == Args{"a", "b"});
  CHECK(Split("\"\" ''") == Args{"", ""});
  CHECK(Split("").empty());
  CHECK(Split("   ").empty());
  CHECK(Split(std::string_view("a\0b c", 5)) == Args{"a"});  // NUL ends the C string
  CHECK(SplitFails("\"a\"b"));
  CHECK(SplitFails("'a'b"));
  CHECK(SplitFails("\"abc"));
  CHECK(SplitFails("'abc"));
  CHECK(SplitFails("\"abc\\"));
  CHECK(Split("\"a\"\tb") == Args{"a", "b"});
  // Through the parser, with the \r\n stripped and a bare \n accepted.
  CHECK(ParseAll("set \"a b\" 'c'\r\nget \"\\x41\"\n") ==
        std::vector<Args>{{"set", "a b", "c"}, {"get", "A"}});
}

TEST_CASE("resp writer: RESP2 golden bytes") {
  std::string out;
  RespWriter w(&out, Protocol::kResp2);
  auto take = [&] {
    std::string s;
    s.swap(out);
    return s;
  };
  w.SimpleString("OK");
  CHECK(take() == "+OK\r\n");
  w.SimpleString("a\r\nb");
  CHECK(take() == "+a  b\r\n");
  w.Error("unknown command");
  CHECK(take() == "-ERR unknown command\r\n");
  w.Error("-WRONGTYPE Operation against a key");
  CHECK(take() == "-WRONGTYPE Operation against a key\r\n");
  w.Integer(0);
  w.Integer(-42);
  w.Integer(INT64_MAX);
  CHECK(take() == ":0\r\n:-42\r\n:9223372036854775807\r\n");
  w.Bulk("hello");
  w.Bulk("");
  w.Bulk(std::string_view("a\r\n\0", 4));
  CHECK(take() == std::string("$5\r\nhello\r\n$0\r\n\r\n$4\r\na\r\n\0\r\n", 27));
  w.Null();
  CHECK(take() == "$-1\r\n");
  w.NullArray();
  CHECK(take() == "*-1\r\n");
  w.ArrayHeader(2);
  w.Bulk("a");
  w.ArrayHeader(1);
  w.Integer(1);
  CHECK(take() == "*2\r\n$1\r\na\r\n*1\r\n:1\r\n");
  w.ArrayHeader(0);
  CHECK(take() == "*0\r\n");
  w.MapHeader(2);
  w.Bulk("k");
  w.Integer(1);
  w.Bulk("j");
  w.Null();
  CHECK(take() == "*4\r\n$1\r\nk\r\n:1\r\n$1\r\nj\r\n$-1\r\n");
  w.SetHeader(1);
  w.Bulk("m");
  CHECK(take() == "*1\r\n$1\r\nm\r\n");
  w.Double(1.5);
  w.Double(3);
  w.Double(-0.1);
  CHECK(take() == "$3\r\n1.5\r\n$1\r\n3\r\n$4\r\n-0.1\r\n");
  w.Double(INFINITY);
  w.Double(-INFINITY);
  w.Double(NAN);
  CHECK(take() == "$3\r\ninf\r\n$4\r\n-inf\r\n$3\r\nnan\r\n");
  w.Boolean(true);
  w.Boolean(false);
  CHECK(take() == ":1\r\n:0\r\n");
  w.Verbatim("Some string");
  CHECK(take() == "$11\r\nSome string\r\n");
  const std::vector<std::string> items = {"x", "yz"};
  w.BulkArray(items);
  CHECK(take() == "*2\r\n$1\r\nx\r\n$2\r\nyz\r\n");
}

TEST_CASE("resp writer: RESP3 golden bytes") {
  std::string out;
  RespWriter w(&out, Protocol::kResp3);
  auto take = [&] {
    std::string s;
    s.swap(out);
    return s;
  };
  w.SimpleString("OK");
  w.Error("boom");
  w.Integer(7);
  w.Bulk("hi");
  CHECK(take() == "+OK\r\n-ERR boom\r\n:7\r\n$2\r\nhi\r\n");
  w.Null();
  w.NullArray();
  CHECK(take() == "_\r\n_\r\n");
  w.MapHeader(2);
  w.SimpleString("first");
  w.Integer(1);
  w.SimpleString("second");
  w.Integer(2);
  CHECK(take() == "%2\r\n+first\r\n:1\r\n+second\r\n:2\r\n");
  w.SetHeader(2);
  w.Bulk("a");
  w.Bulk("b");
  CHECK(take() == "~2\r\n$1\r\na\r\n$1\r\nb\r\n");
  w.ArrayHeader(2);
  w.MapHeader(1);
  w.Bulk("k");
  w.Boolean(true);
  w.Double(2.5);
  CHECK(take() == "*2\r\n%1\r\n$1\r\nk\r\n#t\r\n,2.5\r\n");
  w.Double(1.23);
  w.Double(10);
  w.Double(-0.0);
  w.Double(INFINITY);
  w.Double(-INFINITY);
  w.Double(NAN);
  w.Double(1e300);
  w.Double(0.1);
  CHECK(take() == ",1.23\r\n,10\r\n,-0\r\n,inf\r\n,-inf\r\n,nan\r\n,1e+300\r\n,0.1\r\n");
  w.Boolean(true);
  w.Boolean(false);
  CHECK(take() == "#t\r\n#f\r\n");
  w.Verbatim("Some string");
  CHECK(take() == "=15\r\ntxt:Some string\r\n");
  w.Verbatim("# x", "mkd");
  CHECK(take() == "=7\r\nmkd:# x\r\n");
  w.Verbatim("y", "toolong");
  CHECK(take() == "=5\r\ntxt:y\r\n");
}

TEST_CASE("resp writer: what it writes, the parser reads back") {
  std::string out;
  RespWriter w(&out, Protocol::kResp2);
  const std::vector<std::string> cmd = {"SET", std::string("k\0\r\n", 4), ""};
  w.BulkArray(cmd);
  CHECK(ParseAll(out, 1) == std::vector<Args>{cmd});
}

}  // namespace shardkv::resp
