// The agent's option string without the file system (ParseAgentOptionText), what its errors quote,
// and the files it reads (regular files only). agent/options.h.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "absl/strings/string_view.h"
#include "agent/options.h"
#include "gtest/gtest.h"

namespace heapwatch::agent {
namespace {

bool Printable(absl::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

TEST(AgentOptionTextTest, ReturnsTheFilesUnread) {
  AgentOptionFiles files;
  StatusOr<AgentOptions> o = ParseAgentOptionText(
      "address=h:1,token_file=/no/such/token,tls_ca=/no/ca.pem,tls_cert=/no/c.pem,tls_key=/no/k",
      &files);
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(files.token_file, "/no/such/token");
  EXPECT_EQ(files.tls_ca, "/no/ca.pem");
  EXPECT_EQ(files.tls_cert, "/no/c.pem");
  EXPECT_EQ(files.tls_key, "/no/k");
  EXPECT_TRUE(o->tls);
  EXPECT_TRUE(o->token.empty());
  EXPECT_TRUE(o->tls_ca_pem.empty());
  // The same string with the files read fails on the first missing one.
  EXPECT_FALSE(ParseAgentOptions("address=h:1,token_file=/no/such/token").ok());
  EXPECT_FALSE(ParseAgentOptionText("address=h:1,tls_cert=/c", &files).ok()) << "cert without key";
  EXPECT_FALSE(ParseAgentOptionText("address=h:1,tls_key=/k", &files).ok()) << "key without cert";
}

TEST(AgentOptionTextTest, ErrorsQuoteLittleAndOnlyPrintableBytes) {
  AgentOptionFiles files;
  for (const std::string& bad :
       {std::string("address=h:1,buffer=\x01\x1b[2J"),
        std::string("address=h:1,buffer=") + std::string(5000, '9'),
        std::string("address=h:1,backoff_max=\x7f\xff"), std::string("address=h:\x01"),
        std::string("address=h:1,") + std::string(4000, 'k') + "=1",
        std::string("address=h:1,\x01\x02")}) {
    StatusOr<AgentOptions> o = ParseAgentOptionText(bad, &files);
    ASSERT_FALSE(o.ok()) << bad;
    EXPECT_EQ(o.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_TRUE(Printable(o.status().message())) << o.status().message();
    EXPECT_LE(o.status().message().size(), 160u) << o.status().message();
  }
}

TEST(AgentOptionTextTest, ReadsOnlyRegularFiles) {
  // A FIFO would block the JVM's start until someone writes to it; a directory is no token.
  std::string fifo = "/tmp/hw_agent_fifo_" + std::to_string(getpid());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  StatusOr<std::string> t = ReadTokenFile(fifo);
  EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("not a regular file"), std::string::npos) << t.status();
  EXPECT_FALSE(ParseAgentOptions("address=h:1,tls_ca=" + fifo).ok());
  unlink(fifo.c_str());
  EXPECT_EQ(ReadTokenFile("/tmp").status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace heapwatch::agent
