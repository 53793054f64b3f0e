// The Redis expiry commands (src/redis/expire_commands.cc) against a fake backend that keeps an
// expiry per key: redis-server 7.0.15's replies and error strings.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>

#include "redis/command_harness.h"
#include "redis/redis_commands.h"

using namespace shardkv;
using namespace shardkv::redis;

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Keys with values and expiry times, as KvService answers for them (expired keys read absent).
class TtlHandler : public net::RequestHandler {
 public:
  struct Entry {
    std::string value;
    uint64_t expires_at_ms = 0;
  };

  void Handle(net::Request request, std::function<void(net::Response)> done) override {
    ++calls;
    net::Response response;
    const auto now = static_cast<uint64_t>(NowMs());
    auto live = [&](const std::string& key) -> Entry* {
      auto it = data.find(key);
      if (it == data.end()) return nullptr;
      if (it->second.expires_at_ms != 0 && it->second.expires_at_ms <= now) return nullptr;
      return &it->second;
    };
    if (auto* get = std::get_if<net::GetRequest>(&request.body)) {
      net::GetResponse out;
      if (Entry* e = live(get->key)) {
        out.found = true;
        out.value = e->value;
        out.expires_at_ms = e->expires_at_ms;
      }
      response.body = out;
    } else if (auto* mget = std::get_if<net::MultiGetRequest>(&request.body)) {
      net::MultiGetResponse out;
      for (const auto& k : mget->keys) {
        net::ItemResult item;
        if (Entry* e = live(k.key)) {
          item.found = true;
          item.value = e->value;
        }
        out.results.push_back(item);
      }
      response.body = out;
    } else if (auto* put = std::get_if<net::PutRequest>(&request.body)) {
      ++puts;
      Entry& e = data[put->key];
      const uint64_t keep = live(put->key) ? e.expires_at_ms : 0;
      e.value = put->value;
      e.expires_at_ms = put->keep_ttl ? keep : (put->ttl_ms ? now + put->ttl_ms : 0);
      response.body = net::PutResponse{1};
    } else if (auto* mput = std::get_if<net::MultiPutRequest>(&request.body)) {
      net::MultiPutResponse out;
      for (const auto& item : mput->items) {
        data[item.key] = Entry{item.value, 0};
        out.results.emplace_back();
      }
      response.body = out;
    } else if (auto* del = std::get_if<net::DeleteRequest>(&request.body)) {
      ++deletes;
      data.erase(del->key);
      response.body = net::DeleteResponse{1};
    } else if (auto* ex = std::get_if<net::ExpireRequest>(&request.body)) {
      ++expires;
      Entry* e = live(ex->key);
      if (e == nullptr) {
        response.body = net::ErrorResponse{Status::Code::kNotFound, "key not found"};
      } else if (ex->expires_at_ms != 0 && ex->expires_at_ms <= now) {
        data.erase(ex->key);
        response.body = net::PutResponse{1};
      } else {
        e->expires_at_ms = ex->expires_at_ms;
        response.body = net::PutResponse{1};
      }
    } else {
      response.body = net::ErrorResponse{Status::Code::kNotSupported, "fake: not supported"};
    }
    done(std::move(response));
  }

  std::map<std::string, Entry> data;
  int calls = 0, puts = 0, deletes = 0, expires = 0;
};

using TtlFixture = testing::CommandHarness<TtlHandler>;

const std::string kOk = "+OK\r\n";
const std::string kNil = "$-1\r\n";

std::string Wrong(const std::string& cmd) {
  return "-ERR wrong number of arguments for '" + cmd + "' command\r\n";
}

}  // namespace

TEST_CASE("redis ttl: arity errors as redis-server", "[redis][ttl]") {
  TtlFixture f;
  CHECK(f.One({"EXPIRE", "k"}) == Wrong("expire"));
  CHECK(f.One({"PEXPIREAT", "k"}) == Wrong("pexpireat"));
  CHECK(f.One({"TTL"}) == Wrong("ttl"));
  CHECK(f.One({"TTL", "a", "b"}) == Wrong("ttl"));
  CHECK(f.One({"PTTL"}) == Wrong("pttl"));
  CHECK(f.One({"EXPIRETIME"}) == Wrong("expiretime"));
  CHECK(f.One({"PERSIST"}) == Wrong("persist"));
  CHECK(f.One({"SETEX", "k", "10"}) == Wrong("setex"));
  CHECK(f.One({"PSETEX", "k", "10", "v", "x"}) == Wrong("psetex"));
  CHECK(f.One({"GETEX"}) == Wrong("getex"));
  CHECK(f.handler.calls == 0);
}

