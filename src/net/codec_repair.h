// The codec of the anti-entropy messages (repair_messages.h, anti_entropy.capnp). Private to
// src/net, like codec_internal.h: it takes generated Cap'n Proto types.
#pragma once

#include "anti_entropy.capnp.h"
#include "net/repair_messages.h"
#include "shardkv/status.h"

namespace shardkv::net::codec_internal {

void FillAntiEntropy(const AntiEntropyRequest& r, wire::AntiEntropyRequest::Builder b);
StatusOr<AntiEntropyRequest> ReadAntiEntropy(wire::AntiEntropyRequest::Reader r);
void FillAntiEntropy(const AntiEntropyResponse& r, wire::AntiEntropyReply::Builder b);
StatusOr<AntiEntropyResponse> ReadAntiEntropy(wire::AntiEntropyReply::Reader r);

}  // namespace shardkv::net::codec_internal
