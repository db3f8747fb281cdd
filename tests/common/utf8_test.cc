// common/utf8.h: the strict decoder against hand-made sequences (valid, overlong, surrogate,
// beyond U+10FFFF, truncated, stray continuation bytes, control characters) and, exhaustively,
// against the encoder over every Unicode scalar value.
#include "common/utf8.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace heapwatch {
namespace {

struct Decoded {
  std::vector<uint32_t> code_points;
  std::vector<bool> valid;
};

Decoded DecodeAll(std::string_view s) {
  Decoded out;
  uint32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t before = i;
    out.valid.push_back(DecodeUtf8(s, &i, &cp));
    EXPECT_GT(i, before);
    EXPECT_LE(i, s.size());
    out.code_points.push_back(cp);
  }
  return out;
}

TEST(Utf8Test, ValidSequencesOfEveryLengthDecode) {
  // "a", U+00E9, U+20AC, U+1F600, and the ends of each length's range.
  const std::string s =
      "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"
      "\xC2\x80\xDF\xBF\xE0\xA0\x80\xEF\xBF\xBF\xF0\x90\x80\x80\xF4\x8F\xBF\xBF";
  const Decoded d = DecodeAll(s);
  EXPECT_EQ(d.code_points, (std::vector<uint32_t>{'a', 0xE9, 0x20AC, 0x1F600, 0x80, 0x7FF, 0x800,
                                                  0xFFFF, 0x10000, 0x10FFFF}));
  EXPECT_EQ(d.valid, std::vector<bool>(10, true));
  EXPECT_EQ(FirstInvalidUtf8(s), s.size());
  EXPECT_EQ(FirstInvalidUtf8(""), 0u);
  // U+D7FF and U+E000, either side of the surrogates, are fine.
  EXPECT_EQ(DecodeAll("\xED\x9F\xBF\xEE\x80\x80").code_points,
            (std::vector<uint32_t>{0xD7FF, 0xE000}));
}

TEST(Utf8Test, OverlongFormsAreRefused) {
  // "/" as 2, 3 and 4 bytes; NUL as 2 bytes (Java's modified UTF-8); the largest overlong of each.
  for (const std::string& s :
       {std::string("\xC0\xAF"), std::string("\xE0\x80\xAF"), std::string("\xF0\x80\x80\xAF"),
        std::string("\xC0\x80"), std::string("\xC1\xBF"), std::string("\xE0\x9F\xBF"),
        std::string("\xF0\x8F\xBF\xBF")}) {
    EXPECT_EQ(FirstInvalidUtf8(s), 0u) << s.size();
    size_t i = 0;
    uint32_t cp = 0;
    EXPECT_FALSE(DecodeUtf8(s, &i, &cp));
    EXPECT_EQ(cp, kReplacementCharacter);
    EXPECT_EQ(i, 1u);  // one byte consumed
  }
}

TEST(Utf8Test, SurrogatesAndCodePointsBeyondUnicodeAreRefused) {
  // U+D800, U+DBFF, U+DC00, U+DFFF (CESU-8 halves), a CESU-8 pair, U+110000, and lead bytes F5..FF.
  for (const std::string& s :
       {std::string("\xED\xA0\x80"), std::string("\xED\xAF\xBF"), std::string("\xED\xB0\x80"),
        std::string("\xED\xBF\xBF"), std::string("\xED\xA0\xBD\xED\xB8\x80"),
        std::string("\xF4\x90\x80\x80"), std::string("\xF5\x80\x80\x80"), std::string("\xFF")}) {
    EXPECT_EQ(FirstInvalidUtf8(s), 0u) << s.size();
    const Decoded d = DecodeAll(s);
    EXPECT_FALSE(d.valid.front());
    EXPECT_EQ(d.code_points.front(), kReplacementCharacter);
  }
}

TEST(Utf8Test, TruncatedSequencesAndStrayContinuationBytesAreRefused) {
  // Cut by the end of the text: the decoder never reads past it.
  EXPECT_EQ(FirstInvalidUtf8("\xC3"), 0u);
  EXPECT_EQ(FirstInvalidUtf8("\xE2\x82"), 0u);
  EXPECT_EQ(FirstInvalidUtf8("\xF0\x9F\x98"), 0u);
  EXPECT_EQ(FirstInvalidUtf8("ab\xF0"), 2u);
  // The bytes after the end of the view would complete the sequence: it is still cut short.
  const std::string euro = "\xE2\x82\xAC";
  EXPECT_EQ(FirstInvalidUtf8(std::string_view(euro.data(), 2)), 0u);
  EXPECT_EQ(FirstInvalidUtf8(std::string_view(euro.data(), 3)), 3u);
  EXPECT_EQ(DecodeAll("\xF0\x9F\x98").code_points, std::vector<uint32_t>(3, kReplacementCharacter));
  // Cut by a byte that is not a continuation byte: that byte starts the next character.
  const Decoded d = DecodeAll(
      "\xE2\x82"
      "a\xC3(");
  EXPECT_EQ(d.code_points, (std::vector<uint32_t>{kReplacementCharacter, kReplacementCharacter, 'a',
                                                  kReplacementCharacter, '('}));
  EXPECT_EQ(d.valid, (std::vector<bool>{false, false, true, false, true}));
  // A continuation byte with no lead byte.
  EXPECT_EQ(FirstInvalidUtf8("ok\x80"), 2u);
  EXPECT_EQ(FirstInvalidUtf8("\xBF"), 0u);
}

TEST(Utf8Test, ControlCharactersAreWellFormedAndDecodeAsThemselves) {
  // C0 controls, DEL and C1 controls (U+0085 NEL as C2 85): whether they are acceptable is the
  // caller's policy (daemon/config.cc refuses C0 but tab, and DEL; thread names replace C0 and C1).
  const Decoded d = DecodeAll(std::string("\x00\t\x1F\x7F\xC2\x85\xC2\x9F", 8));
  EXPECT_EQ(d.code_points, (std::vector<uint32_t>{0x00, '\t', 0x1F, 0x7F, 0x85, 0x9F}));
  EXPECT_EQ(d.valid, std::vector<bool>(6, true));
  // ...but an overlong control character (yaml-cpp's emitter writes C0 96 back as 0x16) is not.
  EXPECT_EQ(FirstInvalidUtf8("x\xC0\x96"), 1u);
}

TEST(Utf8Test, EncoderRoundTripsEveryScalarValueAndReplacesTheRest) {
  for (uint32_t cp = 0; cp <= 0x10FFFF; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    std::string s;
    AppendUtf8(cp, &s);
    ASSERT_EQ(s.size(), cp < 0x80 ? 1u : cp < 0x800 ? 2u : cp < 0x10000 ? 3u : 4u) << cp;
    size_t i = 0;
    uint32_t back = 0;
    ASSERT_TRUE(DecodeUtf8(s, &i, &back)) << cp;
    ASSERT_EQ(back, cp);
    ASSERT_EQ(i, s.size());
  }
  for (uint32_t cp : {0xD800u, 0xDBFFu, 0xDC00u, 0xDFFFu, 0x110000u, 0xFFFFFFFFu}) {
    std::string s;
    AppendUtf8(cp, &s);
    EXPECT_EQ(s, "\xEF\xBF\xBD") << cp;  // U+FFFD
  }
}

}  // namespace
}  // namespace heapwatch
