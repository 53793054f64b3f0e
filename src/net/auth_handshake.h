// The authentication handshake of the native protocol (design.md "Authentication"): the
// messages, their encoding, the HMAC-SHA256 proofs, and which requests need the cluster role.
// Pure functions (OpenSSL libcrypto, no Asio), used by ServerConnection, RpcClient::Channel and
// the tests.
//
// Exchange (C = client, S = node; K = a shared secret; cn, sn = 32 random bytes each):
//   C -> S  hello      cn
//   S -> C  challenge  sn
//   C -> S  proof      HMAC(K, "shardkv-auth-v1 client" || cn || sn)
//   S -> C  welcome    role, HMAC(K, "shardkv-auth-v1 server" || cn || sn || role)
// Each message is one frame (codec.h) whose 48-byte payload starts with kMagic, which no Cap'n
// Proto message can start with, so a node without a secret still recognises a hello (and says
// it has no secret) instead of reporting garbage. A refusal is an ordinary error Response with
// id 0 (Unauthenticated), after which the node closes the connection.
//
// Thread-safety: all functions are safe to call concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "net/messages.h"
#include "shardkv/status.h"

namespace shardkv::net::auth {

inline constexpr std::string_view kMagic = "SHKVAUTH";
inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
// magic (8), kind, version, role, 5 zero bytes, then a nonce or a MAC.
inline constexpr size_t kPayloadBytes = 48;

enum class Kind : uint8_t { kHello = 1, kChallenge = 2, kProof = 3, kWelcome = 4 };

// What a connection may do once authenticated. Without a secret on the node every connection
// has the cluster role.
enum class Role : uint8_t {
  kNone = 0,
  kCluster = 1,  // the cluster secret: everything
  kClient = 2,   // the client secret: data and admin operations, never node-to-node ones
};

struct Message {
  Kind kind = Kind::kHello;
  Role role = Role::kNone;  // welcome only
  std::string body;         // kNonceBytes or kMacBytes bytes
};

// One whole frame (length prefix included). REQUIRES: body.size() == 32.
std::string EncodeFrame(Kind kind, std::string_view body, Role role = Role::kNone);

// True if `payload` (a frame's payload) is a handshake message of any kind or version.
bool LooksLikeHandshake(std::string_view payload);

// Decodes a handshake payload. Unauthenticated naming what was expected when it is not one, is
// another kind, or another version.
StatusOr<Message> Parse(std::string_view payload, Kind expected);

// kNonceBytes fresh random bytes (OpenSSL RAND_bytes). Internal if the generator fails.
StatusOr<std::string> NewNonce();

std::string ClientProof(std::string_view key, std::string_view cn, std::string_view sn);
std::string ServerProof(std::string_view key, std::string_view cn, std::string_view sn, Role role);

// Constant-time comparison of two MACs (false if the sizes differ).
bool SameMac(std::string_view a, std::string_view b);

// True for requests only nodes send each other (design.md "Authentication" lists them); a
// connection with the client role is refused them.
bool NodeOnly(const RequestBody& body);

}  // namespace shardkv::net::auth
