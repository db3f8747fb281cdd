#include "auth/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "grpc/grpc_security_constants.h"

namespace heapwatch::auth {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;

BioPtr MemBio(std::string_view data) {
  return BioPtr(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
}

// Reads a whole PEM file, refusing anything but a regular file of at most kMaxPemFileBytes.
// `what` names it in messages ("TLS certificate file").
StatusOr<std::string> ReadPemFile(const std::string& path, std::string_view what) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) {
    return absl::NotFoundError(absl::StrCat(
        std::string(what), " ", path, ": cannot read it: ", ec ? ec.message() : "no such file"));
  }
  if (!std::filesystem::is_regular_file(status)) {
    return absl::FailedPreconditionError(
        absl::StrCat(std::string(what), " ", path, ": not a regular file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    std::string message =
        absl::StrCat(std::string(what), " ", path, ": cannot read it: ", std::strerror(err));
    return err == EACCES ? absl::PermissionDeniedError(message) : absl::NotFoundError(message);
  }
  std::string text(kMaxPemFileBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxPemFileBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " ", path, ": larger than ", kMaxPemFileBytes, " bytes"));
  }
  return text;
}

// The certificates of a PEM text, in order. Errors: InvalidArgument when there is none or one does
// not parse.
StatusOr<std::vector<X509Ptr>> ParseCertificates(std::string_view pem, std::string_view what,
                                                 const std::string& path) {
  std::vector<X509Ptr> out;
  BioPtr bio = MemBio(pem);
  if (bio == nullptr) return absl::ResourceExhaustedError("out of memory");
  ERR_clear_error();
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) out.emplace_back(x);
  const unsigned long err = ERR_peek_last_error();
  ERR_clear_error();
  // The loop ends with "no start line" at the end of the text; any other error is a broken one.
  if (err != 0 &&
      !(ERR_GET_LIB(err) == ERR_LIB_PEM && ERR_GET_REASON(err) == PEM_R_NO_START_LINE)) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), " ", path, ": certificate ",
                                                   out.size() + 1, " does not parse as PEM X.509"));
  }
  if (out.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(what), " ", path,
                     ": holds no PEM certificate ('-----BEGIN CERTIFICATE-----')"));
  }
  return out;
}

// The passphrase callback: there is none, so an encrypted key fails to load.
int NoPassphrase(char*, int, int, void*) { return -1; }

StatusOr<PkeyPtr> ParsePrivateKey(std::string_view pem, const std::string& path) {
  BioPtr bio = MemBio(pem);
  if (bio == nullptr) return absl::ResourceExhaustedError("out of memory");
  ERR_clear_error();
  PkeyPtr key(PEM_read_bio_PrivateKey(bio.get(), nullptr, NoPassphrase, nullptr));
  ERR_clear_error();
  if (key == nullptr) {
    const bool encrypted = pem.find("ENCRYPTED") != std::string_view::npos;
    return absl::InvalidArgumentError(absl::StrCat(
        "TLS private key file ", path, ": ",
        encrypted ? "the key is encrypted (give an unencrypted key, readable by heapwatch only)"
                  : "holds no PEM private key that parses"));
  }
  return key;
}

