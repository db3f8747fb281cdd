// UTF-8, strictly (RFC 3629 section 4, "Syntax of UTF-8 Byte Sequences"; Unicode 15 section 3.9,
// table 3-7, "Well-Formed UTF-8 Byte Sequences"): the one decoder and encoder that every text from
// outside goes through (configuration strings, thread names from heap dumps, JVM system
// properties).
//
// Strict means: no overlong forms (0xC0 0x96 is not U+0016), no UTF-16 surrogates (U+D800..U+DFFF),
// nothing above U+10FFFF, no sequence cut short by the end of the text or by a byte that is not a
// continuation byte (10xxxxxx). Control characters are well-formed UTF-8 and decode as themselves:
// whether a caller accepts them is its own policy.
//
// Header-only (heapwatch::common is an interface library). Pure functions, thread-safe.
#ifndef HEAPWATCH_COMMON_UTF8_H_
#define HEAPWATCH_COMMON_UTF8_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace heapwatch {

// U+FFFD REPLACEMENT CHARACTER: what an invalid sequence decodes to and what AppendUtf8 writes for
// a value that is not a Unicode scalar value.
inline constexpr uint32_t kReplacementCharacter = 0xFFFD;

// Decodes the code point that starts at s[*i] (REQUIRES: *i < s.size()) into *code_point and
// advances *i past it. Returns false for an ill-formed sequence: then *code_point is U+FFFD and *i
// has advanced by exactly one byte (so a caller that goes on resynchronises on the next byte, the
// "maximal subpart" practice of Unicode section 3.9 in its simplest form). O(1); reads at most 4
// bytes, never past s.size().
inline bool DecodeUtf8(std::string_view s, size_t* i, uint32_t* code_point) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const uint8_t lead = byte(*i);
  if (lead < 0x80) {
    *code_point = lead;
    ++*i;
    return true;
  }
  // Lead bytes 0xC0, 0xC1 (always overlong) and 0xF5..0xFF (beyond U+10FFFF) never occur.
  size_t continuation = 0;
  uint32_t cp = 0;
  if (lead >= 0xC2 && lead <= 0xDF) {
    continuation = 1, cp = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    continuation = 2, cp = lead & 0x0F;
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    continuation = 3, cp = lead & 0x07;
  }
  bool ok = continuation > 0 && continuation < s.size() - *i;  // the sequence fits in s
  for (size_t k = 1; ok && k <= continuation; ++k) {
    const uint8_t c = byte(*i + k);
    ok = (c & 0xC0) == 0x80;
    cp = (cp << 6) | (c & 0x3F);
  }
  static constexpr uint32_t kMinimum[] = {0, 0x80, 0x800, 0x10000};  // by continuation bytes
  if (ok && (cp < kMinimum[continuation] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))) {
    ok = false;  // overlong, beyond Unicode, or a surrogate
  }
  if (!ok) {
    *code_point = kReplacementCharacter;
    ++*i;
    return false;
  }
  *code_point = cp;
  *i += continuation + 1;
  return true;
}

// The offset of the first byte of the first ill-formed sequence in `s`, or s.size() when all of
// `s` is well-formed UTF-8. O(s.size()).
inline size_t FirstInvalidUtf8(std::string_view s) {
  uint32_t cp = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t at = i;
    if (!DecodeUtf8(s, &i, &cp)) return at;
  }
  return s.size();
}

// Appends the UTF-8 encoding of `code_point` (1 to 4 bytes) to *out; U+FFFD instead for a value
// that is not a Unicode scalar value (a surrogate U+D800..U+DFFF, or above U+10FFFF), so that *out
// stays well-formed. O(1).
inline void AppendUtf8(uint32_t code_point, std::string* out) {
  uint32_t cp = code_point;
  if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = kReplacementCharacter;
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace heapwatch

#endif  // HEAPWATCH_COMMON_UTF8_H_
