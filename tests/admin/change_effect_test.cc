// ChangeEffect (include/shardkv/change_effect.h): which change status shows that a begin,
// cancel, resume or throttle took effect, and which commands could take effect at all; and
// Admin::ResolveOutcome's answers that need no node (an OK reply, a foreign one, an impossible
// command, no node to ask).
#include "shardkv/change_effect.h"

#include <catch2/catch.hpp>
#include <chrono>

#include "shardkv/admin.h"

using namespace shardkv;

namespace {

ChangeReport Report(uint64_t change_id, ChangeKind kind, uint32_t node_id, ChangeState state) {
  ChangeReport r;
  r.has_change = true;
  r.record.change_id = change_id;
  r.record.kind = kind;
  r.record.node_id = node_id;
  r.record.state = state;
  r.record.rate_bytes_per_s = 1u << 20;
  r.record.streams_per_node = 2;
  return r;
}

}  // namespace

TEST_CASE("change effect: a begin shows as a new change of its kind and node", "[admin]") {
  const ChangeReport none;
  const ChangeReport old = Report(7, ChangeKind::kAdd, 4, ChangeState::kDone);
  const ChangeReport added = Report(8, ChangeKind::kAdd, 5, ChangeState::kStreaming);
  CHECK(ChangeEffect::Begin(none, ChangeKind::kAdd, 5).Possible());
  CHECK(ChangeEffect::Begin(none, ChangeKind::kAdd, 5).ShownBy(added));
  CHECK(ChangeEffect::Begin(old, ChangeKind::kAdd, 5).ShownBy(added));
  CHECK(ChangeEffect::Begin(old, ChangeKind::kAdd, 0).ShownBy(added));  // 0: any node
  // The change that was there before, another node or another kind is not this begin.
  CHECK_FALSE(ChangeEffect::Begin(old, ChangeKind::kAdd, 4).ShownBy(old));
  CHECK_FALSE(ChangeEffect::Begin(old, ChangeKind::kAdd, 6).ShownBy(added));
  CHECK_FALSE(ChangeEffect::Begin(old, ChangeKind::kRemove, 5).ShownBy(added));
  CHECK_FALSE(ChangeEffect::Begin(old, ChangeKind::kAdd, 5).ShownBy(none));
}

TEST_CASE("change effect: cancel resume and throttle show on the same change", "[admin]") {
  const ChangeReport streaming = Report(8, ChangeKind::kAdd, 5, ChangeState::kStreaming);
  const ChangeReport failed = Report(8, ChangeKind::kAdd, 5, ChangeState::kFailed);
  const ChangeReport cancelled = Report(8, ChangeKind::kAdd, 5, ChangeState::kCancelled);
  const ChangeReport done = Report(8, ChangeKind::kAdd, 5, ChangeState::kDone);
  const ChangeReport next = Report(9, ChangeKind::kAdd, 6, ChangeState::kCancelled);

  CHECK(ChangeEffect::Cancel(streaming).Possible());
  CHECK(ChangeEffect::Cancel(failed).Possible());
  CHECK_FALSE(ChangeEffect::Cancel(done).Possible());
  CHECK_FALSE(ChangeEffect::Cancel(ChangeReport{}).Possible());
  CHECK(ChangeEffect::Cancel(streaming).ShownBy(cancelled));
  CHECK_FALSE(ChangeEffect::Cancel(streaming).ShownBy(streaming));
  CHECK_FALSE(ChangeEffect::Cancel(streaming).ShownBy(next));  // another change's cancel

  CHECK(ChangeEffect::Resume(failed).Possible());
  CHECK_FALSE(ChangeEffect::Resume(streaming).Possible());
  CHECK(ChangeEffect::Resume(failed).ShownBy(streaming));
  CHECK(ChangeEffect::Resume(failed).ShownBy(done));
  CHECK_FALSE(ChangeEffect::Resume(failed).ShownBy(failed));
  CHECK_FALSE(ChangeEffect::Resume(failed).ShownBy(cancelled));

  const ChangeEffect unthrottle = ChangeEffect::Throttle(streaming, 0, std::nullopt);
  CHECK(unthrottle.Possible());
  CHECK_FALSE(ChangeEffect::Throttle(done, 0, std::nullopt).Possible());
  CHECK_FALSE(unthrottle.ShownBy(streaming));  // still 1 MB/s
  ChangeReport after = streaming;
  after.record.rate_bytes_per_s = 0;
  CHECK(unthrottle.ShownBy(after));
  CHECK_FALSE(ChangeEffect::Throttle(streaming, 0, 3).ShownBy(after));  // streams still 2
  after.record.state = ChangeState::kDone;
  CHECK_FALSE(unthrottle.ShownBy(after));  // an ended change has no limits to change
}

TEST_CASE("change effect: ResolveOutcome answers without asking when the reply says", "[admin]") {
  auto created = Admin::Create(AdminOptions{});  // no seeds: a status poll reaches nobody
  REQUIRE(created.ok());
  Admin& admin = **created;
  const ChangeReport streaming = Report(8, ChangeKind::kAdd, 5, ChangeState::kStreaming);
  const auto no_wait = std::chrono::milliseconds(0);

  AdminReply ok;
  ok.address = "127.0.0.1:7001";
  ok.report = Report(8, ChangeKind::kAdd, 5, ChangeState::kCancelled);
  ChangeOutcome applied = admin.ResolveOutcome(ok, ChangeEffect::Cancel(streaming), no_wait);
  CHECK(applied.outcome == MutationOutcome::kApplied);
  CHECK_FALSE(applied.confirmed);
  REQUIRE(applied.report.has_value());
  CHECK(applied.report->record.state == ChangeState::kCancelled);
  CHECK(applied.address == ok.address);

  // A node of another cluster refused it: nothing of this cluster ran it, whatever the code.
  AdminReply foreign;
  foreign.status = Status::Timeout("elsewhere");
  foreign.foreign = true;
  CHECK(admin.ResolveOutcome(foreign, ChangeEffect::Cancel(streaming), no_wait).outcome ==
        MutationOutcome::kNotApplied);
  // A resume of a running change cannot have taken effect, even after a timeout.
  AdminReply timeout;
  timeout.status = Status::Timeout("no reply within 90000 ms");
  CHECK(admin.ResolveOutcome(timeout, ChangeEffect::Resume(streaming), no_wait).outcome ==
        MutationOutcome::kNotApplied);
  // A cancel that timed out and that no status shows: only a later status tells.
  const ChangeOutcome unknown =
      admin.ResolveOutcome(timeout, ChangeEffect::Cancel(streaming), no_wait);
  CHECK(unknown.outcome == MutationOutcome::kIndeterminate);
  CHECK_FALSE(unknown.report.has_value());
  // Refused by the node: not applied.
  AdminReply refused;
  refused.status = Status::FailedPrecondition("no change is running");
  CHECK(admin.ResolveOutcome(refused, ChangeEffect::Cancel(streaming), no_wait).outcome ==
        MutationOutcome::kNotApplied);
}
