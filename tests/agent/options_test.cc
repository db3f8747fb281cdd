#include "agent/options.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace heapwatch::agent {
namespace {

std::string WriteTemp(const std::string& content) {
  char path[] = "/tmp/hw_agent_token_XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  close(fd);
  return path;
}

TEST(AgentOptionsTest, ParsesEveryOption) {
  std::string token = WriteTemp("  s3cret \nsecond line\n");
  auto o = ParseAgentOptions("address=localhost:7070,token_file=" + token +
                             ",label.env=prod,label.team_2=a b,buffer=10,backoff_initial=50ms,"
                             "backoff_max=2s");
  unlink(token.c_str());
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->address, "localhost:7070");
  EXPECT_EQ(o->token, "s3cret");
  EXPECT_EQ(o->labels.size(), 2u);
  EXPECT_EQ(o->labels.at("team_2"), "a b");
  EXPECT_EQ(o->buffer_capacity, 10u);
  EXPECT_EQ(o->backoff_initial, absl::Milliseconds(50));
  EXPECT_EQ(o->backoff_max, absl::Seconds(2));
}

TEST(AgentOptionsTest, UnixAddress) {
  auto o = ParseAgentOptions("address=unix:/run/heapwatch/agents.sock");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->address, "unix:/run/heapwatch/agents.sock");
  EXPECT_TRUE(o->token.empty());
}

TEST(AgentOptionsTest, RefusesBadOptions) {
  for (const char* bad :
       {"", "address", "address=", "address=unix:relative", "address=host", "address=host:0",
        "address=host:70000", "address=a:1,address=b:2", "address=a:1,nope=1",
        "address=a:1,label.Bad=x", "address=a:1,label.=x", "address=a:1,buffer=0",
        "address=a:1,buffer=x", "address=a:1,backoff_initial=-1s", "address=a:1,label.k=\x01",
        "label.k=v", "address=a:1,token_file=/nonexistent/token"}) {
    EXPECT_FALSE(ParseAgentOptions(bad).ok()) << bad;
  }
  std::string many = "address=a:1";
  for (int i = 0; i < 17; ++i) many += ",label.l" + std::to_string(i) + "=v";
  EXPECT_FALSE(ParseAgentOptions(many).ok());
  EXPECT_FALSE(ParseAgentOptions("address=a:1," + std::string(9000, 'x')).ok());
}

TEST(AgentOptionsTest, DumpDirMustBeAWritableDirectory) {
  auto o = ParseAgentOptions("address=a:1");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->dump_dir, "/tmp");
  char dir[] = "/tmp/hw_agent_dump_dir_XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  o = ParseAgentOptions(std::string("address=a:1,dump_dir=") + dir + "//");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->dump_dir, dir) << "trailing '/' dropped";
  o = ParseAgentOptions("address=a:1,dump_dir=/");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->dump_dir, "/");
  std::string file = WriteTemp("not a directory");
  for (const std::string& bad : {std::string("dump_dir=relative/dir"), std::string("dump_dir="),
                                 "dump_dir=" + file, std::string(dir) + "/missing",
                                 "dump_dir=/" + std::string(1100, 'd')}) {
    auto r = ParseAgentOptions("address=a:1," + (bad[0] == '/' ? "dump_dir=" + bad : bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(r.status().message().find("dump_dir="), std::string::npos) << r.status();
  }
  unlink(file.c_str());
  rmdir(dir);
}

TEST(AgentOptionsTest, TlsOptions) {
  std::string pem = WriteTemp("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n");
  auto o = ParseAgentOptions("address=h:1,tls_ca=" + pem + ",tls_server_name=heapwatch.example");
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->tls);
  EXPECT_NE(o->tls_ca_pem.find("BEGIN CERTIFICATE"), std::string::npos);
  EXPECT_EQ(o->tls_server_name, "heapwatch.example");
  EXPECT_FALSE(ParseAgentOptions("address=h:1").value().tls);
  // A certificate without its key, a file that is not PEM, a missing file.
  EXPECT_FALSE(ParseAgentOptions("address=h:1,tls_cert=" + pem).ok());
  std::string not_pem = WriteTemp("hello");
  EXPECT_FALSE(ParseAgentOptions("address=h:1,tls_ca=" + not_pem).ok());
  EXPECT_FALSE(ParseAgentOptions("address=h:1,tls_ca=/nonexistent/ca.pem").ok());
  unlink(pem.c_str());
  unlink(not_pem.c_str());
}

TEST(AgentOptionsTest, TokenFileMustHoldAToken) {
  std::string empty = WriteTemp("\n\n");
  EXPECT_FALSE(ReadTokenFile(empty).ok());
  unlink(empty.c_str());
  std::string binary = WriteTemp(std::string("ab\0cd", 5));
  EXPECT_FALSE(ReadTokenFile(binary).ok());
  unlink(binary.c_str());
  EXPECT_EQ(ReadTokenFile("/nonexistent/x").status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace heapwatch::agent
