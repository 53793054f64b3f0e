// ServerConnection's side of the authentication handshake (auth_handshake.h, design.md
// "Authentication"). Split from server_connection.cc, which keeps the request path.
//
// The handshake reads exact frame sizes straight from the socket (no decoder). A first frame
// whose length is not the handshake's is refused; it is read (and dropped) first only when it is
// at most 4 KiB, so that the close after the error is a FIN rather than a reset that could destroy
// the error in flight. An unauthenticated peer thus costs at most 4 KiB of buffer.
#include <spdlog/spdlog.h>

#include "net/server_connection.h"

namespace shardkv::net {
namespace {

// A first frame up to this size that is not a handshake is read in full before the refusal.
constexpr uint32_t kDiscardBytes = 4096;

uint32_t LittleEndian32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace

void ServerConnection::Refuse(const Status& why) {
  if (closed_ || draining_) return;
  shared_->auth_failures.fetch_add(1, std::memory_order_relaxed);
  spdlog::warn("shardkv server: {}: {}; closing the connection", peer_, why.message());
  EnqueueError(0, why);
  Drain(/*wait_in_flight=*/false);
}

asio::awaitable<bool> ServerConnection::WriteHandshake(const std::string& frame) {
  // Marked as the write in progress, so that a refusal queued meanwhile (the watchdog's
  // handshake timeout) waits for it instead of writing to the socket at the same time.
  write_in_progress_ = true;
  last_write_ = std::chrono::steady_clock::now();
  auto [ec, n] = co_await asio::async_write(transport_, asio::buffer(frame), kUseTuple);
  write_in_progress_ = false;
  if (closed_) co_return false;
  if (draining_) {
    StartWrite();  // the queued refusal, then close
    co_return false;
  }
  if (ec) {
    spdlog::debug("shardkv server: {}: handshake write: {}", peer_, ErrorText(ec));
    Close("write error");
    co_return false;
  }
  co_return true;
}

asio::awaitable<StatusOr<auth::Message>> ServerConnection::ReadHandshake(auth::Kind kind) {
  char header[kFrameHeaderBytes];
  auto [ec, n] = co_await asio::async_read(transport_, asio::buffer(header), kUseTuple);
  if (closed_ || draining_ || stop_requested_ || ec) {
    co_return Status::Aborted("connection closed during the authentication handshake");
  }
  const uint32_t length = LittleEndian32(header);
  if (length != auth::kPayloadBytes) {
    if (length <= kDiscardBytes) {
      // A small request from a client without a secret: read it before refusing, so that the
      // close is a FIN after the error, not a reset that could destroy the error in flight.
      std::string discard(length, '\0');
      co_await asio::async_read(transport_, asio::buffer(discard), kUseTuple);
      if (closed_ || draining_ || stop_requested_) {
        co_return Status::Aborted("connection closed during the authentication handshake");
      }
    }
    co_return Status::Unauthenticated(
        "this node requires authentication (a cluster or client secret, --auth-secret-file); "
        "the connection sent a frame of " +
        std::to_string(length) + " bytes instead of the authentication handshake");
  }
  std::string payload(length, '\0');
  auto [pec, pn] = co_await asio::async_read(transport_, asio::buffer(payload), kUseTuple);
  if (closed_ || draining_ || stop_requested_ || pec) {
    co_return Status::Aborted("connection closed during the authentication handshake");
  }
  last_read_ = std::chrono::steady_clock::now();
  if (!auth::LooksLikeHandshake(payload)) {
    co_return Status::Unauthenticated(
        "this node requires authentication (a cluster or client secret, --auth-secret-file); "
        "the connection sent a request before the authentication handshake");
  }
  co_return auth::Parse(payload, kind);
}

asio::awaitable<bool> ServerConnection::Handshake() {
  const ServerOptions& o = shared_->options;
  // Both refusal paths end the same way: a closed connection (Aborted) just closes; anything
  // else is answered with one error frame.
  auto fail = [this](const Status& st) {
    if (st.code() == Status::Code::kAborted) {
      Close(stop_requested_ ? "server stop" : "closed during the handshake");
    } else {
      Refuse(st);
    }
  };
  StatusOr<auth::Message> hello = co_await ReadHandshake(auth::Kind::kHello);
  if (!hello.ok()) {
    fail(hello.status());
    co_return false;
  }
  StatusOr<std::string> sn = auth::NewNonce();
  if (!sn.ok()) {
    fail(sn.status());
    co_return false;
  }
  if (!co_await WriteHandshake(auth::EncodeFrame(auth::Kind::kChallenge, *sn))) co_return false;
  StatusOr<auth::Message> proof = co_await ReadHandshake(auth::Kind::kProof);
  if (!proof.ok()) {
    fail(proof.status());
    co_return false;
  }
  const std::string& cn = hello->body;
  std::string_view key;
  if (auth::SameMac(proof->body, auth::ClientProof(o.auth_secret, cn, *sn))) {
    role_ = auth::Role::kCluster;
    key = o.auth_secret;
  } else if (!o.client_secret.empty() &&
             auth::SameMac(proof->body, auth::ClientProof(o.client_secret, cn, *sn))) {
    role_ = auth::Role::kClient;
    key = o.client_secret;
  } else {
    // The proof covers this connection's fresh challenge, so a replayed proof lands here too.
    fail(Status::Unauthenticated(
        "authentication failed: the proof matches none of this node's secrets (a wrong secret, "
        "or a replayed handshake)"));
    co_return false;
  }
  if (!co_await WriteHandshake(
          auth::EncodeFrame(auth::Kind::kWelcome, auth::ServerProof(key, cn, *sn, role_), role_))) {
    co_return false;
  }
  authenticated_ = true;
  spdlog::debug("shardkv server: {}: authenticated ({} role)", peer_,
                role_ == auth::Role::kCluster ? "cluster" : "client");
  co_return true;
}

}  // namespace shardkv::net
