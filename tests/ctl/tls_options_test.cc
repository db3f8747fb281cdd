// heapwatchctl --tls-ca / --tls-cert / --tls-key / --tls-server-name (ctl/tls_options.h) against a
// real QueryServer serving TLS with client certificates mapped to roles (loopback, real store:
// tests/daemon/query_fixture.h; the daemon's authorizer and credentials, daemon/auth_setup.h), with
// certificates made at test time (tests/auth/test_certs.h).
#include "ctl/tls_options.h"

#include <stdlib.h>

#include <sstream>

#include "absl/strings/str_cat.h"
#include "ctl/ctl.h"
#include "daemon/auth_setup.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/auth/test_certs.h"
#include "tests/daemon/query_fixture.h"

namespace heapwatch::ctl {
namespace {

using ::heapwatch::testing::TestCa;
using ::heapwatch::testing::TestCert;
using ::heapwatch::testing::WriteTestFile;
using ::testing::HasSubstr;

class CtlTlsTest : public heapwatch::testing::QueryFixture {
 protected:
  static void SetUpTestSuite() {
    ca_ = new TestCa("ctl test CA");
    other_ca_ = new TestCa("other CA");
  }
  static void TearDownTestSuite() {
    delete ca_;
    delete other_ca_;
  }
  void SetUp() override {
    QueryFixture::SetUp();
    const TestCert server = ca_->Server("heapwatchd");
    const TestCert reader = ca_->Client({"grafana"});
    const TestCert admin = ca_->Client({"oncall"});
    ASSERT_TRUE(WriteTestFile(dir_ + "/ca.crt", ca_->cert_pem()));
    ASSERT_TRUE(WriteTestFile(dir_ + "/other-ca.crt", other_ca_->cert_pem()));
    ASSERT_TRUE(WriteTestFile(dir_ + "/server.crt", server.cert_pem));
    ASSERT_TRUE(WriteTestFile(dir_ + "/server.key", server.key_pem));
    ASSERT_TRUE(WriteTestFile(dir_ + "/reader.crt", reader.cert_pem));
    ASSERT_TRUE(WriteTestFile(dir_ + "/reader.key", reader.key_pem));
    ASSERT_TRUE(WriteTestFile(dir_ + "/admin.crt", admin.cert_pem));
    ASSERT_TRUE(WriteTestFile(dir_ + "/admin.key", admin.key_pem));
    daemon::TlsConfig tls;
    tls.cert_file = dir_ + "/server.crt";
    tls.key_file = dir_ + "/server.key";
    tls.client_ca_file = dir_ + "/ca.crt";
    daemon::AuthConfig auth;
    auth.client_certificates = {{"grafana", "read"}, {"oncall", "admin"}};
    auto authorizer = daemon::MakeQueryAuthorizer(auth, tls, "127.0.0.1:0", &metrics_);
    ASSERT_TRUE(authorizer.ok()) << authorizer.status();
    auto credentials = daemon::MakeQueryCredentials(tls, auth);
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    auto server_or =
        daemon::QueryServer::Start("127.0.0.1:0", store_.get(), &agents_, &metrics_, nullptr,
                                   nullptr, *authorizer, daemon::GrpcLimits(), *credentials);
    ASSERT_TRUE(server_or.ok()) << server_or.status();
    tls_server_ = *std::move(server_or);
    port_ = tls_server_->port();
    for (const char* v : {"HEAPWATCH_TLS_CA", "HEAPWATCH_TLS_CERT", "HEAPWATCH_TLS_KEY"})
      unsetenv(v);
  }
  void TearDown() override {
    for (const char* v : {"HEAPWATCH_TLS_CA", "HEAPWATCH_TLS_CERT", "HEAPWATCH_TLS_KEY"})
      unsetenv(v);
    tls_server_.reset();
    QueryFixture::TearDown();
  }
  struct Result {
    int code;
    std::string out, err;
  };
  Result Run(const std::string& host, std::vector<std::string> args) {
    args.insert(args.begin(),
                {"heapwatchctl", "--server", absl::StrCat(host, ":", port_), "--timeout", "10s"});
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    int code = RunCtl(static_cast<int>(argv.size()), argv.data(), out, err);
    return {code, out.str(), err.str()};
  }
  Result Run(std::vector<std::string> args) { return Run("127.0.0.1", std::move(args)); }

