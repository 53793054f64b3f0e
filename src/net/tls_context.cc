#include "net/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>

#include "net/transport.h"
#include "shardkv/secret_file.h"

namespace shardkv::net {
namespace {

// OpenSSL's newest queued error, for the messages of calls that do not return an error_code.
std::string OpenSslError() {
  unsigned long e = ERR_peek_last_error();
  ERR_clear_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

std::string AsnTime(const ASN1_TIME* t) {
  BIO* bio = BIO_new(BIO_s_mem());
  if (bio == nullptr) return "?";
  ASN1_TIME_print(bio, t);
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, n > 0 ? static_cast<size_t>(n) : 0);
  BIO_free(bio);
  return out;
}

std::string Subject(X509* cert) {
  char buf[512];
  X509_NAME_oneline(X509_get_subject_name(cert), buf, sizeof(buf));
  return buf;
}

Status Readable(const std::string& path, const std::string& name) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {
    return Status::InvalidArgument(name + " " + path + ": cannot read: " + std::strerror(errno));
  }
  std::fclose(f);
  return Status::OK();
}

// The node's own certificate must chain to the CA its peers trust: a certificate from another
// CA would be refused by every peer, so say so at start-up instead.
Status VerifyOwnCertificate(SSL_CTX* ctx, X509* cert, const TlsFiles& f) {
  X509_STORE_CTX* store_ctx = X509_STORE_CTX_new();
  if (store_ctx == nullptr) return Status::Internal("out of memory checking " + f.cert_name);
  STACK_OF(X509)* chain = nullptr;
  SSL_CTX_get0_chain_certs(ctx, &chain);
  Status st;
  if (X509_STORE_CTX_init(store_ctx, SSL_CTX_get_cert_store(ctx), cert, chain) != 1) {
    st = Status::Internal(f.cert_name + ": " + OpenSslError());
  } else if (X509_verify_cert(store_ctx) != 1) {
    const int err = X509_STORE_CTX_get_error(store_ctx);
    st = Status::InvalidArgument(f.cert_name + " " + f.cert_file + " (" + Subject(cert) +
                                 ") does not verify against the CA in " + f.ca_name + " " +
                                 f.ca_file + ": " + X509_verify_cert_error_string(err));
  }
  X509_STORE_CTX_free(store_ctx);
  ERR_clear_error();
  return st;
}

}  // namespace

TlsContext::TlsContext() = default;
TlsContext::~TlsContext() = default;

StatusOr<std::shared_ptr<const TlsContext>> TlsContext::Load(const TlsFiles& f) {
  if (f.ca_file.empty() || f.cert_file.empty() || f.key_file.empty()) {
    return Status::InvalidArgument(
        "TLS needs all three of " + f.ca_name + ", " + f.cert_name + " and " + f.key_name +
        " (TLS here is mutual: every node and client presents a certificate signed by the CA)");
  }
  SHARDKV_RETURN_IF_ERROR(Readable(f.ca_file, f.ca_name));
  SHARDKV_RETURN_IF_ERROR(Readable(f.cert_file, f.cert_name));
  SHARDKV_RETURN_IF_ERROR(Readable(f.key_file, f.key_name));
  std::shared_ptr<TlsContext> out(new TlsContext());
  try {
    out->ctx_ = std::make_unique<asio::ssl::context>(asio::ssl::context::tls);
  } catch (const std::exception& e) {
    return Status::Internal(std::string("cannot create a TLS context: ") + e.what());
  }
  asio::ssl::context& ctx = *out->ctx_;
  SSL_CTX* native = ctx.native_handle();
  // TLS 1.2 is the oldest version without known protocol breaks; both sides are ours.
  SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
  ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_compression);
  std::error_code ec;
  if (ctx.load_verify_file(f.ca_file, ec); ec) {
    return Status::InvalidArgument(f.ca_name + " " + f.ca_file +
                                   ": not a PEM CA certificate: " + ErrorText(ec));
  }
  if (ctx.use_certificate_chain_file(f.cert_file, ec); ec) {
    return Status::InvalidArgument(f.cert_name + " " + f.cert_file +
                                   ": not a PEM certificate: " + ErrorText(ec));
  }
  if (ctx.use_private_key_file(f.key_file, asio::ssl::context::pem, ec); ec) {
    if (ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == X509_R_KEY_VALUES_MISMATCH) {
      return Status::InvalidArgument(f.key_name + " " + f.key_file +
                                     " is not the key of the certificate in " + f.cert_name + " " +
                                     f.cert_file);
    }
    return Status::InvalidArgument(f.key_name + " " + f.key_file +
                                   ": not a PEM private key: " + ErrorText(ec));
  }
  if (SSL_CTX_check_private_key(native) != 1) {
    ERR_clear_error();
    return Status::InvalidArgument(f.key_name + " " + f.key_file +
                                   " is not the key of the certificate in " + f.cert_name + " " +
                                   f.cert_file);
  }
  X509* cert = SSL_CTX_get0_certificate(native);
  if (cert == nullptr) return Status::InvalidArgument(f.cert_name + ": no certificate loaded");
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0) {
    return Status::InvalidArgument(f.cert_name + " " + f.cert_file + " (" + Subject(cert) +
                                   ") is not valid before " + AsnTime(X509_get0_notBefore(cert)));
  }
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0) {
    return Status::InvalidArgument(f.cert_name + " " + f.cert_file + " (" + Subject(cert) +
                                   ") expired on " + AsnTime(X509_get0_notAfter(cert)));
  }
  SHARDKV_RETURN_IF_ERROR(VerifyOwnCertificate(native, cert, f));
  out->summary_ = Subject(cert) + ", expires " + AsnTime(X509_get0_notAfter(cert));
  return std::shared_ptr<const TlsContext>(std::move(out));
}

StatusOr<ClientSecurity> LoadClientSecurity(const std::string& auth_secret_file,
                                            const TlsFiles& tls) {
  ClientSecurity out;
  if (!auth_secret_file.empty()) {
    auto loaded = LoadSecretFile(auth_secret_file, "auth_secret_file");
    if (!loaded.ok()) return loaded.status();
    out.auth_secret = std::move(loaded->secret);
    out.warning = std::move(loaded->warning);
  }
  if (tls.any()) {
    auto ctx = TlsContext::Load(tls);
    if (!ctx.ok()) return ctx.status();
    out.tls = std::move(*ctx);
  }
  return out;
}

}  // namespace shardkv::net
