// Helpers shared by KvService's source files (not part of its interface).
#pragma once

#include <string>

#include "net/messages.h"
#include "shardkv/status.h"
#include "storage/disk_space.h"

namespace shardkv::node::internal {

inline net::ResponseBody Error(const Status& s) { return net::ErrorResponse::Of(s); }

// A full disk reaches a client wrapped in whatever was being written when it struck ("persisting
// HLC ceiling: writing HLC ceiling: ..."): jargon that hides the one fact that matters. Cut it
// down to the storage's plain "no space left on device on node N". A quorum failure that names
// the full replica in parentheses keeps its whole message: it also says what else failed.
// Returns the number of leading characters to drop from `message` (0: keep it whole).
inline size_t NoSpacePrefix(const std::string& message) {
  const size_t at = message.find(storage::kNoSpaceMessage);
  if (at == 0 || at == std::string::npos) return 0;
  if (message.find('(') < at) return 0;
  return at;
}

inline Status PlainNoSpace(const Status& s) {
  const size_t cut = NoSpacePrefix(s.message());
  if (cut == 0) return s;
  return Status(s.code(), s.reason(), s.message().substr(cut));
}

inline void PlainNoSpace(net::ResponseBody* body) {
  auto* e = std::get_if<net::ErrorResponse>(body);
  if (e == nullptr) return;
  if (const size_t cut = NoSpacePrefix(e->message); cut != 0) e->message.erase(0, cut);
}

}  // namespace shardkv::node::internal
