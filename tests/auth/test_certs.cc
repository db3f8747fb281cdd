#include "tests/auth/test_certs.h"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

namespace heapwatch::testing {
namespace {

void Require(bool ok, const char* what) {
  if (!ok) {
    std::cerr << "test certificate generation failed: " << what << "\n";
    std::abort();
  }
}

EVP_PKEY* NewKey() {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  Require(key != nullptr, "EVP_EC_gen");
  return key;
}

std::string KeyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  Require(PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
          "PEM_write_bio_PrivateKey");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

std::string CertPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  Require(PEM_write_bio_X509(bio, cert) == 1, "PEM_write_bio_X509");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Require(ext != nullptr, value);
  Require(X509_add_ext(cert, ext, -1) == 1, "X509_add_ext");
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named by `common_names`, signed by `issuer_key` (issuer name from
// `issuer`, or self-signed when null), with `extensions` (nid, value) added.
X509* MakeCert(EVP_PKEY* key, const std::vector<std::string>& common_names, X509* issuer,
               EVP_PKEY* issuer_key, long not_before_days, long not_after_days,
               const std::vector<std::pair<int, const char*>>& extensions) {
  X509* cert = X509_new();
  Require(cert != nullptr, "X509_new");
  X509_set_version(cert, 2);
  unsigned char serial[16];
  Require(RAND_bytes(serial, sizeof(serial)) == 1, "RAND_bytes");
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof(serial), nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert), not_before_days * 86400);
  X509_gmtime_adj(X509_getm_notAfter(cert), not_after_days * 86400);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("heapwatch test"), -1, -1, 0);
  for (const std::string& cn : common_names) {
    Require(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                       reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                       0) == 1,
            "CN");
  }
  X509_set_issuer_name(cert, issuer != nullptr ? X509_get_subject_name(issuer) : name);
  Require(X509_set_pubkey(cert, key) == 1, "X509_set_pubkey");
  X509* ext_issuer = issuer != nullptr ? issuer : cert;
  for (const auto& [nid, value] : extensions) AddExtension(cert, ext_issuer, nid, value);
  Require(X509_sign(cert, issuer_key, EVP_sha256()) > 0, "X509_sign");
  return cert;
}

}  // namespace

struct TestCa::Key {
  EVP_PKEY* key = nullptr;
  X509* cert = nullptr;
  ~Key() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
};

TestCa::TestCa(const std::string& common_name) : key_(std::make_unique<Key>()) {
  key_->key = NewKey();
  key_->cert = MakeCert(key_->key, {common_name}, nullptr, key_->key, -1, 30,
                        {{NID_basic_constraints, "critical,CA:TRUE"},
                         {NID_key_usage, "critical,keyCertSign,cRLSign"},
                         {NID_subject_key_identifier, "hash"}});
  ca_.key_pem = KeyPem(key_->key);
  ca_.cert_pem = CertPem(key_->cert);
}

TestCa::~TestCa() = default;

TestCert TestCa::Server(const std::string& common_name) const {
  EVP_PKEY* key = NewKey();
  X509* cert = MakeCert(key, {common_name}, key_->cert, key_->key, -1, 30,
                        {{NID_basic_constraints, "critical,CA:FALSE"},
                         {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                         {NID_ext_key_usage, "serverAuth"},
                         {NID_subject_alt_name, "DNS:localhost,IP:127.0.0.1"},
                         {NID_authority_key_identifier, "keyid"}});
  TestCert out{KeyPem(key), CertPem(cert)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

TestCert TestCa::Client(const std::vector<std::string>& common_names, long not_before_days,
                        long not_after_days) const {
  EVP_PKEY* key = NewKey();
  X509* cert = MakeCert(key, common_names, key_->cert, key_->key, not_before_days, not_after_days,
                        {{NID_basic_constraints, "critical,CA:FALSE"},
                         {NID_key_usage, "critical,digitalSignature"},
                         {NID_ext_key_usage, "clientAuth"},
                         {NID_authority_key_identifier, "keyid"}});
  TestCert out{KeyPem(key), CertPem(cert)};
  X509_free(cert);
  EVP_PKEY_free(key);
  return out;
}

bool WriteTestFile(const std::string& path, const std::string& text) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  return close(fd) == 0 && ok;
}

}  // namespace heapwatch::testing
