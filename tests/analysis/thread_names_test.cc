// What a report may show of a thread's name (analysis/thread_names.h): digit runs masked by
// default, full names only when asked, no names with "off"; control characters, bidi overrides and
// invalid UTF-8 replaced; the length bounded; markup kept as text (renderers escape it).
#include "analysis/thread_names.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace heapwatch::analysis {
namespace {

constexpr auto kMasked = ThreadNamePrivacy::kMasked;
constexpr auto kFull = ThreadNamePrivacy::kFull;

TEST(ThreadNameForReport, MasksDigitRunsByDefault) {
  EXPECT_EQ(ThreadNameForReport("pool-3-thread-17", false, kMasked), "pool-#-thread-#");
  EXPECT_EQ(ThreadNameForReport("http-nio-8080-exec-12", false, kMasked), "http-nio-#-exec-#");
  EXPECT_EQ(ThreadNameForReport("main", false, kMasked), "main");
  EXPECT_EQ(ThreadNameForReport("2024", false, kMasked), "#");
  EXPECT_EQ(ThreadNameForReport("", false, kMasked), "");
  EXPECT_EQ(ThreadNameForReport("pool-3-thread-17", false, kFull), "pool-3-thread-17");
  EXPECT_EQ(ThreadNameForReport("pool-3-thread-17", false, ThreadNamePrivacy::kOff), "");
}

TEST(ThreadNameForReport, KeepsNonAsciiText) {
  EXPECT_EQ(ThreadNameForReport("Überprüfung-7 日本", false, kMasked), "Überprüfung-# 日本");
  EXPECT_EQ(ThreadNameForReport("emoji-\xf0\x9f\x98\x80", false, kFull), "emoji-\xf0\x9f\x98\x80");
}

TEST(ThreadNameForReport, ReplacesControlAndBidiCharactersAndBadUtf8) {
  const std::string fffd = "\xef\xbf\xbd";
  // A newline and an ANSI escape would forge lines or colours in a terminal report.
  EXPECT_EQ(ThreadNameForReport("a\nb\x1b[31mc", false, kFull), "a" + fffd + "b" + fffd + "[31mc");
  // U+202E RIGHT-TO-LEFT OVERRIDE, U+2066 LEFT-TO-RIGHT ISOLATE, U+0085 NEXT LINE (C1).
  EXPECT_EQ(ThreadNameForReport("x\xe2\x80\xaey\xe2\x81\xa6z\xc2\x85", false, kFull),
            "x" + fffd + "y" + fffd + "z" + fffd);
  // Invalid and truncated UTF-8, an overlong encoding and an encoded surrogate.
  EXPECT_EQ(ThreadNameForReport("a\xff"
                                "b\xc3",
                                false, kFull),
            "a" + fffd + "b" + fffd);
  EXPECT_EQ(ThreadNameForReport("\xc0\xaf", false, kFull), fffd + fffd);
  EXPECT_EQ(ThreadNameForReport("\xed\xa0\x80", false, kFull), fffd + fffd + fffd);
}

TEST(ThreadNameForReport, KeepsMarkupAsText) {
  EXPECT_EQ(ThreadNameForReport("<script>alert(1)</script>", false, kMasked),
            "<script>alert(#)</script>");
}

TEST(ThreadNameForReport, BoundsTheLength) {
  const std::string long_name(200, 'a');
  EXPECT_EQ(ThreadNameForReport(long_name, false, kFull),
            std::string(kThreadNameMaxChars, 'a') + "...");
  EXPECT_EQ(ThreadNameForReport("short", true, kFull), "short...");  // cut when read
  // Counted in code points, not bytes: 64 three-byte characters fit.
  std::string cjk;
  for (size_t i = 0; i < kThreadNameMaxChars; ++i) cjk += "日";
  EXPECT_EQ(ThreadNameForReport(cjk, false, kFull), cjk);
  EXPECT_EQ(ThreadNameForReport(cjk + "日", false, kFull), cjk + "...");
}

TEST(ThreadNamePrivacy, ParsesItsNames) {
  for (ThreadNamePrivacy p : {kMasked, kFull, ThreadNamePrivacy::kOff}) {
    auto parsed = ParseThreadNamePrivacy(ThreadNamePrivacyName(p));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, p);
  }
  auto bad = ParseThreadNamePrivacy("yes");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("\"masked\", \"full\""));
}

}  // namespace
}  // namespace heapwatch::analysis
