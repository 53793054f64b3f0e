// ChangeEffect (include/shardkv/change_effect.h).
#include "shardkv/change_effect.h"

#include "shardkv/admin.h"

namespace shardkv {

ChangeEffect::ChangeEffect(Command command, const ChangeReport& before)
    : command_(command), before_(before) {}

ChangeEffect ChangeEffect::Begin(const ChangeReport& before, ChangeKind kind, uint32_t node_id) {
  ChangeEffect e(Command::kBegin, before);
  e.kind_ = kind;
  e.node_id_ = node_id;
  return e;
}

ChangeEffect ChangeEffect::Cancel(const ChangeReport& before) {
  return ChangeEffect(Command::kCancel, before);
}

ChangeEffect ChangeEffect::Resume(const ChangeReport& before) {
  return ChangeEffect(Command::kResume, before);
}

ChangeEffect ChangeEffect::Throttle(const ChangeReport& before,
                                    std::optional<uint64_t> rate_bytes_per_s,
                                    std::optional<uint32_t> streams_per_node) {
  ChangeEffect e(Command::kThrottle, before);
  e.rate_bytes_per_s_ = rate_bytes_per_s;
  e.streams_per_node_ = streams_per_node;
  return e;
}

bool ChangeEffect::Possible() const {
  const bool had_change = before_.has_change;
  const ChangeState state = before_.record.state;
  switch (command_) {
    case Command::kBegin:
      return true;
    case Command::kResume:
      return had_change && state == ChangeState::kFailed;
    case Command::kCancel:
    case Command::kThrottle:
      break;
  }
  // A failed change can still be cancelled or throttled (before it is resumed).
  return had_change && (!ChangeEnded(before_) || state == ChangeState::kFailed);
}

bool ChangeEffect::ShownBy(const ChangeReport& after) const {
  if (!after.has_change) return false;
  const ChangeRecord& r = after.record;
  const bool had_change = before_.has_change;
  const uint64_t change_id = before_.record.change_id;
  const ChangeState state = before_.record.state;
  if (command_ == Command::kBegin) {
    // A begun change has a new id; the one before it (if any) kept its own.
    return (!had_change || r.change_id != change_id) && r.kind == kind_ &&
           (node_id_ == 0 || r.node_id == node_id_);
  }
  if (!had_change || r.change_id != change_id) return false;
  switch (command_) {
    case Command::kCancel:
      return r.state == ChangeState::kCancelled && state != ChangeState::kCancelled;
    case Command::kResume:
      return state == ChangeState::kFailed && r.state != ChangeState::kFailed &&
             r.state != ChangeState::kCancelled;
    case Command::kBegin:
    case Command::kThrottle:
      break;
  }
  if (rate_bytes_per_s_ && r.rate_bytes_per_s != *rate_bytes_per_s_) return false;
  if (streams_per_node_ && r.streams_per_node != *streams_per_node_) return false;
  return !ChangeEnded(after);
}

}  // namespace shardkv
