// TLS and mutual TLS of the gRPC query listener (auth/tls.h, daemon/auth_setup.h) over real gRPC on
// loopback, with certificates made at test time (tests/auth/test_certs.h): a CA, a server
// certificate for 127.0.0.1, client certificates mapped to roles, and a second CA nobody trusts.
// Also the start-up errors for bad PEM files, the configuration keys and flags, and a real
// daemon::Daemon serving TLS.
#include "auth/tls.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "auth/grpc_auth.h"
#include "auth/tokens.h"
#include "daemon/auth_setup.h"
#include "daemon/config.h"
#include "daemon/daemon.h"
#include "daemon/flags.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "heapwatch/v1/heapwatch.grpc.pb.h"
#include "tests/auth/test_certs.h"
#include "tests/daemon/query_fixture.h"

namespace heapwatch::testing {
namespace {

namespace v1 = ::heapwatch::v1;
using ::testing::HasSubstr;

constexpr char kReadSecret[] = "tls-read-secret-0123";
constexpr char kAdminSecret[] = "tls-admin-secret-0123";

// One CA for the server and the clients, one that nobody trusts; made once (key generation is the
// slow part), written to files per test.
struct Pki {
  TestCa ca{"heapwatch test CA"};
  TestCa other_ca{"some other CA"};
  TestCert server = ca.Server("heapwatchd");
  TestCert reader = ca.Client({"grafana.example.com"});
  TestCert admin = ca.Client({"oncall"});
  TestCert stranger = ca.Client({"stranger"});
  TestCert two_names = ca.Client({"oncall", "grafana.example.com"});
  TestCert foreign_admin = other_ca.Client({"oncall"});
  TestCert other_server = other_ca.Server("impostor");
};
const Pki& TestPki() {
  static const Pki* pki = new Pki();
  return *pki;
}

std::string Msg(const ::heapwatch::Status& s) { return std::string(s.message()); }

class TlsFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/heapwatch-tls-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(WriteTestFile(path, text));
    return path;
  }
  std::string dir_;
};

TEST_F(TlsFiles, ServerCredentialsRefuseBadFilesNamingThem) {
  const Pki& pki = TestPki();
  auth::TlsServerFiles files;
  files.cert_file = Write("server.crt", pki.server.cert_pem);
  files.key_file = Write("server.key", pki.server.key_pem);
  files.client_ca_file = Write("ca.crt", pki.ca.cert_pem());
  ASSERT_TRUE(auth::MakeServerCredentials(files, auth::ClientCertificatePolicy::kOptional).ok());
  auth::TlsServerFiles none;
  EXPECT_TRUE(auth::MakeServerCredentials(none, auth::ClientCertificatePolicy::kOptional).ok());

  auto fails = [](const auth::TlsServerFiles& f, absl::StatusCode code, const std::string& text) {
    auto c = auth::MakeServerCredentials(f, auth::ClientCertificatePolicy::kRequired);
    ASSERT_FALSE(c.ok()) << text;
    EXPECT_EQ(c.status().code(), code) << c.status();
    EXPECT_THAT(Msg(c.status()), HasSubstr(text));
  };
  auth::TlsServerFiles f = files;
  f.cert_file = dir_ + "/missing.crt";
  fails(f, absl::StatusCode::kNotFound, "TLS certificate file " + dir_ + "/missing.crt");
  f = files;
  f.key_file = dir_;
  fails(f, absl::StatusCode::kFailedPrecondition, dir_ + ": not a regular file");
  f = files;
  f.key_file = Write("other.key", pki.reader.key_pem);  // a valid key, of another certificate
  fails(f, absl::StatusCode::kInvalidArgument,
        "TLS private key file " + f.key_file + ": the key does not belong to the certificate in " +
            files.cert_file);
  f = files;
  f.key_file = Write("garbage.key", "not a key\n");
  fails(f, absl::StatusCode::kInvalidArgument, f.key_file + ": holds no PEM private key");
  f = files;
  f.cert_file = Write("key-as-cert.crt", pki.server.key_pem);
  fails(f, absl::StatusCode::kInvalidArgument, f.cert_file + ": holds no PEM certificate");
  f = files;
  std::string broken = pki.server.cert_pem;
  broken[broken.size() / 2] = broken[broken.size() / 2] == 'A' ? 'B' : 'A';
  broken.insert(broken.find('\n') + 1, "!!!!");
  f.cert_file = Write("broken.crt", broken);
  fails(f, absl::StatusCode::kInvalidArgument, f.cert_file + ": certificate 1 does not parse");
  f = files;
  f.client_ca_file = Write("empty-ca.crt", "");
  fails(f, absl::StatusCode::kInvalidArgument, "TLS client CA file " + f.client_ca_file);
  f = files;
  f.client_ca_file = Write("big-ca.crt", std::string(auth::kMaxPemFileBytes + 1, 'x'));
  fails(f, absl::StatusCode::kInvalidArgument, "larger than 1048576 bytes");
  const TestCert expired = pki.ca.Client({"old"}, -10, -1);
  f = files;
  f.cert_file = Write("expired.crt", expired.cert_pem);
  f.key_file = Write("expired.key", expired.key_pem);
  fails(f, absl::StatusCode::kInvalidArgument, f.cert_file + ": the certificate has expired");
  f = files;
  f.key_file.clear();
  fails(f, absl::StatusCode::kInvalidArgument, "both a certificate file and a private key file");
  f = {};
  f.client_ca_file = files.client_ca_file;
  fails(f, absl::StatusCode::kInvalidArgument, "client CA needs the server's own certificate");
}

