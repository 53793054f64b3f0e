// Read-only decoders of the change record and report as v0.1.0 wrote them: `key=value` lines
// (design.md "Upgrade policy"). A map persisted by that release carries such a record in its
// change detail, and a v0.1.0 node answers status with such a report. Nothing writes this form
// any more; ChangeRecord::Decode and ChangeReport::Decode fall back to it for bytes that look
// like it.
#pragma once

#include <string_view>

#include "shardkv/change.h"

namespace shardkv::legacy {

// True when `bytes` starts like the text form. A Cap'n Proto flat array never does: its first
// word is the segment count, which for "chan" or "has_" would be about a billion segments.
bool LooksLikeTextRecord(std::string_view bytes);
bool LooksLikeTextReport(std::string_view bytes);

StatusOr<ChangeRecord> DecodeTextRecord(std::string_view text);
StatusOr<ChangeReport> DecodeTextReport(std::string_view text);

}  // namespace shardkv::legacy
