// Every error reason (Status::Reason) has its three mappings: the mutation outcome
// (ReasonOutcome), the CLI's exit code (ReasonExitCode) and the Redis error prefix
// (RedisErrorPrefix), consistent with each other; decisions switch on the reason, never on the
// message (docs/design.md "Error reasons"). A reason appended without its mappings fails here
// (and the switches without a default fail the build under -Werror=switch).
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "cli_common.h"
#include "global_options.h"
#include "net/legacy_reason.h"
#include "redis/key_commands.h"
#include "shardkv/mutation_outcome.h"

using shardkv::ClassifyMutation;
using shardkv::MutationOutcome;
using shardkv::ReasonOutcome;
using shardkv::Status;
using Reason = shardkv::Status::Reason;

namespace {

constexpr int kReasons = static_cast<int>(Reason::kCount);

}  // namespace

TEST_CASE("reasons: every reason has a name an outcome an exit code and a Redis prefix",
          "[unit][reason]") {
  std::set<std::string> names;
  for (int i = 1; i < kReasons; ++i) {
    const auto r = static_cast<Reason>(i);
    const std::string name(Status::ReasonName(r));
    INFO("reason " << i << " " << name);
    CHECK(name != "unknown");
    CHECK(names.insert(name).second);  // distinct
    const auto outcome = ReasonOutcome(r);
    REQUIRE(outcome.has_value());
    CHECK(*outcome != MutationOutcome::kApplied);
    const auto exit = shardkv::cli::ReasonExitCode(r);
    REQUIRE(exit.has_value());
    // Indeterminate is exit 4 and only it; not applied is 1 (refused) or 3 (not now).
    if (*outcome == MutationOutcome::kIndeterminate) {
      CHECK(*exit == shardkv::cli::kExitIndeterminate);
    } else {
      CHECK((*exit == shardkv::cli::kExitFailed || *exit == shardkv::cli::kExitUnreachable));
    }
    const std::string prefix(shardkv::redis::RedisErrorPrefix(r));
    CHECK((prefix == "ERR" || prefix == "CLUSTERDOWN" || prefix == "TRYAGAIN" ||
           prefix == "WRONGTYPE"));
    // The reason decides whatever the code.
    for (auto code : {Status::Code::kUnavailable, Status::Code::kTimeout, Status::Code::kInternal,
                      Status::Code::kFailedPrecondition}) {
      const Status s(code, r, "any words at all");
      CHECK(ClassifyMutation(s) == *outcome);
      if (*outcome == MutationOutcome::kIndeterminate) {
        CHECK(shardkv::cli::MutationExitCode(s) == shardkv::cli::kExitIndeterminate);
      } else {
        CHECK(shardkv::cli::MutationExitCode(s) == *exit);
      }
    }
  }
  CHECK(Status::ReasonName(Reason::kNone) == "none");
  CHECK_FALSE(ReasonOutcome(Reason::kNone).has_value());
  CHECK_FALSE(shardkv::cli::ReasonExitCode(Reason::kNone).has_value());
  CHECK(shardkv::redis::RedisErrorPrefix(Reason::kNone) == "ERR");
}

TEST_CASE("reasons: a message never decides once a reason is given", "[unit][reason]") {
  // Words that the previous release's text matching read, with no reason: the code decides.
  const Status worded = Status::Unavailable("no majority: write not applied; connection reset");
  CHECK(ClassifyMutation(worded) == MutationOutcome::kNotApplied);
  CHECK_FALSE(shardkv::cli::NoMajority(worded));
  CHECK(shardkv::redis::ErrorReply(Status::Unavailable("node 3 is unformed")) ==
        "-ERR node 3 is unformed\r\n");
  // The reason alone decides.
  CHECK(shardkv::cli::NoMajority(Status(Status::Code::kUnavailable, Reason::kNoMajority, "x")));
  CHECK(shardkv::redis::ErrorReply(
            Status(Status::Code::kUnavailable, Reason::kStarting, "node 3 is starting")) ==
        "-CLUSTERDOWN node 3 is starting\r\n");
  CHECK(ClassifyMutation(Status(Status::Code::kTimeout, Reason::kLate, "dropped")) ==
        MutationOutcome::kNotApplied);
  // Context added on the way up keeps the reason.
  const Status wrapped =
      Status(Status::Code::kUnavailable, Reason::kLostInFlight, "reset").WithContext("node 2");
  CHECK(wrapped.reason() == Reason::kLostInFlight);
  CHECK(ClassifyMutation(wrapped) == MutationOutcome::kIndeterminate);
  CHECK(Status::OK().WithReason(Reason::kLate).ok());
  CHECK(Status::OK().WithReason(Reason::kLate).reason() == Reason::kNone);
}

TEST_CASE("reasons: the previous release's messages are read by the fallback only",
          "[unit][reason]") {
  using shardkv::net::InferLegacyReason;
  using C = Status::Code;
  CHECK(InferLegacyReason(C::kUnavailable, "no majority: 2 of 4 voters reachable") ==
        Reason::kNoMajority);
  CHECK(InferLegacyReason(C::kFailedPrecondition, "unformed: node 2 has no cluster map") ==
        Reason::kUnformed);
  CHECK(InferLegacyReason(C::kUnavailable, "node 2 is starting (loading its cluster map)") ==
        Reason::kStarting);
  CHECK(InferLegacyReason(C::kAborted, "superseded: epoch 5 was decided otherwise") ==
        Reason::kSuperseded);
  CHECK(InferLegacyReason(C::kAborted, "epoch is 6, not the expected 5") ==
        Reason::kUnexpectedEpoch);
  CHECK(InferLegacyReason(C::kUnavailable, "node 3 does not lead (a leader change ...)") ==
        Reason::kNotLeader);
  CHECK(InferLegacyReason(C::kInvalidArgument, "client timestamp rejected: 2000 ms ahead") ==
        Reason::kClockRejected);
  CHECK(InferLegacyReason(C::kFailedPrecondition,
                          "request for cluster 5 reached node 2 of cluster 7") ==
        Reason::kWrongCluster);
  CHECK(InferLegacyReason(C::kUnavailable, "127.0.0.1:9: connection refused") ==
        Reason::kUnreachable);
  CHECK(InferLegacyReason(C::kUnavailable, "some other trouble") == Reason::kNone);
  CHECK(InferLegacyReason(C::kOk, "no majority") == Reason::kNone);
}
