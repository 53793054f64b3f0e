// TlsContext: the certificates of one TLS endpoint (a node, a Client, an Admin), loaded and
// checked once and shared by every connection it makes or accepts (design.md "Transport
// security").
//
// TLS here is always mutual: every endpoint has a certificate and a key, and trusts one CA. A
// server requires the peer's certificate and verifies its chain against the CA; a client also
// checks that the server's certificate names the host it dialed (the advertised address: an IP
// SAN for an address, a DNS SAN for a name). Loading refuses, with the file and the reason,
// a missing or unreadable file, a key that does not match the certificate, and a certificate
// that is not yet valid or has expired, so that a node never starts with TLS it cannot use.
//
// Asio-free on purpose (public to src/net's users): the Asio side is reached through
// transport.h, inside src/net only.
//
// Thread-safety: immutable once loaded; share it freely.
#pragma once

#include <memory>
#include <string>

#include "shardkv/status.h"

namespace asio::ssl {
class context;
}  // namespace asio::ssl

namespace shardkv::net {

struct TlsFiles {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
  // How errors name the three (flags for the node and the CLI, option fields for the API).
  std::string ca_name = "tls_ca_file";
  std::string cert_name = "tls_cert_file";
  std::string key_name = "tls_key_file";

  bool any() const { return !ca_file.empty() || !cert_file.empty() || !key_file.empty(); }
};

class TlsContext {
 public:
  // InvalidArgument naming the file and the cause when one of the three is missing or cannot be
  // used. REQUIRES: files.any().
  static StatusOr<std::shared_ptr<const TlsContext>> Load(const TlsFiles& files);

  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  // For src/net's transport only. OpenSSL's SSL_CTX is safe to share between connections once
  // configured; asio's handle is non-const by its API.
  asio::ssl::context& native() const { return *ctx_; }
  // "subject CN=..., expires 2027-01-01 00:00:00 UTC", for the node's start-up log.
  const std::string& summary() const { return summary_; }

 private:
  TlsContext();

  std::unique_ptr<asio::ssl::context> ctx_;
  std::string summary_;
};

// The secret and the TLS context a client-side endpoint (Client, Admin, the CLI) connects with,
// loaded from its options the same way everywhere.
struct ClientSecurity {
  std::string auth_secret;                // empty: no handshake
  std::shared_ptr<const TlsContext> tls;  // null: plain TCP
  std::string warning;                    // non-empty: the secret file is world-readable
};

StatusOr<ClientSecurity> LoadClientSecurity(const std::string& auth_secret_file,
                                            const TlsFiles& tls);

}  // namespace shardkv::net
