// ChangeEffect: what a change command shows in the change status once it took effect.
//
// A change command that got an error or no answer may still have taken effect: its commit can
// land on the other nodes while the node asked fails, or the reply can be lost. The change status
// then decides, and a ChangeEffect says what to look for in it (Admin::ResolveOutcome polls it).
// Each effect compares the status after the command with the one taken before it was sent, so
// an older change, or a state the change was already in, never counts as the command's doing.
//
// Thread-safety: a value; const methods are pure.
#pragma once

#include <cstdint>
#include <optional>

#include "shardkv/change.h"

namespace shardkv {

class ChangeEffect {
 public:
  enum class Command { kBegin, kCancel, kResume, kThrottle };

  // `before`: the change status taken before the command was sent (ChangeStatus().report; a
  // default ChangeReport, has_change false, when there was no change or no answer).
  //
  // Begin (or SetParams) of a change of `kind`: a change other than `before`'s shows, of that
  // kind and, unless `node_id` is 0, of that node.
  static ChangeEffect Begin(const ChangeReport& before, ChangeKind kind, uint32_t node_id);
  // Cancel: `before`'s change is now cancelled.
  static ChangeEffect Cancel(const ChangeReport& before);
  // Resume: `before`'s change failed and now runs again.
  static ChangeEffect Resume(const ChangeReport& before);
  // SetThrottle: `before`'s change runs with the limits given (nullopt: any value).
  static ChangeEffect Throttle(const ChangeReport& before, std::optional<uint64_t> rate_bytes_per_s,
                               std::optional<uint32_t> streams_per_node);

  Command command() const { return command_; }
  // Whether the command can take effect at all on the change as `before` shows it: cancel and
  // throttle only a change that runs or failed, resume only a failed one; begin always.
  bool Possible() const;
  // Whether the status `after` shows the command's effect.
  bool ShownBy(const ChangeReport& after) const;

 private:
  ChangeEffect(Command command, const ChangeReport& before);

  Command command_;
  ChangeReport before_;
  ChangeKind kind_ = ChangeKind::kAdd;  // kBegin
  uint32_t node_id_ = 0;                // kBegin; 0: any
  std::optional<uint64_t> rate_bytes_per_s_;
  std::optional<uint32_t> streams_per_node_;
};

}  // namespace shardkv