TEST(CertificateNames, OneCommonNameOfPrintableAscii) {
  const Pki& pki = TestPki();
  EXPECT_EQ(*auth::CertificateCommonName(pki.reader.cert_pem), "grafana.example.com");
  EXPECT_EQ(*auth::CertificateCommonName(pki.admin.cert_pem), "oncall");
  EXPECT_FALSE(auth::CertificateCommonName(pki.two_names.cert_pem).ok());
  EXPECT_FALSE(auth::CertificateCommonName(pki.ca.Client({}).cert_pem).ok());
  EXPECT_FALSE(auth::CertificateCommonName(pki.ca.Client({"caf\xc3\xa9"}).cert_pem).ok());
  EXPECT_FALSE(auth::CertificateCommonName("garbage").ok());

  for (const std::string& bad : {std::string(), std::string(65, 'a'), std::string(" lead"),
                                 std::string("trail "), std::string("a\nb"), std::string("\x7f")}) {
    EXPECT_FALSE(auth::ValidateCertificateName(bad).ok()) << bad;
  }
  EXPECT_TRUE(auth::ValidateCertificateName("Jane Doe (oncall)").ok());

  auto map = auth::ClientCertificateMap::Make(
      {{"oncall", auth::Role::kAdmin}, {"grafana.example.com", auth::Role::kRead}});
  ASSERT_TRUE(map.ok());
  ASSERT_NE(map->Find("oncall"), nullptr);
  EXPECT_EQ(map->Find("oncall")->role, auth::Role::kAdmin);
  EXPECT_EQ(map->Find("grafana.example.com")->role, auth::Role::kRead);
  EXPECT_EQ(map->Find("Oncall"), nullptr);
  EXPECT_EQ(map->Find("oncal"), nullptr);
  EXPECT_EQ(map->Find(""), nullptr);
  EXPECT_FALSE(auth::ClientCertificateMap::Make({{"bad\tname", auth::Role::kRead}}).ok());
}