// Reads and checks a certificate file and its key file; returns their texts.
Status LoadKeyPair(const std::string& cert_file, const std::string& key_file, bool check_validity,
                   std::string* cert_pem, std::string* key_pem) {
  HW_ASSIGN_OR_RETURN(*cert_pem, ReadPemFile(cert_file, "TLS certificate file"));
  HW_ASSIGN_OR_RETURN(*key_pem, ReadPemFile(key_file, "TLS private key file"));
  HW_ASSIGN_OR_RETURN(std::vector<X509Ptr> chain,
                      ParseCertificates(*cert_pem, "TLS certificate file", cert_file));
  HW_ASSIGN_OR_RETURN(PkeyPtr key, ParsePrivateKey(*key_pem, key_file));
  X509* leaf = chain.front().get();
  if (X509_check_private_key(leaf, key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat("TLS private key file ", key_file,
                     ": the key does not belong to the certificate in ", cert_file));
  }
  if (check_validity) {
    if (X509_cmp_current_time(X509_get0_notAfter(leaf)) <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("TLS certificate file ", cert_file, ": the certificate has expired"));
    }
    if (X509_cmp_current_time(X509_get0_notBefore(leaf)) >= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("TLS certificate file ", cert_file, ": the certificate is not valid yet"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeServerCredentials(
    const TlsServerFiles& files, ClientCertificatePolicy policy) {
  if (files.cert_file.empty() && files.key_file.empty()) {
    if (!files.client_ca_file.empty()) {
      return absl::InvalidArgumentError(
          "a TLS client CA needs the server's own certificate and key (tls.cert_file, "
          "tls.key_file)");
    }
    return grpc::InsecureServerCredentials();
  }
  if (files.cert_file.empty() || files.key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both a certificate file and a private key file (tls.cert_file, tls.key_file)");
  }
  std::string cert_pem, key_pem;
  HW_RETURN_IF_ERROR(
      LoadKeyPair(files.cert_file, files.key_file, /*check_validity=*/true, &cert_pem, &key_pem));
  grpc_ssl_client_certificate_request_type request = GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE;
  std::string ca_pem;
  if (!files.client_ca_file.empty()) {
    HW_ASSIGN_OR_RETURN(ca_pem, ReadPemFile(files.client_ca_file, "TLS client CA file"));
    HW_RETURN_IF_ERROR(
        ParseCertificates(ca_pem, "TLS client CA file", files.client_ca_file).status());
    request = policy == ClientCertificatePolicy::kRequired
                  ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                  : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  grpc::SslServerCredentialsOptions options(request);
  options.pem_root_certs = std::move(ca_pem);
  options.pem_key_cert_pairs.push_back({std::move(key_pem), std::move(cert_pem)});
  return grpc::SslServerCredentials(options);
}

StatusOr<std::shared_ptr<grpc::ChannelCredentials>> MakeClientCredentials(
    const TlsClientFiles& files) {
  grpc::SslCredentialsOptions options;
  if (!files.ca_file.empty()) {
    HW_ASSIGN_OR_RETURN(options.pem_root_certs, ReadPemFile(files.ca_file, "TLS CA file"));
    HW_RETURN_IF_ERROR(
        ParseCertificates(options.pem_root_certs, "TLS CA file", files.ca_file).status());
  }
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(
        "a TLS client certificate needs both the certificate file and its private key file");
  }
  if (!files.cert_file.empty()) {
    HW_RETURN_IF_ERROR(LoadKeyPair(files.cert_file, files.key_file, /*check_validity=*/false,
                                   &options.pem_cert_chain, &options.pem_private_key));
  }
  return grpc::SslCredentials(options);
}

Status ValidateCertificateName(std::string_view name) {
  if (name.empty() || name.size() > kMaxCertificateNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a certificate name must be 1 to ", kMaxCertificateNameBytes, " bytes long"));
  }
  for (char c : name) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e) {
      return absl::InvalidArgumentError(
          "a certificate name must be printable ASCII (no control character, no UTF-8)");
    }
  }
  if (name.front() == ' ' || name.back() == ' ') {
    return absl::InvalidArgumentError("a certificate name must not begin or end with a space");
  }
  return absl::OkStatus();
}

StatusOr<std::string> CertificateCommonName(std::string_view pem) {
  BioPtr bio = MemBio(pem);
  if (bio == nullptr) return absl::ResourceExhaustedError("out of memory");
  X509Ptr cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  ERR_clear_error();
  if (cert == nullptr) return absl::InvalidArgumentError("no PEM certificate");
  const X509_NAME* subject = X509_get_subject_name(cert.get());
  const int first = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  if (first < 0) return absl::InvalidArgumentError("the certificate's subject has no commonName");
  if (X509_NAME_get_index_by_NID(subject, NID_commonName, first) >= 0) {
    return absl::InvalidArgumentError("the certificate's subject has several commonNames");
  }
  const ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, first));
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(&utf8, data);
  if (n < 0) return absl::InvalidArgumentError("the certificate's commonName does not decode");
  std::string name(reinterpret_cast<const char*>(utf8), static_cast<size_t>(n));
  OPENSSL_free(utf8);
  Status valid = ValidateCertificateName(name);
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the certificate's commonName is not a valid name: ", valid.message()));
  }
  return name;
}

PeerCertificate VerifiedPeerCertificate(const grpc::AuthContext& context) {
  PeerCertificate out;
  const std::vector<grpc::string_ref> security =
      context.FindPropertyValues(GRPC_TRANSPORT_SECURITY_TYPE_PROPERTY_NAME);
  if (security.size() != 1 || security.front() != GRPC_SSL_TRANSPORT_SECURITY_TYPE) return out;
  const std::vector<grpc::string_ref> pem =
      context.FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
  if (pem.size() != 1 || pem.front().empty()) return out;
  // gRPC sets the property only for a certificate the handshake verified against the client CA
  // (the listener requests certificates with *_AND_VERIFY, MakeServerCredentials).
  out.present = true;
  auto name = CertificateCommonName(std::string_view(pem.front().data(), pem.front().size()));
  if (name.ok()) out.name = *std::move(name);
  return out;
}

StatusOr<ClientCertificateMap> ClientCertificateMap::Make(
    const std::map<std::string, Role>& roles) {
  if (roles.size() > kMaxTokens) {
    return absl::InvalidArgumentError(
        absl::StrCat("more than ", kMaxTokens, " client certificate names"));
  }
  ClientCertificateMap map;
  size_t position = 0;
  for (const auto& [name, role] : roles) {
    ++position;
    Status valid = ValidateCertificateName(name);
    if (!valid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("client certificate entry ", position, ": ", valid.message()));
    }
    map.entries_.push_back({name, role});
  }
  return map;  // std::map iterates in name order: entries_ is sorted and unique
}

const ClientCertificateEntry* ClientCertificateMap::Find(std::string_view name) const {
  auto it = std::lower_bound(
      entries_.begin(), entries_.end(), name,
      [](const ClientCertificateEntry& e, std::string_view n) { return e.name < n; });
  return it != entries_.end() && it->name == name ? &*it : nullptr;
}

}  // namespace heapwatch::auth
