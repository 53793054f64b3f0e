// The pure pieces of the CLI's key-value commands: a bounded value read, host:port checks, JSON
// for arbitrary bytes, and the restated usage errors (issue 9, findings rows 23, 26, 27, 31-33).
#include "kv_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "kv_limits.h"
#include "testing/temp_dir.h"
#include "usage_errors.h"

using namespace shardkv;
using namespace shardkv::cli;
using shardkv::testing::TempDir;

namespace {

// Opens a file holding `size` bytes of 'x'.
int FileOf(const TempDir& dir, size_t size) {
  const std::string path = dir.Sub("input");
  {
    std::ofstream out(path, std::ios::binary);
    const std::string chunk(1 << 16, 'x');
    for (size_t left = size; left > 0;) {
      const size_t n = std::min(left, chunk.size());
      out.write(chunk.data(), static_cast<std::streamsize>(n));
      left -= n;
    }
  }
  return ::open(path.c_str(), O_RDONLY);
}

}  // namespace

TEST_CASE("kv io: a value is read up to the limit and no further", "[cli]") {
  TempDir dir;
  constexpr size_t kLimit = 100000;
  for (size_t size : {size_t{0}, size_t{1}, kLimit - 1, kLimit}) {
    const int fd = FileOf(dir, size);
    REQUIRE(fd >= 0);
    auto v = ReadValueBounded(fd, kLimit);
    REQUIRE(v.ok());
    CHECK(v->size() == size);
    ::close(fd);
  }
  // Past the limit: the error, after reading exactly limit + 1 bytes (not the whole input).
  const int fd = FileOf(dir, 10 * kLimit);
  REQUIRE(fd >= 0);
  auto v = ReadValueBounded(fd, kLimit);
  REQUIRE_FALSE(v.ok());
  CHECK(v.status().IsInvalidArgument());
  CHECK(::lseek(fd, 0, SEEK_CUR) == static_cast<off_t>(kLimit + 1));
  ::close(fd);
}

TEST_CASE("kv io: the too-large message names the limit in MiB", "[cli]") {
  CHECK(ValueTooLarge(limits::kMaxValueBytes, limits::kMaxValueBytes).empty());
  CHECK(ValueTooLarge(limits::kMaxValueBytes + 1, limits::kMaxValueBytes) ==
        "value is larger than the 16 MiB limit");
  CHECK(HumanLimit(64 << 10) == "64 KiB");
  CHECK(HumanLimit(100) == "100 bytes");
}

TEST_CASE("kv io: host:port is checked", "[cli]") {
  for (const char* good : {"127.0.0.1:7000", "localhost:1", "[::1]:65535", "a.b.c:80"}) {
    INFO(good);
    CHECK(CheckHostPort(good).empty());
  }
  for (const char* bad :
       {"nonsense", "", ":7000", "h:", "h:0", "h:65536", "h:7x", "::1:7000", "[::1]7000"}) {
    INFO(bad);
    CHECK_FALSE(CheckHostPort(bad).empty());
  }
}

TEST_CASE("kv io: UTF-8 validation follows RFC 3629", "[cli]") {
  CHECK(IsValidUtf8(""));
  CHECK(IsValidUtf8("plain ascii\n\t"));
  CHECK(IsValidUtf8(std::string("a\0b", 3)));
  CHECK(IsValidUtf8("\xd0\xba\xd0\xbb\xd1\x8e\xd1\x87"));  // ключ
  CHECK(IsValidUtf8("\xe6\x97\xa5\xe6\x9c\xac"));          // 日本
  CHECK(IsValidUtf8("\xf0\x9f\x99\x82"));                  // 🙂
  CHECK(IsValidUtf8("\xf4\x8f\xbf\xbf"));                  // U+10FFFF
  CHECK_FALSE(IsValidUtf8("\xff"));
  CHECK_FALSE(IsValidUtf8("\x80"));              // a continuation byte alone
  CHECK_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  CHECK_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong, 3 bytes
  CHECK_FALSE(IsValidUtf8("\xed\xa0\x80"));      // a surrogate
  CHECK_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  CHECK_FALSE(IsValidUtf8("\xe6\x97"));          // truncated
  CHECK_FALSE(IsValidUtf8("\xe6\x41\xa5"));      // a bad continuation
}

TEST_CASE("kv io: base64 matches RFC 4648's test vectors", "[cli]") {
  CHECK(Base64Encode("") == "");
  CHECK(Base64Encode("f") == "Zg==");
  CHECK(Base64Encode("fo") == "Zm8=");
  CHECK(Base64Encode("foo") == "Zm9v");
  CHECK(Base64Encode("foob") == "Zm9vYg==");
  CHECK(Base64Encode("fooba") == "Zm9vYmE=");
  CHECK(Base64Encode("foobar") == "Zm9vYmFy");
  CHECK(Base64Encode(std::string("\xff\x00\xfe", 3)) == "/wD+");
}

TEST_CASE("kv io: JSON fields are valid for any bytes", "[cli]") {
  JsonWriter w;
  w.Begin();
  BytesField(w, "key", "k\"\n");
  BytesField(w, "value", std::string("a\xff\0b", 4));
  w.End();
  CHECK(w.str() == "{\"key\":\"k\\\"\\n\",\"value_base64\":\"Yf8AYg==\"}");
  JsonWriter u;
  u.Begin();
  BytesField(u, "value", std::string("\xd0\xb7\0", 3));
  u.End();
  CHECK(u.str() == "{\"value\":\"\xd0\xb7\\u0000\"}");
}

TEST_CASE("usage errors: a non-number is called one", "[cli]") {
  CHECK(RestateRangeError("--nodes: Value abc not in range 1 to 64") ==
        "--nodes: abc is not a number (1 to 64)");
  CHECK(RestateRangeError("--count: Value 1e3 not in range 1 to 1099511627776") ==
        "--count: 1e3 is not a whole number in digits (1 to 1099511627776)");
  CHECK(RestateRangeError("--timeout: Value 0 not in range 1 to 3600000") ==
        "--timeout: 0 is out of range (1 to 3600000)");
  CHECK(RestateRangeError("KEY is required") == "KEY is required");
}

TEST_CASE("usage errors: an unknown command is named", "[cli]") {
  auto parse = [](std::vector<std::string> words) {
    CLI::App app{"t", "shardkv"};
    app.require_subcommand(1);
    auto* cluster = app.add_subcommand("cluster", "");
    cluster->require_subcommand(1);
    cluster->add_subcommand("up", "");
    app.add_subcommand("get", "")->add_option("KEY");
    std::vector<std::string> args(words.rbegin(), words.rend());  // CLI11 wants them reversed
    try {
      app.parse(args);
    } catch (const CLI::ParseError& e) {
      return UsageMessage(app, e);
    }
    return std::string("parsed");
  };
  CHECK(parse({"frobnicate"}) ==
        "unknown command 'frobnicate' for 'shardkv' (see 'shardkv --help')");
  CHECK(parse({"cluster", "frob"}) ==
        "unknown command 'frob' for 'shardkv cluster' (see 'shardkv cluster --help')");
  CHECK(parse({"cluster"}) == "'shardkv cluster' needs a command (see 'shardkv cluster --help')");
  CHECK(parse({"get", "k"}) == "parsed");
}