// A QueryServer on the shared query fixture with TLS, client certificates from the test CA mapped
// to roles (grafana.example.com: read, oncall: admin), and a tokens file.
class TlsQueryTest : public QueryFixture {
 protected:
  void SetUp() override {
    QueryFixture::SetUp();
    const Pki& pki = TestPki();
    tls_.cert_file = Write("server.crt", pki.server.cert_pem);
    tls_.key_file = Write("server.key", pki.server.key_pem);
    tls_.client_ca_file = Write("ca.crt", pki.ca.cert_pem());
    ca_file_ = tls_.client_ca_file;
    auth_.tokens_file = Write(
        "tokens", absl::StrCat("read viewer ", auth::DigestHex(auth::Sha256(kReadSecret)), "\n",
                               "admin boss ", auth::DigestHex(auth::Sha256(kAdminSecret)), "\n"));
    auth_.client_certificates = {{"grafana.example.com", "read"}, {"oncall", "admin"}};
  }
  void TearDown() override {
    server_.reset();
    QueryFixture::TearDown();
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    EXPECT_TRUE(WriteTestFile(path, text));
    return path;
  }
  void StartServer() {
    auto authorizer = daemon::MakeQueryAuthorizer(auth_, tls_, "127.0.0.1:0", &metrics_);
    ASSERT_TRUE(authorizer.ok()) << authorizer.status();
    auto credentials = daemon::MakeQueryCredentials(tls_, auth_);
    ASSERT_TRUE(credentials.ok()) << credentials.status();
    auto server =
        daemon::QueryServer::Start("127.0.0.1:0", store_.get(), &agents_, &metrics_, nullptr,
                                   nullptr, *authorizer, daemon::GrpcLimits(), *credentials);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
  }
  // A stub over TLS trusting `ca_pem`, presenting `client` when it has a certificate.
  std::unique_ptr<v1::QueryService::Stub> Stub(const std::string& ca_pem,
                                               const TestCert& client = {}) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = ca_pem;
    options.pem_cert_chain = client.cert_pem;
    options.pem_private_key = client.key_pem;
    return v1::QueryService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", server_->port()), grpc::SslCredentials(options)));
  }
  static grpc::Status List(v1::QueryService::Stub* stub, const std::string& secret = "") {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!secret.empty()) context.AddMetadata("authorization", "Bearer " + secret);
    v1::ListAgentsResponse response;
    grpc::Status s = stub->ListAgents(&context, v1::ListAgentsRequest(), &response);
    if (s.ok()) EXPECT_EQ(response.agents_size(), 2);
    return s;
  }
  static grpc::Status Trigger(v1::QueryService::Stub* stub, const std::string& secret = "") {
    grpc::ClientContext context;
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (!secret.empty()) context.AddMetadata("authorization", "Bearer " + secret);
    v1::TriggerExtendedDumpRequest request;
    request.set_agent(kLive.value);
    v1::TriggerExtendedDumpResponse response;
    return stub->TriggerExtendedDump(&context, request, &response);
  }

  daemon::TlsConfig tls_;
  daemon::AuthConfig auth_;
  std::string ca_file_;
  std::unique_ptr<daemon::QueryServer> server_;
};

