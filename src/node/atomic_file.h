// Small files a node writes beside its database for launchers (port, address, metrics_port,
// redis_port): written whole or not at all.
//
// Thread-safety: stateless; two writers of one name race on the rename only (the last wins).
#pragma once

#include <string>

#include "shardkv/status.h"

namespace shardkv::node {

// Writes `text` to `dir`/`name` through a temporary file that is written, fsynced, closed and
// then renamed over `name` (and the directory fsynced), so a reader sees the old file or the
// whole new one, never an empty or partial one. Every step is checked: a full disk fails with
// IOError "cannot write DIR/NAME.tmp: No space left on device", and the temporary is removed.
Status WriteFileAtomically(const std::string& dir, const std::string& name,
                           const std::string& text);

}  // namespace shardkv::node
