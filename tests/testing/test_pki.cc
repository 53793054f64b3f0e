#include "testing/test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>

namespace shardkv::testing {
namespace {

[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "TestPki: %s failed\n", what);
  std::abort();
}

EVP_PKEY* NewKey() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  if (key == nullptr) Die("EVP_EC_gen");
  return key;
}

void AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) Die("X509V3_EXT_conf_nid");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

X509* NewCert(const std::string& cn, EVP_PKEY* key, long serial, long not_before_s,
              long not_after_s) {
  X509* cert = X509_new();
  if (cert == nullptr) Die("X509_new");
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), not_before_s);
  X509_gmtime_adj(X509_getm_notAfter(cert), not_after_s);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  return cert;
}

void WritePem(const std::string& cert_file, X509* cert, const std::string& key_file,
              EVP_PKEY* key) {
  FILE* f = std::fopen(cert_file.c_str(), "wb");
  if (f == nullptr || PEM_write_X509(f, cert) != 1) Die("writing a certificate");
  std::fclose(f);
  f = std::fopen(key_file.c_str(), "wb");
  if (f == nullptr || PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    Die("writing a key");
  }
  std::fclose(f);
}

}  // namespace

TestPki::TestPki(std::string dir, std::string name) : dir_(std::move(dir)), name_(std::move(name)) {
  EVP_PKEY* key = NewKey();
  X509* cert = NewCert(name_ + " test CA", key, serial_++, -3600, 7 * 24 * 3600);
  X509_set_issuer_name(cert, X509_get_subject_name(cert));
  AddExtension(cert, cert, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(cert, cert, NID_subject_key_identifier, "hash");
  if (X509_sign(cert, key, EVP_sha256()) == 0) Die("X509_sign (CA)");
  ca_ = {dir_ + "/" + name_ + "-ca.pem", dir_ + "/" + name_ + "-ca.key"};
  WritePem(ca_.cert_file, cert, ca_.key_file, key);
  ca_key_ = key;
  ca_cert_ = cert;
}

TestPki::~TestPki() {
  EVP_PKEY_free(static_cast<EVP_PKEY*>(ca_key_));
  X509_free(static_cast<X509*>(ca_cert_));
}

TestCert TestPki::Issue(const std::string& name, const std::vector<std::string>& alt_names,
                        long not_before_s, long not_after_s) {
  auto* ca_cert = static_cast<X509*>(ca_cert_);
  EVP_PKEY* key = NewKey();
  X509* cert = NewCert(name, key, serial_++, not_before_s, not_after_s);
  X509_set_issuer_name(cert, X509_get_subject_name(ca_cert));
  AddExtension(cert, ca_cert, NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(cert, ca_cert, NID_key_usage, "critical,digitalSignature,keyEncipherment");
  AddExtension(cert, ca_cert, NID_ext_key_usage, "serverAuth,clientAuth");
  AddExtension(cert, ca_cert, NID_authority_key_identifier, "keyid");
  if (!alt_names.empty()) {
    std::string sans;
    for (const auto& n : alt_names) sans += (sans.empty() ? "" : ",") + n;
    AddExtension(cert, ca_cert, NID_subject_alt_name, sans);
  }
  if (X509_sign(cert, static_cast<EVP_PKEY*>(ca_key_), EVP_sha256()) == 0) Die("X509_sign");
  TestCert out{dir_ + "/" + name + ".pem", dir_ + "/" + name + ".key"};
  WritePem(out.cert_file, cert, out.key_file, key);
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

}  // namespace shardkv::testing
