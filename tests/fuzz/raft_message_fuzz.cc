// libFuzzer target: arbitrary bytes through DecodeRaftMessage. Properties checked besides "no
// crash, no sanitizer report, no leak": a message that decodes re-encodes to the same bytes
// (the format has one encoding per message), and decoding what was re-encoded gives it back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "consensus/raft_codec.h"

using shardkv::consensus::DecodeRaftMessage;
using shardkv::consensus::EncodeRaftMessage;
using shardkv::consensus::ReleaseRaftMessage;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  raft_message m;
  std::string address;
  if (!DecodeRaftMessage(in, &m, &address).ok()) return 0;
  std::string again;
  if (!EncodeRaftMessage(m, m.server_id, address, &again).ok()) std::abort();
  ReleaseRaftMessage(&m);
  if (again != in) std::abort();
  raft_message m2;
  std::string address2;
  if (!DecodeRaftMessage(again, &m2, &address2).ok()) std::abort();
  ReleaseRaftMessage(&m2);
  return 0;
}
