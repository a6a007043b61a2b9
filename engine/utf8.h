// UTF-8 helpers, and Azure's ordinal string order.
//
// Azure (.NET) compares strings ordinally by UTF-16 code unit. Code points
// U+E000..U+FFFF therefore sort *after* the supplementary planes (whose
// surrogates are 0xD800..0xDFFF), while plain UTF-8 byte order puts them
// before. OrdinalByte() fixes that with a byte map that keeps UTF-8
// self-synchronising: the lead bytes 0xEE/0xEF (U+E000..U+FFFF) become
// 0xF8/0xF9, above every 4-byte lead (0xF0..0xF4). The storage key encoding
// applies the same map, so RocksDB's bytewise order is Azure's order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace sidetable {

// True when `s` is well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF).
bool IsValidUtf8(std::string_view s);

// Length in UTF-16 code units of valid UTF-8 (Azure measures sizes in UTF-16).
size_t Utf16Length(std::string_view s);

// True when every byte is below 0x80: then `s` is valid UTF-8 and one UTF-16
// unit a byte. The validators' fast path: most keys, names and values are.
bool IsAscii(std::string_view s);

// The longest prefix of valid UTF-8 `s` of at most `max_bytes` bytes that
// ends on a code point boundary: for quoting input in a message.
std::string_view Utf8Prefix(std::string_view s, size_t max_bytes);

inline uint8_t OrdinalByte(uint8_t b) {
  return b == 0xEE ? 0xF8 : b == 0xEF ? 0xF9 : b;
}
inline uint8_t OrdinalByteInverse(uint8_t b) {
  return b == 0xF8 ? 0xEE : b == 0xF9 ? 0xEF : b;
}

// <0, 0, >0 as a and b compare by UTF-16 code units (valid UTF-8 inputs).
int CompareOrdinal(std::string_view a, std::string_view b);

// Calls fn(code_point) for each code point of valid UTF-8; stops early when fn
// returns false. Returns false if it stopped early.
template <typename Fn>
bool ForEachCodePoint(std::string_view s, Fn&& fn) {
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<uint8_t>(s[i]);
    uint32_t cp;
    size_t n;
    if (c < 0x80) { cp = c; n = 1; }
    else if (c < 0xE0) { cp = c & 0x1F; n = 2; }
    else if (c < 0xF0) { cp = c & 0x0F; n = 3; }
    else { cp = c & 0x07; n = 4; }
    for (size_t k = 1; k < n && i + k < s.size(); k++) {
      cp = cp << 6 | (static_cast<uint8_t>(s[i + k]) & 0x3F);
    }
    if (!fn(cp)) return false;
    i += n;
  }
  return true;
}

// Appends the UTF-8 encoding of a code point.
void AppendUtf8(std::string* out, uint32_t cp);

// `s` as valid UTF-8, for text that must be shown or sent whatever the input
// was (error messages echo what a client sent): each byte that does not start
// a well-formed sequence becomes U+FFFD. When the result would exceed
// `max_bytes` it is cut at a character boundary and ends with "...".
std::string ToValidUtf8(std::string_view s, size_t max_bytes = SIZE_MAX);

}  // namespace sidetable
