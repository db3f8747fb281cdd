// Certificates made at test time with OpenSSL (nothing with a private key is committed): a CA, a
// server certificate for 127.0.0.1 / localhost, and client certificates, as PEM text and files.
//
// Thread-safety: thread-compatible.
#ifndef HEAPWATCH_TESTS_AUTH_TEST_CERTS_H_
#define HEAPWATCH_TESTS_AUTH_TEST_CERTS_H_

#include <memory>
#include <string>
#include <vector>

namespace heapwatch::testing {

// A key pair and its certificate, PEM.
struct TestCert {
  std::string key_pem;
  std::string cert_pem;
};

class TestCa {
 public:
  // A self-signed CA (P-256 key, basicConstraints CA:TRUE, keyCertSign) named `common_name`.
  explicit TestCa(const std::string& common_name);
  ~TestCa();
  TestCa(const TestCa&) = delete;
  TestCa& operator=(const TestCa&) = delete;

  const std::string& cert_pem() const { return ca_.cert_pem; }

  // A certificate signed by this CA for TLS servers (extendedKeyUsage serverAuth) with SANs
  // DNS:localhost and IP:127.0.0.1.
  TestCert Server(const std::string& common_name) const;
  // A certificate for TLS clients (extendedKeyUsage clientAuth) whose subject has the given
  // commonNames (none, one, or several), valid from `not_before_days` to `not_after_days` (days
  // relative to now).
  TestCert Client(const std::vector<std::string>& common_names, long not_before_days = -1,
                  long not_after_days = 30) const;

 private:
  struct Key;
  std::unique_ptr<Key> key_;
  TestCert ca_;
};

// Writes `text` to `path` (mode 0600). Returns false on failure.
bool WriteTestFile(const std::string& path, const std::string& text);

}  // namespace heapwatch::testing

#endif  // HEAPWATCH_TESTS_AUTH_TEST_CERTS_H_
