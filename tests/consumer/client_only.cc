// An application that links only the client and admin API (shardkv::shardkv_client and
// shardkv::shardkv_admin, no Node): it must not link RocksDB. tools/check.sh runs it and checks
// with ldd that librocksdb is not among its libraries.
//
// There is no cluster to talk to here, so it asks a seed nothing listens on and checks that both
// APIs report that as Unavailable rather than hanging or crashing.
#include <shardkv/admin.h>
#include <shardkv/client.h>

#include <cstdio>
#include <string>
#include <vector>

int main() {
  // Port 1 is privileged and unused: the connection is refused at once.
  const std::vector<std::string> seeds = {"127.0.0.1:1"};

  shardkv::AdminOptions admin_options;
  admin_options.seeds = seeds;
  admin_options.timeout_ms = 2000;
  auto admin = shardkv::Admin::Create(admin_options);
  if (!admin.ok()) {
    std::fprintf(stderr, "client_only: FAILED: create the admin: %s\n",
                 admin.status().ToString().c_str());
    return 1;
  }
  auto map = (*admin)->NewestMap();
  std::printf("admin:  %s\n", map.status().ToString().c_str());

  shardkv::ClientOptions client_options;
  client_options.seeds = seeds;
  client_options.timeout_ms = 2000;
  auto client = shardkv::Client::Connect(client_options);
  std::printf("client: %s\n", client.status().ToString().c_str());

  if (map.status().code() != shardkv::Status::Code::kUnavailable ||
      client.status().code() != shardkv::Status::Code::kUnavailable) {
    std::fprintf(stderr, "client_only: FAILED: expected Unavailable from both\n");
    return 1;
  }
  std::printf("client_only: ok\n");
  return 0;
}
