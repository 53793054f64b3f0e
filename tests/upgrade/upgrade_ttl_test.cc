// Upgrade from v0.1.0 with TTLs: the fixture's format-1 envelopes open with this build (envelope
// format 2), a TTL set on an old key expires, PERSIST works, and a restart keeps both.
#include <chrono>
#include <functional>
#include <thread>

#include "storage/value_envelope.h"
#include "upgrade_util.h"

namespace upgrade {
namespace {

// Polls `done` every 20 ms for at most `limit`.
bool Poll(const std::function<bool()>& done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (int i = 0; i < 10'000; ++i) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

TEST_CASE("upgrade v0.1.0: TTLs on old keys expire, persist, and survive a restart",
          "[upgrade][ttl]") {
  TempDir dir;
  const std::string root = CopyFixture(dir, "jump1");
  {
    // Every stored record of the old release is format 1, and still decodes.
    auto store = OpenStore(DbDir(root, 1), 1);
    size_t format1 = 0;
    for (const storage::RangeEntry& e : ScanAll(*store)) {
      CHECK(e.envelope.IsFormat1());
      ++format1;
    }
    CHECK(format1 >= static_cast<size_t>(kKeyCount));
    REQUIRE(store->Close().ok());
  }
  {
    auto node = Node::Start(FixtureNodeOptions(root, 1, kJumpClusterId));
    INFO(node.status().ToString());
    REQUIRE(node.ok());
    auto client = ConnectClient(**node, kJumpClusterId);
    CHECK(*client->Get("key-049") == "value-049");
    CHECK_FALSE(client->Ttl("key-049")->has_value());
    // A short TTL on one old key (it expires), a long one on another, then PERSIST on a third.
    REQUIRE(client->Expire("key-048", std::chrono::milliseconds(300)).ok());
    REQUIRE(client->Expire("key-047", std::chrono::hours(1)).ok());
    REQUIRE(client->Expire("key-046", std::chrono::hours(1)).ok());
    REQUIRE(client->Persist("key-046").ok());
    CHECK(*client->Get("key-047") == "value-047");
    CHECK(client->Ttl("key-047")->has_value());
    CHECK(Poll([&] { return client->Get("key-048").status().IsNotFound(); },
               std::chrono::seconds(10)));
    client.reset();
    (*node)->Stop();
  }
  auto node = Node::Start(FixtureNodeOptions(root, 1, kJumpClusterId));
  INFO(node.status().ToString());
  REQUIRE(node.ok());
  auto client = ConnectClient(**node, kJumpClusterId);
  CHECK(client->Get("key-048").status().IsNotFound());
  CHECK(*client->Get("key-047") == "value-047");
  auto ttl = client->Ttl("key-047");
  REQUIRE(ttl.ok());
  REQUIRE(ttl->has_value());
  CHECK(**ttl > std::chrono::minutes(50));
  CHECK(*client->Get("key-046") == "value-046");
  CHECK_FALSE(client->Ttl("key-046")->has_value());
  CHECK(*client->Get("key-049") == "value-049");
}

}  // namespace
}  // namespace upgrade
