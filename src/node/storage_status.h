// What a node does and says while its storage fails with I/O errors (design.md "Storage
// format": Storage health): it coordinates no writes (Unavailable, so a client tries another
// node), /readyz is not ready, and stats carry the error.
//
// Thread-safety: stateless functions over Storage::Health(), which is thread-safe.
#pragma once

#include <cstdint>

#include "net/messages.h"
#include "shardkv/status.h"
#include "storage/storage.h"

namespace shardkv::node {

// OK while the storage works; otherwise Unavailable "node N coordinates no writes while its
// storage fails: <error>" (a full disk: "... : no space left on device on node N").
Status StorageWriteRefusal(const storage::Storage& storage, uint32_t self_id);

// OK while the storage works; otherwise Unavailable with the error and since when, for /readyz.
Status StorageReadiness(const storage::Storage& storage, uint32_t self_id);

// The storage figures of the stats reply: storage_io_errors, storage_failures, disk_full,
// storage_failing, and storage_error while failing.
void AddStorageStats(const storage::Storage& storage, net::StatsResponse* out);

}  // namespace shardkv::node
