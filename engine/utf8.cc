#include "engine/utf8.h"

#include <algorithm>
#include <cstring>

namespace sidetable {
namespace {

// Word-at-a-time helpers: validation and sizing run on every string of every
// write, and most strings are ASCII.
constexpr uint64_t kHighBits = 0x8080808080808080ull;

uint64_t Load8(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// Number of bytes whose bit 7 is set, for words with no other bits set.
// (A multiply instead of popcount: the portable build has no POPCNT.)
size_t CountHighBits(uint64_t high_bits_only) {
  return static_cast<size_t>(((high_bits_only >> 7) * 0x0101010101010101ull) >> 56);
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    if (i + 8 <= n && (Load8(s.data() + i) & kHighBits) == 0) {
      i += 8;  // eight ASCII bytes
      continue;
    }
    auto c = static_cast<uint8_t>(s[i]);
    if (c < 0x80) {
      i++;
      continue;
    }
    size_t len;
    uint32_t cp;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
    else return false;
    if (i + len > n) return false;
    for (size_t k = 1; k < len; k++) {
      auto cc = static_cast<uint8_t>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = cp << 6 | (cc & 0x3F);
    }
    if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return false;
    }
    i += len;
  }
  return true;
}

size_t Utf16Length(std::string_view s) {
  // A code point is one unit per lead (non-continuation) byte, plus one more
  // for 4-byte sequences (a surrogate pair). Per byte, bit 7 of
  //   w & ~(w << 1)                      marks continuation bytes 10xxxxxx;
  //   w & (w << 1) & (w << 2) & (w << 3) marks 4-byte leads 1111xxxx.
  // Shifts move bits within a byte into bit 7 only from the same byte.
  size_t units = 0;
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    const uint64_t w = Load8(s.data() + i);
    const uint64_t cont = w & ~(w << 1) & kHighBits;
    const uint64_t four = w & (w << 1) & (w << 2) & (w << 3) & kHighBits;
    units += 8 - CountHighBits(cont) + CountHighBits(four);
  }
  for (unsigned char c : s.substr(i)) {
    if ((c & 0xC0) != 0x80) units++;   // a lead byte starts a code point
    if (c >= 0xF0) units++;            // 4-byte sequences need a surrogate pair
  }
  return units;
}

int CompareOrdinal(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  for (size_t i = 0; i < n; i++) {
    uint8_t x = OrdinalByte(static_cast<uint8_t>(a[i]));
    uint8_t y = OrdinalByte(static_cast<uint8_t>(b[i]));
    if (x != y) return x < y ? -1 : 1;
  }
  return a.size() < b.size() ? -1 : a.size() > b.size() ? 1 : 0;
}

void AppendUtf8(std::string* out, uint32_t cp) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | cp >> 6));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | cp >> 12));
    out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | cp >> 18));
    out->push_back(static_cast<char>(0x80 | (cp >> 12 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp >> 6 & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace sidetable