TEST_F(TlsQueryTest, TokensOverTlsAndNoPlaintextNorWrongCa) {
  StartServer();
  const Pki& pki = TestPki();
  auto tls = Stub(pki.ca.cert_pem());
  grpc::Status read = List(tls.get(), kReadSecret);
  EXPECT_TRUE(read.ok()) << read.error_message();
  EXPECT_EQ(Trigger(tls.get(), kReadSecret).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // Accepted; this fixture has no escalation.
  EXPECT_EQ(Trigger(tls.get(), kAdminSecret).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  grpc::Status none = List(tls.get());
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(none.error_message(), HasSubstr("--tls-cert"));

  // A plaintext client does not get through the handshake, not even with a valid token.
  auto plain = v1::QueryService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", server_->port()), grpc::InsecureChannelCredentials()));
  EXPECT_EQ(List(plain.get(), kReadSecret).error_code(), grpc::StatusCode::UNAVAILABLE);
  // A client that trusts another CA refuses the server's certificate.
  auto wrong_ca = Stub(pki.other_ca.cert_pem());
  EXPECT_EQ(List(wrong_ca.get(), kReadSecret).error_code(), grpc::StatusCode::UNAVAILABLE);
}

TEST_F(TlsQueryTest, ClientCertificatesMappedToRoles) {
  StartServer();
  const Pki& pki = TestPki();
  auto reader = Stub(pki.ca.cert_pem(), pki.reader);
  grpc::Status read = List(reader.get());
  EXPECT_TRUE(read.ok()) << read.error_message();
  grpc::Status denied = Trigger(reader.get());
  EXPECT_EQ(denied.error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_THAT(denied.error_message(),
              HasSubstr("client certificate 'grafana.example.com' has role read"));
  // A token is the credential when one is presented: the reader's certificate with the admin token.
  EXPECT_EQ(Trigger(reader.get(), kAdminSecret).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  auto admin = Stub(pki.ca.cert_pem(), pki.admin);
  EXPECT_TRUE(List(admin.get()).ok());
  EXPECT_EQ(Trigger(admin.get()).error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  // ... and a wrong token is refused even on the admin's certificate.
  EXPECT_EQ(Trigger(admin.get(), "not-a-token").error_code(), grpc::StatusCode::UNAUTHENTICATED);

  // Signed by the trusted CA but not mapped; with two commonNames (no single name).
  auto stranger = Stub(pki.ca.cert_pem(), pki.stranger);
  grpc::Status unmapped = List(stranger.get());
  EXPECT_EQ(unmapped.error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_THAT(unmapped.error_message(), HasSubstr("'stranger' is not named"));
  auto two_names = Stub(pki.ca.cert_pem(), pki.two_names);
  EXPECT_EQ(Trigger(two_names.get()).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // The unmapped certificate still may use a token.
  EXPECT_TRUE(List(stranger.get(), kReadSecret).ok());

  // A certificate named "oncall" by a CA the server does not trust fails the handshake.
  auto foreign = Stub(pki.ca.cert_pem(), pki.foreign_admin);
  EXPECT_EQ(Trigger(foreign.get()).error_code(), grpc::StatusCode::UNAVAILABLE);
  // So do an expired certificate of the right CA and one issued for servers only (extendedKeyUsage
  // serverAuth): UNAVAILABLE, not the UNAUTHENTICATED of an unmapped name.
  auto expired = Stub(pki.ca.cert_pem(), pki.ca.Client({"oncall"}, -10, -1));
  EXPECT_EQ(Trigger(expired.get()).error_code(), grpc::StatusCode::UNAVAILABLE);
  auto server_cert = Stub(pki.ca.cert_pem(), pki.server);
  EXPECT_EQ(List(server_cert.get()).error_code(), grpc::StatusCode::UNAVAILABLE);

  const std::string text = metrics_.ExpositionText();
  for (const char* series : {R"(heapwatch_auth_failures_total{reason="unmapped_certificate"} 2)",
                             R"(heapwatch_auth_failures_total{reason="wrong_role"} 1)",
                             R"(heapwatch_auth_failures_total{reason="unknown_credential"} 1)"}) {
    EXPECT_NE(text.find(series), std::string::npos) << series << "\n" << text;
  }
}

// Without a tokens file a certificate is the only credential: the handshake requires one.
TEST_F(TlsQueryTest, WithoutTokensTheCertificateIsRequired) {
  auth_.tokens_file.clear();
  StartServer();
  const Pki& pki = TestPki();
  EXPECT_EQ(List(Stub(pki.ca.cert_pem()).get()).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_TRUE(List(Stub(pki.ca.cert_pem(), pki.reader).get()).ok());
  EXPECT_EQ(List(Stub(pki.ca.cert_pem(), pki.stranger).get()).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST(MakeQueryAuthorizer, NonLoopbackWithClientCertificates) {
  daemon::Metrics metrics;
  daemon::AuthConfig auth;
  daemon::TlsConfig tls;
  tls.cert_file = "/x/server.crt";
  tls.key_file = "/x/server.key";
  tls.client_ca_file = "/x/ca.crt";
  // A client CA alone names nobody: not credentials.
  auto refused = daemon::MakeQueryAuthorizer(auth, tls, "0.0.0.0:7750", &metrics);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(Msg(refused.status()), HasSubstr("auth.client_certificates"));
  auth.client_certificates = {{"oncall", "admin"}};
  auto ok = daemon::MakeQueryAuthorizer(auth, tls, "0.0.0.0:7750", &metrics);
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_NE(*ok, nullptr);
  tls.client_ca_file.clear();
  auto no_ca = daemon::MakeQueryAuthorizer(auth, tls, "127.0.0.1:7750", &metrics);
  EXPECT_EQ(no_ca.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(TlsConfig, YamlFlagsAndValidation) {
  auto parsed = daemon::ParseConfigYaml(
      "tls:\n  cert_file: /etc/h/server.crt\n  key_file: /etc/h/server.key\n"
      "  client_ca_file: /etc/h/ca.crt\n"
      "auth:\n  client_certificates: {\"grafana.example.com\": read, oncall: admin}\n",
      daemon::Config(), "test.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->tls.cert_file, "/etc/h/server.crt");
  EXPECT_EQ(parsed->tls.client_ca_file, "/etc/h/ca.crt");
  EXPECT_EQ(parsed->auth.client_certificates.at("oncall"), "admin");
  EXPECT_TRUE(daemon::ValidateConfig(*parsed).ok());
  auto again = daemon::ParseConfigYaml(daemon::ConfigToYaml(*parsed), daemon::Config(), "again");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->tls.key_file, "/etc/h/server.key");
  EXPECT_EQ(again->auth.client_certificates, parsed->auth.client_certificates);

  // Every valid name survives the round trip, also those that read as something else when plain.
  daemon::Config odd = *parsed;
  for (const char* name : {"null", "~", "true", "a: b", "#x", "- y", "'q'", "\"dq\"", "[x]", "x #y",
                           "back\\slash", "{z}", "*alias", "&anchor", "!tag", "%p", "@at", "`b`"}) {
    odd.auth.client_certificates[name] = "read";
  }
  auto odd_again = daemon::ParseConfigYaml(daemon::ConfigToYaml(odd), daemon::Config(), "odd");
  ASSERT_TRUE(odd_again.ok()) << odd_again.status() << "\n" << daemon::ConfigToYaml(odd);
  EXPECT_EQ(odd_again->auth.client_certificates, odd.auth.client_certificates);

  auto bad_role = daemon::ParseConfigYaml("auth:\n  client_certificates: {oncall: root}\n",
                                          daemon::Config(), "t.yaml");
  ASSERT_FALSE(bad_role.ok());
  EXPECT_THAT(Msg(bad_role.status()), HasSubstr("unknown role for 'oncall'"));
  EXPECT_FALSE(daemon::ParseConfigYaml("auth:\n  client_certificates: [oncall]\n", daemon::Config(),
                                       "t.yaml")
                   .ok());
  EXPECT_FALSE(daemon::ParseConfigYaml("auth:\n  client_certificates: {\" x\": read}\n",
                                       daemon::Config(), "t.yaml")
                   .ok());

  daemon::Config c;
  c.tls.cert_file = "a";
  EXPECT_THAT(Msg(daemon::ValidateConfig(c)), HasSubstr("tls.key_file"));
  c.tls.key_file = "b";
  c.auth.client_certificates = {{"x", "read"}};
  EXPECT_THAT(Msg(daemon::ValidateConfig(c)), HasSubstr("needs tls.client_ca_file"));

  std::ostringstream out, err;
  const char* argv[] = {"heapwatchd", "--tls-cert",      "/c", "--tls-key",
                        "/k",         "--tls-client-ca", "/ca"};
  daemon::CommandLine cl = daemon::ParseCommandLine(7, argv, out, err);
  ASSERT_FALSE(cl.exit_code.has_value()) << err.str();
  EXPECT_EQ(cl.config.tls.cert_file, "/c");
  EXPECT_EQ(cl.config.tls.key_file, "/k");
  EXPECT_EQ(cl.config.tls.client_ca_file, "/ca");
}

// A real daemon: serves TLS with the configured files, and refuses to start with a key that does
// not belong to the certificate, naming the file.
TEST_F(TlsFiles, DaemonServesTlsAndRefusesAMismatchedKey) {
  const Pki& pki = TestPki();
  daemon::Config config;
  config.data_dir = dir_ + "/data";
  config.grpc_listen = "127.0.0.1:0";
  config.metrics_listen = "127.0.0.1:0";
  config.watch.agents.include = {"heapwatch-tls-test-watches-no-jvm"};
  config.shutdown_grace = absl::Seconds(5);
  config.tls.cert_file = Write("server.crt", pki.server.cert_pem);
  config.tls.key_file = Write("wrong.key", pki.admin.key_pem);
  auto refused = daemon::Daemon::Start(config);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(Msg(refused.status()), HasSubstr("tls: TLS private key file " + config.tls.key_file));

  config.tls.key_file = Write("server.key", pki.server.key_pem);
  auto d = daemon::Daemon::Start(config);
  ASSERT_TRUE(d.ok()) << d.status();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = pki.ca.cert_pem();
  auto stub = v1::QueryService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", (*d)->grpc_port()), grpc::SslCredentials(options)));
  grpc::ClientContext context;
  v1::ListAgentsResponse response;
  EXPECT_TRUE(stub->ListAgents(&context, v1::ListAgentsRequest(), &response).ok());
  EXPECT_TRUE((*d)->Shutdown());
}

}  // namespace
}  // namespace heapwatch::testing
