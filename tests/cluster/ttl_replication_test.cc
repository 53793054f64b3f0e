// In-process 3-node clusters: expiry registers through hints, read repair and the client API.
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>

#include "testing/cluster_util.h"
#include "testing/in_process_client.h"
#include "testing/in_process_cluster.h"

using namespace shardkv;
using shardkv::testing::InProcessCluster;

namespace {

using shardkv::testing::Eventually;

ClusterParams Params() { return shardkv::testing::ThreeReplicas(); }

std::unique_ptr<Client> Connect(const InProcessCluster& c) {
  return shardkv::testing::MustConnect(c);
}

uint64_t NowMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

constexpr auto kHour = std::chrono::hours(1);

}  // namespace

TEST_CASE("ttl: put with a TTL, expire, persist and ttl through the client", "[ttl]") {
  InProcessCluster cluster(3, Params());
  REQUIRE(cluster.Start().ok());
  auto client = Connect(cluster);

  REQUIRE(client->Put("plain", "v").ok());
  auto ttl = client->Ttl("plain");
  REQUIRE(ttl.ok());
  CHECK_FALSE(ttl->has_value());
  CHECK(client->Ttl("missing").status().IsNotFound());
  CHECK(client->Expire("missing", kHour).status().IsNotFound());
  CHECK(client->Persist("missing").status().IsNotFound());

  REQUIRE(client->Put("t", "v", PutOptions{std::chrono::minutes(10), false}).ok());
  ttl = client->Ttl("t");
  REQUIRE(ttl.ok());
  REQUIRE(ttl->has_value());
  CHECK(**ttl > std::chrono::minutes(9));
  CHECK(**ttl <= std::chrono::minutes(10));
  // KEEPTTL keeps it, a plain put clears it.
  REQUIRE(client->Put("t", "v2", PutOptions{std::chrono::milliseconds(0), true}).ok());
  CHECK(client->Ttl("t")->has_value());
  CHECK(*client->Get("t") == "v2");
  REQUIRE(client->Put("t", "v3").ok());
  CHECK_FALSE(client->Ttl("t")->has_value());
  // EXPIRE then PERSIST, the value untouched.
  REQUIRE(client->Expire("t", kHour).ok());
  CHECK(client->Ttl("t")->has_value());
  REQUIRE(client->Persist("t").ok());
  CHECK_FALSE(client->Ttl("t")->has_value());
  CHECK(*client->Get("t") == "v3");
  // An expiry in the past deletes, as in Redis.
  REQUIRE(client->Expire("t", std::chrono::seconds(-1)).ok());
  CHECK(client->Get("t").status().IsNotFound());
  // Bad input.
  CHECK(client->Put("b", "v", PutOptions{std::chrono::milliseconds(-5), false}).status().code() ==
        Status::Code::kInvalidArgument);
  CHECK(client->Put("b", "v", PutOptions{kHour, true}).status().code() ==
        Status::Code::kInvalidArgument);
  CHECK(client->Put("b", "v", PutOptions{std::chrono::milliseconds(INT64_MAX), false})
            .status()
            .code() == Status::Code::kInvalidArgument);
  CHECK(client->ExpireAt("plain", 0).status().code() == Status::Code::kInvalidArgument);

  // A short TTL: the key reads until it expires, then as missing on every replica's read path.
  REQUIRE(client->Put("short", "v", PutOptions{std::chrono::milliseconds(300), false}).ok());
  CHECK(Eventually([&] { return client->Get("short", Consistency::kAll).status().IsNotFound(); },
                   std::chrono::seconds(10)));
  CHECK(client->MultiGet({"short", "plain"})[0].status().IsNotFound());
  CHECK(*client->MultiGet({"short", "plain"})[1] == "v");
}

TEST_CASE("ttl: an EXPIRE reaches a replica that missed the SET, by hints", "[ttl][replication]") {
  InProcessCluster cluster(3, Params());
  REQUIRE(cluster.Start().ok());
  auto client = Connect(cluster);
  cluster.StopNode(3);
  REQUIRE(client->Put("h", "v").ok());
  REQUIRE(client->ExpireAt("h", NowMs() + 3'600'000).ok());
  auto ttl = client->Ttl("h");
  REQUIRE(ttl.ok());
  CHECK(ttl->has_value());

  REQUIRE(cluster.RestartNode(3).ok());
  CHECK(Eventually([&] {
    auto local = cluster.LocalRead(3, "h");
    return local.ok() && local->found && local->value == "v" && local->expiry.explicit_expiry &&
           local->expiry.expires_at_ms > NowMs();
  }));
}

TEST_CASE("ttl: a quorum read repairs a replica that missed the expiry", "[ttl][replication]") {
  InProcessCluster cluster(3, Params());
  REQUIRE(cluster.Start().ok());
  auto client = Connect(cluster);
  REQUIRE(client->Put("r", "v").ok());
  REQUIRE(Eventually([&] {
    auto l = cluster.LocalRead(3, "r");
    return l.ok() && l->value == "v";
  }));
  auto before = cluster.LocalRead(1, "r");
  REQUIRE(before.ok());
  const uint64_t expires_at = NowMs() + 3'600'000;
  // Nodes 1 and 2 get an expiry-only write behind node 3's back.
  for (uint32_t id : {1u, 2u}) {
    net::Request req;
    req.body =
        net::ReplicaWriteRequest{cluster.map().TokenOf("r"),
                                 "r",
                                 0,
                                 0,
                                 false,
                                 "",
                                 net::ExpiryRegister{true, true, before->ts + 1, 9, expires_at}};
    auto reply = cluster.Call(id, std::move(req));
    REQUIRE(reply.ok());
    REQUIRE(reply->ok());
  }
  // The stored records merged: the value stays, the expiry is the new one.
  auto merged = cluster.LocalRead(1, "r");
  REQUIRE(merged.ok());
  CHECK(merged->value == "v");
  CHECK(merged->expiry.expires_at_ms == expires_at);
  auto with_expiry = client->GetWithExpiry("r", Consistency::kAll);
  REQUIRE(with_expiry.ok());
  CHECK(with_expiry->value == "v");
  CHECK(with_expiry->expires_at_ms == expires_at);
  CHECK(Eventually([&] {
    auto l = cluster.LocalRead(3, "r");
    return l.ok() && l->value == "v" && l->expiry.expires_at_ms == expires_at;
  }));
}

TEST_CASE("ttl: an older EXPIRE never hides a newer SET", "[ttl][replication]") {
  InProcessCluster cluster(3, Params());
  REQUIRE(cluster.Start().ok());
  auto client = Connect(cluster);
  REQUIRE(client->Put("k", "v1").ok());
  auto before = cluster.LocalRead(1, "k");
  REQUIRE(before.ok());
  REQUIRE(client->Put("k", "v2").ok());
  // An expiry stamped between the two SETs arrives late, at every replica.
  for (uint32_t id : {1u, 2u, 3u}) {
    net::Request req;
    req.body = net::ReplicaWriteRequest{
        cluster.map().TokenOf("k"),
        "k",
        0,
        0,
        false,
        "",
        net::ExpiryRegister{true, true, before->ts + 1, 9, NowMs() - 1000}};
    auto reply = cluster.Call(id, std::move(req));
    REQUIRE(reply.ok());
    REQUIRE(reply->ok());
  }
  CHECK(*client->Get("k", Consistency::kAll) == "v2");
  CHECK_FALSE(client->Ttl("k")->has_value());
}
