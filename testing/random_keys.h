// Random valid keys over the whole Unicode range, and a UTF-16 conversion
// used as the independent oracle of Azure's ordinal order.
#pragma once

#include <random>
#include <string>

#include "engine/utf8.h"

namespace sidetable::testing {

inline std::u16string ToUtf16(const std::string& utf8) {
  std::u16string out;
  ForEachCodePoint(utf8, [&](uint32_t cp) {
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out.push_back(static_cast<char16_t>(0xD800 + (cp >> 10)));
      out.push_back(static_cast<char16_t>(0xDC00 + (cp & 0x3FF)));
    } else {
      out.push_back(static_cast<char16_t>(cp));
    }
    return true;
  });
  return out;
}

// Keys allowed by Azure: no / \ # ?, no control characters.
class RandomKeys {
 public:
  explicit RandomKeys(uint64_t seed) : rng_(seed) {}

  uint32_t CodePoint() {
    for (;;) {
      uint32_t cp;
      switch (rng_() % 6) {
        case 0: case 1: cp = 0x20 + rng_() % 0x5F; break;   // ASCII
        case 2: cp = 0xA0 + rng_() % 0x700; break;          // Latin, Greek, ...
        case 3: cp = 0xE000 + rng_() % 0x2000; break;       // above the surrogates
        case 4: cp = 0x10000 + rng_() % 0x100000; break;    // supplementary planes
        default: cp = 0x800 + rng_() % 0xD000; break;       // rest of the BMP
      }
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      if (cp == '/' || cp == '\\' || cp == '#' || cp == '?' || cp == 0x7F) continue;
      return cp;
    }
  }

  std::string Next(size_t max_len = 8) {
    std::string s;
    size_t n = rng_() % (max_len + 1);
    for (size_t i = 0; i < n; i++) AppendUtf8(&s, CodePoint());
    return s;
  }

  std::string FromSmallSet() {
    static const char* kSet[] = {"", "a", "ab", "\xEF\xBC\x81", "\xF0\x9F\x98\x80", "z"};
    return kSet[rng_() % 6];
  }

  std::mt19937_64& rng() { return rng_; }

 private:
  std::mt19937_64 rng_;
};

}  // namespace sidetable::testing
