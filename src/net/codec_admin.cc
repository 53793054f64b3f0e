// Encoding and decoding of the admin API's change commands (ChangeCommand, a typed union) and
// of the node's answer (a ChangeReport, whose own Cap'n Proto message and format version are
// src/clustermap's). A 0.1.0 CLI's text command is refused with a message saying what to do,
// never read as something else (design.md "Upgrade policy").
#include <string>
#include <utility>

#include "net/codec_internal.h"

namespace shardkv::net::codec_internal {
namespace {

wire::ChangeKind ToWire(ChangeKind k) {
  switch (k) {
    case ChangeKind::kJoin:
      return wire::ChangeKind::JOIN;
    case ChangeKind::kRemove:
      return wire::ChangeKind::REMOVE;
    case ChangeKind::kParams:
      return wire::ChangeKind::PARAMS;
    case ChangeKind::kAdd:
      break;
  }
  return wire::ChangeKind::ADD;
}

StatusOr<ChangeKind> FromWire(wire::ChangeKind k) {
  switch (k) {
    case wire::ChangeKind::ADD:
      return ChangeKind::kAdd;
    case wire::ChangeKind::JOIN:
      return ChangeKind::kJoin;
    case wire::ChangeKind::REMOVE:
      return ChangeKind::kRemove;
    case wire::ChangeKind::PARAMS:
      return ChangeKind::kParams;
  }
  return Status::NotSupported("unknown change kind " + std::to_string(static_cast<int>(k)) +
                              " (from a newer shardkv?)");
}

void FillSpec(const ChangeRequest& c, const ChangeThrottle& t, wire::ChangeSpec::Builder b) {
  b.setKind(ToWire(c.kind));
  b.setNodeId(c.node_id);
  b.setAddress(AsText(c.address));
  b.setWeight(c.weight);
  b.setRateBytesPerS(t.rate_bytes_per_s);
  b.setStreamsPerNode(t.streams_per_node);
  b.setReplicas(c.replicas);
  b.setWriteQuorum(c.write_quorum);
  b.setReadQuorum(c.read_quorum);
}

template <typename Command>
StatusOr<AdminRequest> ReadSpec(wire::ChangeSpec::Reader r) {
  auto kind = FromWire(r.getKind());
  if (!kind.ok()) return kind.status();
  Command c;
  c.change =
      ChangeRequest{*kind,           r.getNodeId(),      ToString(r.getAddress()), r.getWeight(),
                    r.getReplicas(), r.getWriteQuorum(), r.getReadQuorum()};
  c.throttle = ChangeThrottle{r.getRateBytesPerS(), r.getStreamsPerNode()};
  return AdminRequest{std::move(c)};
}

}  // namespace

void FillChangeCommand(const AdminRequest& a, wire::ChangeCommand::Builder b) {
  b.setForwarded(a.forwarded);
  std::visit(
      Overloaded{
          [&](const PlanChangeCommand& c) { FillSpec(c.change, c.throttle, b.initPlan()); },
          [&](const BeginChangeCommand& c) { FillSpec(c.change, c.throttle, b.initBegin()); },
          [&](const ChangeStatusCommand&) { b.setStatus(); },
          [&](const CancelChangeCommand&) { b.setCancel(); },
          [&](const ResumeChangeCommand&) { b.setResume(); },
          [&](const ThrottleChangeCommand& c) {
            auto t = b.initThrottle();
            t.setSetRate(c.rate_bytes_per_s.has_value());
            t.setRateBytesPerS(c.rate_bytes_per_s.value_or(0));
            t.setSetStreams(c.streams_per_node.has_value());
            t.setStreamsPerNode(c.streams_per_node.value_or(0));
          },
      },
      a.command);
}

namespace {

StatusOr<AdminRequest> ReadCommand(wire::ChangeCommand::Reader r) {
  switch (r.which()) {
    case wire::ChangeCommand::PLAN:
      return ReadSpec<PlanChangeCommand>(r.getPlan());
    case wire::ChangeCommand::BEGIN:
      return ReadSpec<BeginChangeCommand>(r.getBegin());
    case wire::ChangeCommand::STATUS:
      return AdminRequest{ChangeStatusCommand{}};
    case wire::ChangeCommand::CANCEL:
      return AdminRequest{CancelChangeCommand{}};
    case wire::ChangeCommand::RESUME:
      return AdminRequest{ResumeChangeCommand{}};
    case wire::ChangeCommand::THROTTLE: {
      auto t = r.getThrottle();
      ThrottleChangeCommand c;
      if (t.getSetRate()) c.rate_bytes_per_s = t.getRateBytesPerS();
      if (t.getSetStreams()) c.streams_per_node = t.getStreamsPerNode();
      return AdminRequest{c};
    }
  }
  return Status::NotSupported("unknown change command " +
                              std::to_string(static_cast<int>(r.which())) +
                              " (from a newer shardkv?)");
}

}  // namespace

StatusOr<AdminRequest> ReadChangeCommand(wire::ChangeCommand::Reader r) {
  auto read = ReadCommand(r);
  if (read.ok()) read->forwarded = r.getForwarded();
  return read;
}

Status RefuseTextAdmin(wire::Admin::Reader r) {
  return Status::NotSupported("'" + ToString(r.getCommand()) +
                              "' came in the text admin protocol of shardkv 0.1.0; this node "
                              "speaks only the typed one: upgrade the shardkv CLI");
}

std::string EncodeChangeReport(const AdminResponse& a) { return a.report.Encode(); }

StatusOr<AdminResponse> DecodeChangeReport(capnp::Data::Reader bytes) {
  auto report = ChangeReport::Decode(
      std::string_view(reinterpret_cast<const char*>(bytes.begin()), bytes.size()));
  if (!report.ok()) return report.status().WithContext("the node's change report");
  return AdminResponse{std::move(*report)};
}

}  // namespace shardkv::net::codec_internal
