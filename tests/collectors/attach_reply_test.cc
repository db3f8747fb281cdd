// The reply half of the attach protocol (collectors/attach.h: ParseAttachReply, JcmdResult) on raw
// replies captured byte for byte from a real JDK 17 (data/capture_fixtures.sh) and on malformed
// ones. The same functions are fuzzed by fuzz/attach_reply_fuzzer.cc.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "collectors/attach.h"
#include "tests/collectors/test_process.h"

namespace heapwatch::collectors {
namespace {

using testing::DataDir;
using ::testing::HasSubstr;
using testing::ReadFileOrDie;

std::string Fixture(const std::string& name) { return ReadFileOrDie(DataDir() + "/" + name); }

TEST(AttachReplyTest, UnknownCommandIsInvalidArgumentWithTheJvmsText) {
  auto reply = ParseAttachReply(Fixture("jdk17_raw_unknown_command.txt"), 77);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->status, -1);
  EXPECT_THAT(reply->output, HasSubstr("IllegalArgumentException"));
  auto result = JcmdResult(*reply, 77, "Foo.bar");
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(result.status().message()), HasSubstr("JVM 77 failed 'Foo.bar'"));
}

TEST(AttachReplyTest, SuccessReturnsTheOutputAfterTheStatusLine) {
  auto reply = ParseAttachReply("0\nline 1\nline 2\n", 1);
  ASSERT_TRUE(reply.ok()) << reply.status();
  EXPECT_EQ(reply->status, 0);
  auto result = JcmdResult(*reply, 1, "VM.version");
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(*result, "line 1\nline 2\n");
}

TEST(AttachReplyTest, ProtocolMismatchAndOtherFailures) {
  EXPECT_EQ(JcmdResult({101, "bad version"}, 1, "x").status().code(),
            absl::StatusCode::kUnimplemented);
  EXPECT_EQ(JcmdResult({1, "boom"}, 1, "x").status().code(), absl::StatusCode::kInternal);
}

TEST(AttachReplyTest, MalformedStatusLineIsDataLossWithABoundedQuote) {
  for (const std::string raw : {std::string(""), std::string("0"), std::string("x\n"),
                                std::string("99999999999\nout"), std::string(5000, '7')}) {
    auto reply = ParseAttachReply(raw, 1);
    EXPECT_EQ(reply.status().code(), absl::StatusCode::kDataLoss) << raw.substr(0, 20);
    EXPECT_LT(reply.status().message().size(), 400u);
  }
}

}  // namespace
}  // namespace heapwatch::collectors
