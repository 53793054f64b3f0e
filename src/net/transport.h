// Internal to src/net: Transport, one connection's byte stream, plain TCP or TLS over it
// (design.md "Transport security"). It models Asio's AsyncReadStream and AsyncWriteStream, so
// asio::async_read / async_write and the connections' read loops use it whatever it carries.
// Includes Asio and its SSL layer: include only from .cc files in src/net.
//
// A Transport serves one TCP connection: a client reconnecting makes a new one, so that a
// write still pending on a dead connection can never continue into the next one.
//
// Thread-safety: as an Asio socket (one event loop; one read and one write may be in flight).
#pragma once

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <asio/ssl.hpp>
#include <optional>
#include <string>
#include <system_error>
#include <utility>

#include "net/io_context_impl.h"
#include "net/tls_context.h"

namespace shardkv::net {

class Transport {
 public:
  using executor_type = asio::ip::tcp::socket::executor_type;
  using lowest_layer_type = asio::ip::tcp::socket;

  explicit Transport(asio::io_context& loop) : socket_(loop) {}
  explicit Transport(asio::ip::tcp::socket socket) : socket_(std::move(socket)) {}
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  executor_type get_executor() { return socket_.get_executor(); }
  asio::ip::tcp::socket& socket() { return socket_; }
  bool tls() const { return tls_.has_value(); }

  // TLS over the connected socket. The client side verifies the server's certificate against the
  // CA and `host` (the address it dialed); the server side requires the client's certificate.
  // Returns the handshake's error (empty on success).
  asio::awaitable<std::error_code> StartTls(const TlsContext& ctx, bool server,
                                            const std::string& host) {
    tls_.emplace(socket_, ctx.native());
    std::error_code ec;
    if (server) {
      tls_->set_verify_mode(asio::ssl::verify_peer | asio::ssl::verify_fail_if_no_peer_cert, ec);
    } else {
      tls_->set_verify_mode(asio::ssl::verify_peer, ec);
      if (!ec) tls_->set_verify_callback(asio::ssl::host_name_verification(host), ec);
      asio::error_code ignored;
      asio::ip::make_address(host, ignored);
      // SNI carries names only (RFC 6066), never addresses.
      if (ignored) SSL_set_tlsext_host_name(tls_->native_handle(), host.c_str());
    }
    if (ec) co_return ec;
    auto [hec] = co_await tls_->async_handshake(
        server ? asio::ssl::stream_base::server : asio::ssl::stream_base::client, kUseTuple);
    co_return hec;
  }

  template <typename MutableBuffers, typename Token>
  auto async_read_some(const MutableBuffers& buffers, Token&& token) {
    if (tls_) return tls_->async_read_some(buffers, std::forward<Token>(token));
    return socket_.async_read_some(buffers, std::forward<Token>(token));
  }

  template <typename ConstBuffers, typename Token>
  auto async_write_some(const ConstBuffers& buffers, Token&& token) {
    if (tls_) return tls_->async_write_some(buffers, std::forward<Token>(token));
    return socket_.async_write_some(buffers, std::forward<Token>(token));
  }

  // After a failed handshake: why this side refused the peer's certificate (OpenSSL's verify
  // result), or empty when the chain checks passed.
  std::string VerifyFailure() {
    if (!tls_) return "";
    const long result = SSL_get_verify_result(tls_->native_handle());
    return result == X509_V_OK ? "" : X509_verify_cert_error_string(result);
  }

  void Close() {
    std::error_code ignored;
    socket_.close(ignored);
  }

 private:
  asio::ip::tcp::socket socket_;
  // References socket_; declared after it so that it is destroyed first.
  std::optional<asio::ssl::stream<asio::ip::tcp::socket&>> tls_;
};

// A failed handshake's reason: the certificate check that refused the peer, else OpenSSL's
// reason (which names the peer's alert when the peer refused us).
inline std::string TlsErrorText(Transport& t, const std::error_code& ec, const std::string& host) {
  std::string why = t.VerifyFailure();
  // The chain checks passed and the host check (the only verify callback) refused it; OpenSSL
  // reports that as "unspecified" (3.x) or "application verification failure" (1.1).
  if (!host.empty() && (why == "unspecified certificate verification error" ||
                        why == "application verification failure")) {
    return "the peer's certificate does not name " + host;
  }
  if (!why.empty()) return "the peer's certificate: " + why;
  return ErrorText(ec);
}

// A TLS-layer error after the handshake: with TLS 1.3 a server checks the client's certificate
// after the client has finished its side, so its refusal (an alert) arrives on the first read.
// Not retried: the same certificate would be refused again.
inline bool IsEndOfStreamTls(const std::error_code& ec) {
  return ec == asio::ssl::error::stream_truncated;
}
inline bool IsTlsRefusal(const std::error_code& ec) {
  if (ec.category() != asio::error::get_ssl_category() || IsEndOfStreamTls(ec)) return false;
  // OpenSSL reports an alert received from the peer as reason SSL_AD_REASON_OFFSET + the
  // alert's code (one byte): decided on the code, not on the words of its message.
  const int reason = ERR_GET_REASON(static_cast<unsigned long>(static_cast<unsigned>(ec.value())));
  return reason >= SSL_AD_REASON_OFFSET && reason < SSL_AD_REASON_OFFSET + 256;
}

// The peer closed the connection: a TCP EOF, or (over TLS) a close without close_notify, which
// is how both sides here end a TLS connection (they close the socket).
inline bool IsEndOfStream(const std::error_code& ec) {
  return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
}

}  // namespace shardkv::net