TEST_CASE("redis ttl: TTL, PTTL, EXPIRETIME of missing, persistent and volatile keys",
          "[redis][ttl]") {
  TtlFixture f;
  CHECK(f.IntReply({"TTL", "missing"}) == -2);
  CHECK(f.IntReply({"PTTL", "missing"}) == -2);
  CHECK(f.IntReply({"EXPIRETIME", "missing"}) == -2);
  CHECK(f.IntReply({"PEXPIRETIME", "missing"}) == -2);
  CHECK(f.One({"SET", "p", "v"}) == kOk);
  CHECK(f.IntReply({"TTL", "p"}) == -1);
  CHECK(f.IntReply({"PTTL", "p"}) == -1);
  CHECK(f.IntReply({"EXPIRETIME", "p"}) == -1);
  CHECK(f.One({"SET", "v", "x", "EX", "100"}) == kOk);
  CHECK(f.IntReply({"TTL", "v"}) == 100);
  const int64_t pttl = f.IntReply({"PTTL", "v"});
  CHECK(pttl > 99'000);
  CHECK(pttl <= 100'000);
  const int64_t at = f.handler.data.at("v").expires_at_ms;
  CHECK(f.IntReply({"PEXPIRETIME", "v"}) == at);
  CHECK(f.IntReply({"EXPIRETIME", "v"}) == (at + 500) / 1000);
}

TEST_CASE("redis ttl: SET with EX, PX, EXAT, PXAT, KEEPTTL and their errors", "[redis][ttl]") {
  TtlFixture f;
  const int64_t now = NowMs();
  CHECK(f.One({"SET", "k", "v", "PX", "50000"}) == kOk);
  CHECK(f.IntReply({"TTL", "k"}) == 50);
  CHECK(f.One({"SET", "k", "v", "EXAT", std::to_string(now / 1000 + 1000)}) == kOk);
  CHECK(f.IntReply({"EXPIRETIME", "k"}) == now / 1000 + 1000);
  CHECK(f.One({"SET", "k", "v", "PXAT", std::to_string(now + 70'000)}) == kOk);
  CHECK(f.IntReply({"PEXPIRETIME", "k"}) == now + 70'000);
  CHECK(f.One({"SET", "k", "v2", "KEEPTTL"}) == kOk);
  CHECK(f.IntReply({"PEXPIRETIME", "k"}) == now + 70'000);
  CHECK(f.One({"GET", "k"}) == "$2\r\nv2\r\n");
  CHECK(f.One({"SET", "k", "v3"}) == kOk);  // a plain SET clears the TTL
  CHECK(f.IntReply({"TTL", "k"}) == -1);
  // An absolute time in the past: OK, and the key is gone.
  CHECK(f.One({"SET", "k", "v", "PXAT", "1"}) == kOk);
  CHECK(f.One({"GET", "k"}) == kNil);

  const int calls = f.handler.calls;
  CHECK(f.One({"SET", "k", "v", "EX", "0"}) == "-ERR invalid expire time in 'set' command\r\n");
  CHECK(f.One({"SET", "k", "v", "PX", "-5"}) == "-ERR invalid expire time in 'set' command\r\n");
  CHECK(f.One({"SET", "k", "v", "EX", "9223372036854775807"}) ==
        "-ERR invalid expire time in 'set' command\r\n");
  CHECK(f.One({"SET", "k", "v", "PX", "9223372036854775807"}) ==
        "-ERR invalid expire time in 'set' command\r\n");
  CHECK(f.One({"SET", "k", "v", "EX", "1.5"}) ==
        "-ERR value is not an integer or out of range\r\n");
  CHECK(f.One({"SET", "k", "v", "EX"}) == "-ERR syntax error\r\n");
  CHECK(f.One({"SET", "k", "v", "EX", "10", "PX", "10"}) == "-ERR syntax error\r\n");
  CHECK(f.One({"SET", "k", "v", "EX", "10", "KEEPTTL"}) == "-ERR syntax error\r\n");
  CHECK(f.One({"SET", "k", "v", "KEEPTTL", "EX", "10"}) == "-ERR syntax error\r\n");
  CHECK(f.One({"SET", "k", "v", "EX", "10", "PERSIST"}) == "-ERR syntax error\r\n");
  CHECK(f.handler.calls == calls);
}

TEST_CASE("redis ttl: SET ... GET, NX and XX with an expiry", "[redis][ttl]") {
  TtlFixture f;
  CHECK(f.One({"SET", "m", "v", "EX", "100", "GET"}) == kNil);  // missing: nil, and it is set
  CHECK(f.IntReply({"TTL", "m"}) == 100);
  CHECK(f.One({"SET", "m", "w", "EX", "200", "GET"}) == "$1\r\nv\r\n");
  CHECK(f.IntReply({"TTL", "m"}) == 200);
  CHECK(f.One({"SET", "m", "x", "NX", "EX", "10"}) == kNil);
  CHECK(f.IntReply({"TTL", "m"}) == 200);
  CHECK(f.One({"SET", "n", "x", "XX", "EX", "10"}) == kNil);
  CHECK(f.One({"GET", "n"}) == kNil);
  CHECK(f.One({"SET", "n", "x", "NX", "PX", "10000"}) == kOk);
  CHECK(f.IntReply({"TTL", "n"}) == 10);
}

TEST_CASE("redis ttl: SETEX and PSETEX", "[redis][ttl]") {
  TtlFixture f;
  CHECK(f.One({"SETEX", "k", "100", "v"}) == kOk);
  CHECK(f.IntReply({"TTL", "k"}) == 100);
  CHECK(f.One({"PSETEX", "k", "5000", "v"}) == kOk);
  CHECK(f.IntReply({"TTL", "k"}) == 5);
  CHECK(f.One({"SETEX", "k", "0", "v"}) == "-ERR invalid expire time in 'setex' command\r\n");
  CHECK(f.One({"SETEX", "k", "-10", "v"}) == "-ERR invalid expire time in 'setex' command\r\n");
  CHECK(f.One({"PSETEX", "k", "0", "v"}) == "-ERR invalid expire time in 'psetex' command\r\n");
  CHECK(f.One({"SETEX", "k", "ten", "v"}) == "-ERR value is not an integer or out of range\r\n");
}

TEST_CASE("redis ttl: EXPIRE family, negative times delete, NX XX GT LT", "[redis][ttl]") {
  TtlFixture f;
  CHECK(f.IntReply({"EXPIRE", "missing", "100"}) == 0);
  CHECK(f.One({"SET", "k", "v"}) == kOk);
  CHECK(f.IntReply({"EXPIRE", "k", "100"}) == 1);
  CHECK(f.IntReply({"TTL", "k"}) == 100);
  CHECK(f.One({"GET", "k"}) == "$1\r\nv\r\n");  // the value is untouched
  CHECK(f.IntReply({"PEXPIRE", "k", "200000"}) == 1);
  CHECK(f.IntReply({"TTL", "k"}) == 200);
  const int64_t now = NowMs();
  CHECK(f.IntReply({"EXPIREAT", "k", std::to_string(now / 1000 + 300)}) == 1);
  CHECK(f.IntReply({"EXPIRETIME", "k"}) == now / 1000 + 300);
  CHECK(f.IntReply({"PEXPIREAT", "k", std::to_string(now + 400'000)}) == 1);
  CHECK(f.IntReply({"PEXPIRETIME", "k"}) == now + 400'000);

  // GT / LT / NX / XX on a key with a TTL of 400 s.
  CHECK(f.IntReply({"EXPIRE", "k", "100", "GT"}) == 0);
  CHECK(f.IntReply({"EXPIRE", "k", "500", "GT"}) == 1);
  CHECK(f.IntReply({"EXPIRE", "k", "600", "LT"}) == 0);
  CHECK(f.IntReply({"EXPIRE", "k", "50", "LT"}) == 1);
  CHECK(f.IntReply({"EXPIRE", "k", "70", "NX"}) == 0);
  CHECK(f.IntReply({"EXPIRE", "k", "70", "XX"}) == 1);
  CHECK(f.IntReply({"TTL", "k"}) == 70);
  CHECK(f.IntReply({"EXPIRE", "k", "80", "xx", "gt"}) == 1);
  // On a key without a TTL: GT fails (no TTL counts as infinite), LT and NX succeed, XX fails.
  CHECK(f.One({"SET", "p", "v"}) == kOk);
  CHECK(f.IntReply({"EXPIRE", "p", "100", "GT"}) == 0);
  CHECK(f.IntReply({"EXPIRE", "p", "100", "XX"}) == 0);
  CHECK(f.IntReply({"TTL", "p"}) == -1);
  CHECK(f.IntReply({"EXPIRE", "p", "100", "LT"}) == 1);
  CHECK(f.One({"SET", "q", "v"}) == kOk);
  CHECK(f.IntReply({"EXPIRE", "q", "100", "NX"}) == 1);

  // Zero and negative times delete the key and answer 1.
  CHECK(f.IntReply({"EXPIRE", "q", "0"}) == 1);
  CHECK(f.One({"GET", "q"}) == kNil);
  CHECK(f.IntReply({"EXPIRE", "q", "-1"}) == 0);  // gone already
  CHECK(f.One({"SET", "q", "v"}) == kOk);
  CHECK(f.IntReply({"PEXPIRE", "q", "-100"}) == 1);
  CHECK(f.IntReply({"TTL", "q"}) == -2);

  // Errors.
  const int calls = f.handler.calls;
  CHECK(f.One({"EXPIRE", "k", "10", "NX", "XX"}) ==
        "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n");
  CHECK(f.One({"EXPIRE", "k", "10", "GT", "LT"}) ==
        "-ERR GT and LT options at the same time are not compatible\r\n");
  CHECK(f.One({"EXPIRE", "k", "10", "bogus"}) == "-ERR Unsupported option bogus\r\n");
  CHECK(f.One({"EXPIRE", "k", "ten"}) == "-ERR value is not an integer or out of range\r\n");
  CHECK(f.One({"EXPIRE", "k", "9223372036854775807"}) ==
        "-ERR invalid expire time in 'expire' command\r\n");
  CHECK(f.One({"PEXPIRE", "k", "9223372036854775807"}) ==
        "-ERR invalid expire time in 'pexpire' command\r\n");
  CHECK(f.One({"EXPIREAT", "k", "9223372036854775807"}) ==
        "-ERR invalid expire time in 'expireat' command\r\n");
  CHECK(f.handler.calls == calls);
}

TEST_CASE("redis ttl: PERSIST and GETEX", "[redis][ttl]") {
  TtlFixture f;
  CHECK(f.IntReply({"PERSIST", "missing"}) == 0);
  CHECK(f.One({"SET", "k", "v", "EX", "100"}) == kOk);
  CHECK(f.IntReply({"PERSIST", "k"}) == 1);
  CHECK(f.IntReply({"TTL", "k"}) == -1);
  CHECK(f.IntReply({"PERSIST", "k"}) == 0);

  CHECK(f.One({"GETEX", "missing"}) == kNil);
  CHECK(f.One({"GETEX", "missing", "EX", "10"}) == kNil);
  CHECK(f.One({"GETEX", "k"}) == "$1\r\nv\r\n");
  CHECK(f.One({"GETEX", "k", "EX", "100"}) == "$1\r\nv\r\n");
  CHECK(f.IntReply({"TTL", "k"}) == 100);
  CHECK(f.One({"GETEX", "k", "PX", "20000"}) == "$1\r\nv\r\n");
  CHECK(f.IntReply({"TTL", "k"}) == 20);
  const int expires = f.handler.expires;
  CHECK(f.One({"GETEX", "k", "PERSIST"}) == "$1\r\nv\r\n");
  CHECK(f.IntReply({"TTL", "k"}) == -1);
  CHECK(f.One({"GETEX", "k", "PERSIST"}) == "$1\r\nv\r\n");  // no TTL: nothing written
  CHECK(f.handler.expires == expires + 1);
  CHECK(f.One({"GETEX", "k", "PXAT", "1"}) == "$1\r\nv\r\n");  // past: deleted after the read
  CHECK(f.One({"GET", "k"}) == kNil);

  CHECK(f.One({"GETEX", "k", "EX", "0"}) == "-ERR invalid expire time in 'getex' command\r\n");
  CHECK(f.One({"GETEX", "k", "EX", "-1"}) == "-ERR invalid expire time in 'getex' command\r\n");
  CHECK(f.One({"GETEX", "k", "EX", "10", "PERSIST"}) == "-ERR syntax error\r\n");
  CHECK(f.One({"GETEX", "k", "KEEPTTL"}) == "-ERR syntax error\r\n");
  CHECK(f.One({"GETEX", "k", "EX"}) == "-ERR syntax error\r\n");
  CHECK(f.One({"GETEX", "k", "EX", "x"}) == "-ERR value is not an integer or out of range\r\n");
}
