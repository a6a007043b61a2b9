#include "engine/utf8.h"

#include <simdjson.h>

#include <algorithm>
#include <cstring>

namespace sidetable {
namespace {

// Word-at-a-time helpers: validation and sizing run on every string of every
// write, and most strings are ASCII.
constexpr uint64_t kHighBits = 0x8080808080808080ull;
// Below this length IsValidUtf8 scans ASCII itself before calling simdjson.
constexpr size_t kShortString = 128;

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

// UTF-16 units of the code points that start in the word `w`: one per lead
// (non-continuation) byte, plus one more per 4-byte lead (a surrogate pair).
// Per byte, bit 7 of
//   w & ~(w << 1)                      marks continuation bytes 10xxxxxx;
//   w & (w << 1) & (w << 2) & (w << 3) marks 4-byte leads 1111xxxx.
// Shifts move bits within a byte into bit 7 only from the same byte.
size_t WordUnits(uint64_t w) {
  const uint64_t cont = w & ~(w << 1) & kHighBits;
  const uint64_t four = w & (w << 1) & (w << 2) & (w << 3) & kHighBits;
  return 8 - CountHighBits(cont) + CountHighBits(four);
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  // simdjson validates (overlongs, surrogates and code points above
  // U+10FFFF are rejected). Most strings checked here are keys and property
  // names, short and ASCII: below 128 bytes, eight bytes at a time is cheaper
  // than entering simdjson (a call through its CPU dispatch that copies the
  // partial last 64-byte block). codec_bench measured both (docs/performance.md,
  // issue 11). Everything before the first byte >= 0x80 is ASCII, so a
  // sequence starts there and simdjson takes the rest.
  const char* p = s.data();
  const size_t n = s.size();
  size_t i = 0;
  if (n < kShortString) {
    while (i + 8 <= n && (Load8(p + i) & kHighBits) == 0) i += 8;
    while (i < n && static_cast<uint8_t>(p[i]) < 0x80) i++;
    if (i == n) return true;
  }
  return simdjson::validate_utf8(p + i, n - i);
}

std::string_view Utf8Prefix(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return s;
  size_t n = max_bytes;
  // Back off the continuation bytes (10xxxxxx) of a code point cut in two.
  while (n > 0 && (static_cast<uint8_t>(s[n]) & 0xC0) == 0x80) n--;
  return s.substr(0, n);
}

bool IsAscii(std::string_view s) {
  const char* p = s.data();
  const size_t n = s.size();
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    if (((Load8(p + i) | Load8(p + i + 8) | Load8(p + i + 16) | Load8(p + i + 24)) & kHighBits) !=
        0) {
      return false;
    }
  }
  uint64_t bits = 0;
  for (; i + 8 <= n; i += 8) bits |= Load8(p + i);
  if (n >= 8) {
    bits |= Load8(p + n - 8);  // the tail, in one word that overlaps what was read
  } else {
    for (; i < n; i++) bits |= static_cast<uint8_t>(p[i]);
  }
  return (bits & kHighBits) == 0;
}

size_t Utf16Length(std::string_view s) {
  // A code point is one unit per lead (non-continuation) byte, plus one more
  // for 4-byte sequences (a surrogate pair): WordUnits, a word at a time.
  size_t units = 0;
  size_t i = 0;
  const char* p = s.data();
  // 32 bytes at a time while they are ASCII (one unit each): most property
  // values are, and this test costs a fifth of sizing the four words
  // (callgrind, docs/performance.md).
  for (; i + 32 <= s.size(); i += 32) {
    const uint64_t a = Load8(p + i), b = Load8(p + i + 8), c = Load8(p + i + 16), d = Load8(p + i + 24);
    if (((a | b | c | d) & kHighBits) == 0) {
      units += 32;
    } else {
      units += WordUnits(a) + WordUnits(b) + WordUnits(c) + WordUnits(d);
    }
  }
  for (; i + 8 <= s.size(); i += 8) units += WordUnits(Load8(p + i));
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

std::string ToValidUtf8(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes && IsValidUtf8(s)) return std::string(s);
  constexpr std::string_view kEllipsis = "...";
  std::string out;
  out.reserve(std::min(s.size(), max_bytes));
  size_t i = 0;
  while (i < s.size()) {
    const auto lead = static_cast<uint8_t>(s[i]);
    const size_t n = lead < 0x80 ? 1 : lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3
                     : lead >= 0xF0 && lead <= 0xF4 ? 4 : 0;
    std::string_view piece = "\xEF\xBF\xBD";  // U+FFFD
    size_t advance = 1;
    if (n > 0 && i + n <= s.size() && IsValidUtf8(s.substr(i, n))) {
      piece = s.substr(i, n);
      advance = n;
    }
    if (out.size() + piece.size() > max_bytes - std::min(max_bytes, kEllipsis.size())) {
      out += kEllipsis;
      return out;
    }
    out += piece;
    i += advance;
  }
  return out;
}

}  // namespace sidetable
