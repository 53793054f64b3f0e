// The admin API's change commands (a typed union) and the node's ChangeReport answer through the
// codec, and the refusal of a 0.1.0 CLI's text command.
#include <catch2/catch.hpp>
#include <string>
#include <variant>

#include "net/codec.h"
#include "net/codec_round_trip.h"
#include "net/messages.h"

namespace shardkv::net {
namespace {

AdminRequest RoundTripCommand(ChangeCommand command) {
  Request in;
  in.id = 5;
  in.cluster_id = 0xABC;
  in.body = AdminRequest{std::move(command)};
  return std::get<AdminRequest>(testing::RoundTrip(in).body);
}

}  // namespace

TEST_CASE("codec: every change command round-trips typed", "[net][codec][admin]") {
  SECTION("plan and begin carry the change and its limits") {
    const ChangeRequest add{ChangeKind::kJoin, 7, std::string("h\0st:1", 6), 2.5};
    const ChangeThrottle limits{(uint64_t{3} << 40) + 17, 9};
    const auto plan = RoundTripCommand(PlanChangeCommand{add, limits});
    const auto& p = std::get<PlanChangeCommand>(plan.command);
    CHECK(p.change.kind == ChangeKind::kJoin);
    CHECK(p.change.node_id == 7);
    CHECK(p.change.address == add.address);  // the NUL survives
    CHECK(p.change.weight == 2.5);
    CHECK(p.throttle.rate_bytes_per_s == limits.rate_bytes_per_s);  // bytes, not MiB
    CHECK(p.throttle.streams_per_node == 9);
    const auto begin = RoundTripCommand(
        BeginChangeCommand{ChangeRequest{ChangeKind::kRemove, 3, "", 1.0}, ChangeThrottle{0, 1}});
    const auto& b = std::get<BeginChangeCommand>(begin.command);
    CHECK(b.change.kind == ChangeKind::kRemove);
    CHECK(b.change.node_id == 3);
    CHECK(b.throttle.rate_bytes_per_s == 0);  // unthrottled
  }
  SECTION("status, cancel and resume") {
    CHECK(std::holds_alternative<ChangeStatusCommand>(
        RoundTripCommand(ChangeStatusCommand{}).command));
    CHECK(std::holds_alternative<CancelChangeCommand>(
        RoundTripCommand(CancelChangeCommand{}).command));
    CHECK(std::holds_alternative<ResumeChangeCommand>(
        RoundTripCommand(ResumeChangeCommand{}).command));
  }
  SECTION("throttle keeps 'not given' apart from 0") {
    const auto both = std::get<ThrottleChangeCommand>(
        RoundTripCommand(ThrottleChangeCommand{uint64_t{500} << 10, 4}).command);
    CHECK(both.rate_bytes_per_s == uint64_t{500} << 10);  // below 1 MiB/s: not rounded to 0
    CHECK(both.streams_per_node == 4u);
    const auto rate_only =
        std::get<ThrottleChangeCommand>(RoundTripCommand(ThrottleChangeCommand{0, {}}).command);
    CHECK(rate_only.rate_bytes_per_s == 0u);
    CHECK_FALSE(rate_only.streams_per_node.has_value());
    const auto streams_only =
        std::get<ThrottleChangeCommand>(RoundTripCommand(ThrottleChangeCommand{{}, 1}).command);
    CHECK_FALSE(streams_only.rate_bytes_per_s.has_value());
    CHECK(streams_only.streams_per_node == 1u);
  }
  CHECK(ChangeCommandName(ThrottleChangeCommand{}) == "throttle");
  CHECK(ChangeCommandName(PlanChangeCommand{}) == "plan");
  CHECK(OpName(RequestBody{AdminRequest{}}) == "admin");
}

TEST_CASE("codec: a change report answer round-trips", "[net][codec][admin]") {
  AdminResponse in;
  in.report.has_change = true;
  in.report.epoch = 12;
  in.report.driver = 2;
  in.report.driver_address = "127.0.0.1:7002";
  in.report.record.change_id = 99;
  in.report.record.node_id = 5;
  in.report.record.state = ChangeState::kStreaming;
  in.report.record.planned_copies = 1234;
  in.report.streams.push_back(StreamProgress{1, 5, 2, 1, 10, 4, 100, 40, 1000, 400});
  Response r;
  r.id = 3;
  r.body = in;
  const auto out = std::get<AdminResponse>(testing::RoundTrip(r).body).report;
  CHECK(out.has_change);
  CHECK(out.epoch == 12);
  CHECK(out.driver_address == "127.0.0.1:7002");
  CHECK(out.record.change_id == 99);
  CHECK(out.record.state == ChangeState::kStreaming);
  CHECK(out.record.planned_copies == 1234);
  REQUIRE(out.streams.size() == 1);
  CHECK(out.streams[0].copies_done == 40);
  CHECK(OpName(ResponseBody{AdminResponse{}}) == "admin");
}

TEST_CASE("codec: a 0.1.0 CLI's text admin command is refused, saying to upgrade the CLI",
          "[net][codec][admin]") {
  std::string framed;
  Request in;
  in.id = 42;
  in.body = AdminRequest{ChangeStatusCommand{}};
  REQUIRE(EncodeRequest(in, &framed).ok());
  std::string payload = testing::PayloadOf(framed);
  // The body's union tag is the UInt16 at data byte 34 of the Request (codec_test.cc); members
  // are numbered in ordinal order: admin (@19) is 14, change (@21) is 15.
  const size_t tag = 8 + 8 + 34;
  REQUIRE(payload.size() > tag + 2);
  REQUIRE(static_cast<unsigned char>(payload[tag]) == 15);
  payload[tag] = 14;
  uint64_t id = 0;
  auto r = DecodeRequest(payload, {}, &id);
  CHECK(r.status().code() == Status::Code::kNotSupported);
  CHECK_THAT(r.status().message(), Catch::Contains("upgrade the shardkv CLI"));
  CHECK(id == 42);  // answered as that request's error, the connection kept
}

}  // namespace shardkv::net
