// ClassifyMutation (include/shardkv/mutation_outcome.h) on the errors the client, the
// coordinator, the transport and the map committer word, as a node of the previous release sent
// them (no reason on the wire: the reason is inferred from the message, net/legacy_reason.h),
// and the CLI's JSON and exit codes built on it. tests/tools/reason_mapping_test.cc covers the
// typed reasons themselves.
#include "shardkv/mutation_outcome.h"

#include <catch2/catch.hpp>

#include "cli_common.h"
#include "kv_io.h"
#include "net/legacy_reason.h"

using shardkv::ClassifyMutation;
using shardkv::MutationOutcome;
using shardkv::MutationOutcomeName;
using shardkv::Status;

namespace {

// `s` as it arrives from a node of the previous release (codec: reason `unset` on the wire).
Status Legacy(const Status& s) {
  return s.WithReason(shardkv::net::InferLegacyReason(s.code(), s.message()));
}

}  // namespace

TEST_CASE("ClassifyMutation: success is applied", "[unit][outcome]") {
  CHECK(ClassifyMutation(Status::OK()) == MutationOutcome::kApplied);
  CHECK(MutationOutcomeName(MutationOutcome::kApplied) == "applied");
  CHECK(MutationOutcomeName(MutationOutcome::kNotApplied) == "not_applied");
  CHECK(MutationOutcomeName(MutationOutcome::kIndeterminate) == "indeterminate");
}

TEST_CASE("ClassifyMutation: an old node's refusal or no majority is not_applied",
          "[unit][outcome]") {
  for (const Status& s : {
           Status::Unavailable("no node answered (127.0.0.1:9: connection refused)"),
           Status::Unavailable("127.0.0.1:9: connection refused (after 3 attempts)"),
           Status::Unavailable("127.0.0.1:9: connect timed out after 3000 ms"),
           Status::Unavailable("127.0.0.1:7001 belongs to cluster 5, not cluster 7"),
           Status::Unavailable("node 2 is starting (fetching the newest cluster map)"),
           Status::Unavailable("no majority: 2 of 4 voters reachable"),
           Status::FailedPrecondition("no majority: 2 of 4 voters reachable"),
           Status::Unavailable("write not applied: a replica holds a newer version of the key "
                               "whose timestamp this node cannot pass (too far ahead)"),
           Status::Aborted("epoch 4 refused: Aborted: two different maps with epoch 4"),
           Status::FailedPrecondition("no change is running"),
           Status::InvalidArgument("client timestamp rejected: 2000 ms ahead"),
           Status::Unauthenticated("127.0.0.1:7001: wrong secret"),
           Status::NotFound("not found"),
           Status::Timeout("request reached node 2 40 ms after its client stopped waiting; "
                           "dropped (after 1 attempt)"),
       }) {
    INFO(s.ToString());
    CHECK(ClassifyMutation(Legacy(s)) == MutationOutcome::kNotApplied);
  }
}

TEST_CASE("ClassifyMutation: an old node's error without a definite answer is indeterminate",
          "[unit][outcome]") {
  for (const Status& s : {
           Status::Timeout("127.0.0.1:7001: timed out after 200 ms (after 3 attempts)"),
           Status::Timeout("epoch 5 outcome unknown: nodes 2 accepted it, nodes 3 refused it"),
           Status::Unavailable("write quorum not reached: 1 of 2 required acks; unavailable "
                               "replicas: node 2 (timed out)"),
           Status::Unavailable("127.0.0.1:7001: connection closed by the server"),
           Status::Unavailable("127.0.0.1:7001: connection reset: no reply for 1000 ms"),
           // An earlier attempt may have landed; the last was refused (client_core.cc).
           Status::Unavailable("outcome unknown: an earlier attempt may have been applied "
                               "(timed out); then 127.0.0.1:2: connection refused"),
           Status::Corruption("127.0.0.1:7001: bad frame"),
           Status::Internal("unexpected"),
       }) {
    INFO(s.ToString());
    CHECK(ClassifyMutation(Legacy(s)) == MutationOutcome::kIndeterminate);
  }
}

TEST_CASE("cli outcome: the JSON of a mutation's outcome", "[unit][outcome]") {
  using namespace shardkv::cli;
  CHECK(kExitIndeterminate == 4);  // docs/cli.md "Exit codes": scripts branch on it
  CHECK(MutationErrorJson("k", MutationOutcome::kIndeterminate, Status::Timeout("t")) ==
        R"({"key":"k","outcome":"indeterminate","error":"t"})");
  CHECK(WithOutcome(R"({"a":1})", MutationOutcome::kApplied) == R"({"outcome":"applied","a":1})");
  CHECK(WithOutcome("{}", MutationOutcome::kNotApplied) == R"({"outcome":"not_applied"})");
  CHECK(OutcomeErrorJson(MutationOutcome::kNotApplied, "e") ==
        R"({"outcome":"not_applied","error":"e"})");
}
