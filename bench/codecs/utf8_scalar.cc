#include "bench/codecs/utf8_scalar.h"

#include <cstdint>
#include <cstring>

namespace sidetable::bench::codecs {
namespace {

constexpr uint64_t kHighBits = 0x8080808080808080ull;

uint64_t Load8(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

}  // namespace

// Eight ASCII bytes at a time, then one sequence at a time with the checks
// for overlongs, surrogates and code points above U+10FFFF.
bool ScalarIsValidUtf8(std::string_view s) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n) {
    if (i + 8 <= n && (Load8(s.data() + i) & kHighBits) == 0) {
      i += 8;
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

}  // namespace sidetable::bench::codecs
