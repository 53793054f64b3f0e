// The reason of an error from a node of the previous release, which sent no reason on the wire
// (shardkv.capnp ErrorReason `unset`). Such a node's messages are the only record of why, so
// this is the one place that reads an error's text to decide (docs/design.md "Error reasons"):
// the phrases below are the ones that release wrote. To be deleted one release after reasons
// were introduced, when no supported peer can send an error without one.
//
// Thread-safety: a pure function.
#pragma once

#include <string_view>

#include "shardkv/status.h"

namespace shardkv::net {

// The reason `message` (with `code`) names, as the previous release worded it; kNone if none.
Status::Reason InferLegacyReason(Status::Code code, std::string_view message);

}  // namespace shardkv::net