  static inline TestCa* ca_ = nullptr;
  static inline TestCa* other_ca_ = nullptr;
  std::unique_ptr<daemon::QueryServer> tls_server_;
  int port_ = 0;
};

TEST_F(CtlTlsTest, ClientCertificateGivesItsRole) {
  Result read = Run({"--tls-ca", dir_ + "/ca.crt", "--tls-cert", dir_ + "/reader.crt", "--tls-key",
                     dir_ + "/reader.key", "agents"});
  EXPECT_EQ(read.code, 0) << read.err;
  EXPECT_THAT(read.out, HasSubstr(kLive.value));
  Result dump = Run({"--tls-ca", dir_ + "/ca.crt", "--tls-cert", dir_ + "/reader.crt", "--tls-key",
                     dir_ + "/reader.key", "dump", kLive.value});
  EXPECT_EQ(dump.code, 1);
  EXPECT_THAT(dump.err, HasSubstr("PERMISSION_DENIED"));
  EXPECT_THAT(dump.err, HasSubstr("client certificate 'grafana' has role read"));
  // The admin's certificate passes the check (this fixture has no escalation).
  Result admin = Run({"--tls-ca", dir_ + "/ca.crt", "--tls-cert", dir_ + "/admin.crt", "--tls-key",
                      dir_ + "/admin.key", "dump", kLive.value});
  EXPECT_EQ(admin.code, 1);
  EXPECT_THAT(admin.err, HasSubstr("FAILED_PRECONDITION"));
}

TEST_F(CtlTlsTest, EnvironmentServerNameAndRefusals) {
  setenv("HEAPWATCH_TLS_CA", (dir_ + "/ca.crt").c_str(), 1);
  setenv("HEAPWATCH_TLS_CERT", (dir_ + "/reader.crt").c_str(), 1);
  setenv("HEAPWATCH_TLS_KEY", (dir_ + "/reader.key").c_str(), 1);
  Result env = Run({"agents"});
  EXPECT_EQ(env.code, 0) << env.err;
  // The certificate is for localhost and 127.0.0.1: another name fails, unless overridden.
  Result wrong_name = Run({"--tls-server-name", "heapwatch.example.com", "agents"});
  EXPECT_EQ(wrong_name.code, 1);
  EXPECT_THAT(wrong_name.err, HasSubstr("UNAVAILABLE"));
  Result by_name = Run({"--tls-server-name", "localhost", "agents"});
  EXPECT_EQ(by_name.code, 0) << by_name.err;
  // A CA that did not sign the server's certificate.
  Result other = Run({"--tls-ca", dir_ + "/other-ca.crt", "agents"});
  EXPECT_EQ(other.code, 1);
  EXPECT_THAT(other.err, HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(other.err, HasSubstr("check that --tls-ca signed heapwatchd's certificate"));

  for (const char* v : {"HEAPWATCH_TLS_CA", "HEAPWATCH_TLS_CERT", "HEAPWATCH_TLS_KEY"}) unsetenv(v);
  // Plaintext against the TLS listener.
  Result plain = Run({"agents"});
  EXPECT_EQ(plain.code, 1);
  EXPECT_THAT(plain.err, HasSubstr("UNAVAILABLE"));
  EXPECT_THAT(plain.err, HasSubstr("if heapwatchd serves TLS, give --tls-ca FILE"));
  // TLS without a client certificate: this daemon has no tokens file, so the handshake requires
  // one.
  Result anonymous = Run({"--tls-ca", dir_ + "/ca.crt", "agents"});
  EXPECT_EQ(anonymous.code, 1);
  EXPECT_THAT(anonymous.err, HasSubstr("UNAVAILABLE"));
  // Clear errors for bad options, naming the file.
  Result no_key = Run({"--tls-ca", dir_ + "/ca.crt", "--tls-cert", dir_ + "/reader.crt", "agents"});
  EXPECT_EQ(no_key.code, 1);
  EXPECT_THAT(no_key.err, HasSubstr("--tls-cert and --tls-key must be given together"));
  Result missing = Run({"--tls-ca", dir_ + "/nope.crt", "agents"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_THAT(missing.err, HasSubstr("TLS CA file " + dir_ + "/nope.crt"));
  Result mismatched = Run({"--tls-ca", dir_ + "/ca.crt", "--tls-cert", dir_ + "/reader.crt",
                           "--tls-key", dir_ + "/admin.key", "agents"});
  EXPECT_EQ(mismatched.code, 1);
  EXPECT_THAT(mismatched.err, HasSubstr("does not belong to the certificate"));
  Result name_only = Run({"--tls-server-name", "localhost", "agents"});
  EXPECT_EQ(name_only.code, 1);
  EXPECT_THAT(name_only.err, HasSubstr("--tls-server-name needs TLS"));
}

}  // namespace
}  // namespace heapwatch::ctl
