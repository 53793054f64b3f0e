// Storage: expiry registers, hiding expired records, and collecting them after the grace.
#include "storage/storage.h"
#include "storage/storage_test_util.h"

namespace shardkv::storage {
namespace {

using testing::FakeClock;
using testing::OpenOrDie;
using testing::TempDir;
using testing::TestOptions;

using testing::kStartMs;
constexpr TokenRange kAll{0, UINT64_MAX};

TEST_CASE("a TTL hides the value once past, without sleeping", "[storage][ttl]") {
  TempDir dir;
  FakeClock clock(kStartMs);
  StorageOptions options = TestOptions();
  options.physical_clock_ms = clock.Fn();
  auto db = OpenOrDie(dir.path(), options);

  REQUIRE_OK(db->Put(1, "k", "v", PutExpiry{kStartMs + 1000, false}));
  REQUIRE_OK(db->Put(2, "p", "persistent"));
  CHECK(*db->Get(1, "k") == "v");
  CHECK(db->GetEnvelope(1, "k")->expires_at_ms() == kStartMs + 1000);
  clock.Advance(999);
  CHECK(*db->Get(1, "k") == "v");
  clock.Advance(1);  // expires_at itself is expired, as in Redis
  CHECK(db->Get(1, "k").status().IsNotFound());
  auto multi = db->MultiGet({{1, "k"}, {2, "p"}});
  CHECK(multi[0].status().IsNotFound());
  CHECK(*multi[1] == "persistent");
  // The replica-level read still returns the whole record (coordinators judge expiry).
  auto env = db->GetEnvelope(1, "k");
  REQUIRE_OK(env);
  CHECK(env->value == "v");

  // A plain SET clears the TTL; a KEEPTTL SET keeps it.
  REQUIRE_OK(db->Put(1, "k", "v2"));
  CHECK(db->GetEnvelope(1, "k")->expires_at_ms() == 0);
  REQUIRE_OK(db->Expire(1, "k", clock.Now() + 50));
  REQUIRE_OK(db->Put(1, "k", "v3", PutExpiry{0, true}));
  CHECK(*db->Get(1, "k") == "v3");
  CHECK(db->GetEnvelope(1, "k")->expires_at_ms() == clock.Now() + 50);
  // PERSIST.
  REQUIRE_OK(db->Expire(1, "k", 0));
  clock.Advance(100);
  CHECK(*db->Get(1, "k") == "v3");
}

TEST_CASE("storage merges registers on Write and ApplyBatch", "[storage][ttl]") {
  TempDir dir;
  FakeClock clock(kStartMs);
  StorageOptions options = TestOptions();
  options.physical_clock_ms = clock.Fn();
  auto db = OpenOrDie(dir.path(), options);
  const uint64_t ts = common::HlcClock::Make(kStartMs, 0);
  const Envelope set_old = Envelope::Plain({ts + 1, 1}, false, "old");
  const Envelope expire = Envelope::ExpiryOnly({ts + 2, 2}, kStartMs + 10);
  const Envelope set_new = Envelope::Plain({ts + 3, 3}, false, "new");

  // An EXPIRE reaching a replica with no record stores an expiry-only record (reads absent)...
  auto r = db->Write(1, "a", expire);
  REQUIRE_OK(r);
  CHECK(r->outcome == WriteOutcome::kApplied);
  CHECK(db->Get(1, "a").status().IsNotFound());
  // ...and the older SET merges under it: the value with the TTL.
  r = db->Write(1, "a", set_old);
  REQUIRE_OK(r);
  CHECK(r->outcome == WriteOutcome::kApplied);
  CHECK(*db->Get(1, "a") == "old");
  CHECK(db->GetEnvelope(1, "a")->expires_at_ms() == kStartMs + 10);
  CHECK(db->Write(1, "a", expire)->outcome == WriteOutcome::kDuplicate);
  CHECK(db->Write(1, "a", set_old)->outcome == WriteOutcome::kSuperseded);
  // The newer SET clears it; the EXPIRE replayed afterwards cannot hide the newer value.
  REQUIRE_OK(db->Write(1, "a", set_new));
  CHECK(db->Write(1, "a", expire)->outcome == WriteOutcome::kSuperseded);
  clock.Advance(1000);
  CHECK(*db->Get(1, "a") == "new");

  // The same key in one batch, in every order, gives the same merged record.
  std::vector<RangeEntry> batch = {{2, "b", expire}, {2, "b", set_new}, {2, "b", set_old}};
  auto stats = db->ApplyBatch(batch);
  REQUIRE_OK(stats);
  CHECK(stats->applied == 1);
  CHECK(stats->superseded == 2);
  CHECK(*db->GetEnvelope(2, "b") == Merge(Merge(expire, set_new), set_old));
  std::vector<RangeEntry> other = {{3, "b", set_old}, {3, "b", expire}};
  REQUIRE_OK(db->ApplyBatch(other));
  REQUIRE_OK(db->ApplyBatch({{3, "b", expire}}));
  CHECK(db->ApplyBatch({{3, "b", expire}})->duplicate == 1);
  CHECK(*db->GetEnvelope(3, "b") == Merge(set_old, expire));
  CHECK(db->GetEnvelope(3, "b")->expires_at_ms() == kStartMs + 10);

  // Contradictory registers are refused.
  Envelope bad = expire;
  bad.value = "x";
  CHECK(db->Write(4, "c", bad).status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("GC collects expired values after the grace, not protected ones", "[storage][ttl][gc]") {
  TempDir dir;
  FakeClock clock(kStartMs);
  StorageOptions options = TestOptions();
  options.physical_clock_ms = clock.Fn();
  options.tombstone_grace_ms = 2000;
  auto db = OpenOrDie(dir.path(), options);

  constexpr uint64_t kExpired = 1000;
  constexpr uint64_t kProtected = 3000;
  constexpr uint64_t kLive = 5000;
  constexpr uint64_t kExpiryOnly = 6000;
  REQUIRE_OK(db->Put(kExpired, "k", "old"));
  REQUIRE_OK(db->Flush());
  REQUIRE_OK(db->CompactRange(kAll));  // an older version beneath, in the bottommost level
  REQUIRE_OK(db->Put(kExpired, "k", "v", PutExpiry{kStartMs + 100, false}));
  REQUIRE_OK(db->Put(kProtected, "k", "v", PutExpiry{kStartMs + 100, false}));
  REQUIRE_OK(db->Put(kLive, "k", "v", PutExpiry{kStartMs + 100'000, false}));
  REQUIRE_OK(db->Expire(kExpiryOnly, "k", kStartMs + 100));
  REQUIRE_OK(db->Flush());
  auto protection = db->ProtectRange({2500, 3500});
  REQUIRE_OK(protection);

  clock.Set(kStartMs + 100 + 2000);  // expired exactly a grace ago: still kept
  REQUIRE_OK(db->CompactRange(kAll));
  CHECK(db->GetEnvelope(kExpired, "k")->value == "v");
  // The expiry-only record ages like a tombstone, from its write (at kStartMs): gone already.
  CHECK(db->GetEnvelope(kExpiryOnly, "k").status().IsNotFound());
  CHECK(db->TombstonesDropped() == 1);

  clock.Advance(1);
  REQUIRE_OK(db->CompactRange(kAll));
  CHECK(db->GetEnvelope(kExpired, "k").status().IsNotFound());
  auto internal = db->DebugCountInternalEntries({kExpired, kExpired});
  REQUIRE_OK(internal);
  CHECK(*internal == 0);  // the older version did not come back either
  CHECK(db->GetEnvelope(kProtected, "k")->value == "v");
  CHECK(db->GetEnvelope(kLive, "k")->value == "v");
  CHECK(db->TombstonesDropped() == 2);

  REQUIRE_OK(db->UnprotectRange(*protection));
  REQUIRE_OK(db->CompactRange(kAll));
  CHECK(db->GetEnvelope(kProtected, "k").status().IsNotFound());
}

}  // namespace
}  // namespace shardkv::storage
