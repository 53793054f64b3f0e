#include "net/auth_handshake.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cstring>

#include "net/codec.h"

namespace shardkv::net::auth {
namespace {

constexpr size_t kKindAt = 8;
constexpr size_t kVersionAt = 9;
constexpr size_t kRoleAt = 10;
constexpr size_t kBodyAt = 16;

std::string_view KindName(Kind k) {
  switch (k) {
    case Kind::kHello:
      return "hello";
    case Kind::kChallenge:
      return "challenge";
    case Kind::kProof:
      return "proof";
    case Kind::kWelcome:
      return "welcome";
  }
  return "unknown";
}

std::string Hmac(std::string_view key, std::string_view label, std::string_view cn,
                 std::string_view sn, std::string_view extra) {
  std::string data;
  data.reserve(label.size() + cn.size() + sn.size() + extra.size());
  data.append(label).append(cn).append(sn).append(extra);
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &n) == nullptr) {
    return std::string();  // matches no proof: the handshake fails closed
  }
  return std::string(reinterpret_cast<const char*>(out), n);
}

}  // namespace

std::string EncodeFrame(Kind kind, std::string_view body, Role role) {
  std::string frame(kFrameHeaderBytes + kPayloadBytes, '\0');
  const uint32_t n = kPayloadBytes;
  for (size_t i = 0; i < kFrameHeaderBytes; ++i)
    frame[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  char* p = frame.data() + kFrameHeaderBytes;
  std::memcpy(p, kMagic.data(), kMagic.size());
  p[kKindAt] = static_cast<char>(kind);
  p[kVersionAt] = static_cast<char>(kVersion);
  p[kRoleAt] = static_cast<char>(role);
  std::memcpy(p + kBodyAt, body.data(), std::min(body.size(), kPayloadBytes - kBodyAt));
  return frame;
}

bool LooksLikeHandshake(std::string_view payload) {
  return payload.size() >= kMagic.size() && payload.substr(0, kMagic.size()) == kMagic;
}

StatusOr<Message> Parse(std::string_view payload, Kind expected) {
  const std::string want = "an authentication " + std::string(KindName(expected));
  if (!LooksLikeHandshake(payload)) {
    return Status::Unauthenticated("expected " + want + ", got another message");
  }
  if (payload.size() != kPayloadBytes) {
    return Status::Unauthenticated("expected " + want + " of " + std::to_string(kPayloadBytes) +
                                   " bytes, got " + std::to_string(payload.size()));
  }
  if (static_cast<uint8_t>(payload[kVersionAt]) != kVersion) {
    return Status::Unauthenticated("authentication handshake version " +
                                   std::to_string(static_cast<uint8_t>(payload[kVersionAt])) +
                                   " is not supported (this " + "build speaks version " +
                                   std::to_string(kVersion) + ")");
  }
  Message m;
  m.kind = static_cast<Kind>(payload[kKindAt]);
  if (m.kind != expected) {
    return Status::Unauthenticated("expected " + want + ", got message kind " +
                                   std::to_string(static_cast<uint8_t>(m.kind)));
  }
  m.role = static_cast<Role>(payload[kRoleAt]);
  m.body = std::string(payload.substr(kBodyAt));
  return m;
}

StatusOr<std::string> NewNonce() {
  std::string nonce(kNonceBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), kNonceBytes) != 1) {
    return Status::Internal("the random number generator failed (OpenSSL RAND_bytes)");
  }
  return nonce;
}

std::string ClientProof(std::string_view key, std::string_view cn, std::string_view sn) {
  return Hmac(key, "shardkv-auth-v1 client", cn, sn, {});
}

std::string ServerProof(std::string_view key, std::string_view cn, std::string_view sn, Role role) {
  const char r = static_cast<char>(role);
  return Hmac(key, "shardkv-auth-v1 server", cn, sn, std::string_view(&r, 1));
}

bool SameMac(std::string_view a, std::string_view b) {
  return a.size() == b.size() && !a.empty() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool NodeOnly(const RequestBody& body) {
  // Anti-entropy's tree queries and applies are replica traffic between nodes (an apply writes
  // versioned records, like replicaWrite); its `repair` command is what the admin sends.
  if (const auto* ae = std::get_if<AntiEntropyRequest>(&body)) {
    return !std::holds_alternative<RepairCommand>(ae->op);
  }
  return std::holds_alternative<ReplicaWriteRequest>(body) ||
         std::holds_alternative<ReplicaWriteBatchRequest>(body) ||
         std::holds_alternative<ReplicaReadRequest>(body) ||
         std::holds_alternative<ReplicaScanRequest>(body) ||
         std::holds_alternative<InstallMapRequest>(body) ||
         std::holds_alternative<StreamScanRequest>(body) ||
         std::holds_alternative<StreamRangeRequest>(body) ||
         std::holds_alternative<CountRangesRequest>(body) ||
         std::holds_alternative<RaftMessageRequest>(body);
}

}  // namespace shardkv::net::auth
