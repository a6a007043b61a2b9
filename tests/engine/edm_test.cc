#include "engine/edm.h"

#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <random>

#include "engine/utf8.h"

namespace sidetable {
namespace {

TEST(DateTime, ParsesAndFormatsAt100ns) {
  auto t = ParseDateTime("2014-08-22T00:50:32.1234567Z");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(FormatDateTime(*t), "2014-08-22T00:50:32.1234567Z");
  auto u = ParseDateTime("2014-08-22T00:50:32.1234568Z");
  ASSERT_TRUE(u.has_value());
  EXPECT_EQ(*u - *t, 1);
}

TEST(DateTime, KnownEpochs) {
  EXPECT_EQ(ParseDateTime("1970-01-01T00:00:00Z"), kUnixEpochTicks);
  EXPECT_EQ(ParseDateTime("1601-01-01T00:00:00Z"), kMinDateTimeTicks);
  EXPECT_EQ(ParseDateTime("9999-12-31T23:59:59.9999999Z"), kMaxDateTimeTicks);
  EXPECT_EQ(ParseDateTime("0001-01-01T00:00:00Z"), 0);
  EXPECT_EQ(ParseDateTime("2000-02-29T00:00:00+00:00"), ParseDateTime("2000-02-29T00:00:00Z"));
}

TEST(DateTime, FormatsFixedWidthAtTheEdges) {
  EXPECT_EQ(FormatDateTime(0), "0001-01-01T00:00:00.0000000Z");
  EXPECT_EQ(FormatDateTime(kMinDateTimeTicks), "1601-01-01T00:00:00.0000000Z");
  EXPECT_EQ(FormatDateTime(kMaxDateTimeTicks), "9999-12-31T23:59:59.9999999Z");
  EXPECT_EQ(FormatDateTime(kUnixEpochTicks + 1), "1970-01-01T00:00:00.0000001Z");
  EXPECT_EQ(FormatDateTime(-5), "0001-01-01T00:00:00.0000000Z");  // clamped
  // Past Azure's range the year has five digits (no fixed width).
  EXPECT_EQ(FormatDateTime(kMaxDateTimeTicks + 1), "10000-01-01T00:00:00.0000000Z");
}

TEST(DateTime, RejectsMalformed) {
  for (const char* bad : {"", "2014-08-22", "2014-08-22T00:50:32", "2014-13-01T00:00:00Z",
                          "2014-02-30T00:00:00Z", "2013-02-29T00:00:00Z", "2014-08-22T24:00:00Z",
                          "2014-08-22T00:50:32.Z", "2014-08-22T00:50:32.12345678Z",
                          "2014-08-22T00:50:32+01:00", "x014-08-22T00:50:32Z"}) {
    EXPECT_FALSE(ParseDateTime(bad).has_value()) << bad;
  }
}

TEST(DateTime, RoundTripsRandomTicks) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int64_t> dist(kMinDateTimeTicks, kMaxDateTimeTicks);
  for (int i = 0; i < 10000; i++) {
    int64_t t = dist(rng);
    auto back = ParseDateTime(FormatDateTime(t));
    ASSERT_TRUE(back.has_value());
    ASSERT_EQ(*back, t);
  }
}

TEST(Guid, RoundTrips) {
  auto g = ParseGuid("C9DA6455-213D-42C9-9A79-3E9149A57833");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(FormatGuid(*g), "c9da6455-213d-42c9-9a79-3e9149a57833");
  EXPECT_FALSE(ParseGuid("c9da6455213d42c99a793e9149a57833").has_value());
  EXPECT_FALSE(ParseGuid("c9da6455-213d-42c9-9a79-3e9149a5783g").has_value());
}

// Every character of the 8-4-4-4-12 layout is checked: a non-hex character
// at each digit position, anything but '-' at each dash, and each length
// but 36 fail; every byte value round-trips in both cases of hex.
TEST(Guid, EveryPositionIsChecked) {
  const std::string good = "00112233-4455-6677-8899-aabbccddeeff";
  ASSERT_TRUE(ParseGuid(good).has_value());
  for (size_t i = 0; i < good.size(); i++) {
    const bool dash = i == 8 || i == 13 || i == 18 || i == 23;
    for (char c : dash ? std::string("0a-_ ") : std::string("-gG/:@`{ \xff")) {
      std::string bad = good;
      bad[i] = c;
      if (dash && c == '-') {
        EXPECT_TRUE(ParseGuid(bad).has_value()) << bad;
      } else {
        EXPECT_FALSE(ParseGuid(bad).has_value()) << "position " << i << ": " << bad;
      }
    }
  }
  EXPECT_FALSE(ParseGuid(good.substr(0, 35)).has_value());
  EXPECT_FALSE(ParseGuid(good + "0").has_value());
  EXPECT_FALSE(ParseGuid("").has_value());
  for (int b = 0; b < 256; b++) {
    char hex[3];
    std::snprintf(hex, sizeof hex, "%02X", b);
    std::string text = good;
    text[0] = hex[0];
    text[1] = hex[1];
    auto g = ParseGuid(text);
    ASSERT_TRUE(g.has_value()) << text;
    EXPECT_EQ((*g)[0], b) << text;
    const std::string lower = {static_cast<char>(std::tolower(hex[0])),
                               static_cast<char>(std::tolower(hex[1]))};
    EXPECT_EQ(FormatGuid(*g).substr(0, 2), lower);
  }
}

TEST(EdmType, NamesRoundTrip) {
  for (int t = 1; t <= 8; t++) {
    auto type = static_cast<EdmType>(t);
    EXPECT_EQ(ParseEdmType(EdmTypeName(type)), type);
  }
  EXPECT_EQ(ParseEdmType("Int64"), EdmType::kInt64);
  EXPECT_FALSE(ParseEdmType("Edm.Decimal").has_value());
}

TEST(Entity, SetReplacesAndRemove) {
  Entity e;
  e.Set("a", Value::Int32(1)).Set("b", Value::String("x")).Set("a", Value::Int64(2));
  ASSERT_EQ(e.properties.size(), 2u);
  EXPECT_EQ(*e.Find("a"), Value::Int64(2));
  EXPECT_TRUE(e.Remove("a"));
  EXPECT_FALSE(e.Remove("a"));
  EXPECT_EQ(e.Find("a"), nullptr);
}

TEST(Utf8, Validation) {
  EXPECT_TRUE(IsValidUtf8("plain"));
  EXPECT_TRUE(IsValidUtf8("\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_FALSE(IsValidUtf8("\xC0\xAF"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xED\xA0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xF4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xE2\x82"));          // truncated
  EXPECT_EQ(Utf16Length("a\xC3\xA9\xF0\x9F\x98\x80"), 4u);  // a é + surrogate pair
}

}  // namespace
}  // namespace sidetable

namespace sidetable {
namespace {

// IsAscii at every length to 100 and every position of one high byte (the
// 32-byte blocks, the words after them, the overlapping last word, the bytes
// of a string shorter than a word).
TEST(Utf8, IsAsciiFindsAHighByteAnywhere) {
  for (size_t n = 0; n <= 100; n++) {
    std::string s(n, '\x7F');
    ASSERT_TRUE(IsAscii(s)) << n;
    for (size_t i = 0; i < n; i++) {
      for (char high : {'\x80', '\xFF'}) {
        std::string t = s;
        t[i] = high;
        ASSERT_FALSE(IsAscii(t)) << "length " << n << ", high byte at " << i;
      }
    }
  }
  // A view into a larger string: bytes beyond its end are not its own.
  const std::string wide = std::string(9, 'a') + "\xC3\xA9";
  EXPECT_TRUE(IsAscii(std::string_view(wide).substr(0, 9)));
  EXPECT_TRUE(IsAscii(std::string_view(wide).substr(3, 6)));
}

// The word-at-a-time paths agree with a byte-at-a-time reference on strings
// of every length and alignment, with multi-byte sequences straddling words.
TEST(Utf8, FastPathsAgreeWithReference) {
  std::mt19937 rng(17);
  const char* pieces[] = {"a", "Z", " ", "\xC3\xA9", "\xE2\x82\xAC", "\xEF\xBF\xBF",
                          "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF"};
  for (int i = 0; i < 20000; i++) {
    std::string s;
    // Mixed text, ASCII only, and long ASCII with a rare multi-byte piece
    // (whole ASCII 32-byte blocks beside one that is not).
    const int mode = i % 3;
    size_t n = rng() % (mode == 2 ? 120 : 40);
    for (size_t k = 0; k < n; k++) {
      s += pieces[mode == 0 ? rng() % 8 : mode == 1 ? rng() % 3 : (rng() % 25 == 0 ? 3 + rng() % 5 : rng() % 3)];
    }
    size_t ref = 0;
    for (unsigned char c : s) ref += ((c & 0xC0) != 0x80) + (c >= 0xF0);
    ASSERT_EQ(Utf16Length(s), ref) << s;
    ASSERT_TRUE(IsValidUtf8(s));
    if (!s.empty()) {
      std::string broken = s;
      broken.insert(rng() % broken.size(), "\xFF");
      ASSERT_FALSE(IsValidUtf8(broken));
      std::string truncated = s + "\xF0\x9F\x98";
      ASSERT_FALSE(IsValidUtf8(truncated));
    }
  }
}

}  // namespace
}  // namespace sidetable

namespace sidetable {
namespace {

// Unicode's table of well-formed byte sequences (The Unicode Standard,
// table 3-7), one sequence at a time: the reference IsValidUtf8 must match.
bool ReferenceUtf8(std::string_view s) {
  size_t i = 0;
  auto in = [&](size_t k, int lo, int hi) {
    if (i + k >= s.size()) return false;
    const int b = static_cast<uint8_t>(s[i + k]);
    return b >= lo && b <= hi;
  };
  while (i < s.size()) {
    const int b = static_cast<uint8_t>(s[i]);
    size_t len;
    if (b <= 0x7F) len = 1;
    else if (b >= 0xC2 && b <= 0xDF && in(1, 0x80, 0xBF)) len = 2;
    else if (b == 0xE0 && in(1, 0xA0, 0xBF) && in(2, 0x80, 0xBF)) len = 3;
    else if (((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) && in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF)) len = 3;
    else if (b == 0xED && in(1, 0x80, 0x9F) && in(2, 0x80, 0xBF)) len = 3;
    else if (b == 0xF0 && in(1, 0x90, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF)) len = 4;
    else if (b >= 0xF1 && b <= 0xF3 && in(1, 0x80, 0xBF) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF)) len = 4;
    else if (b == 0xF4 && in(1, 0x80, 0x8F) && in(2, 0x80, 0xBF) && in(3, 0x80, 0xBF)) len = 4;
    else return false;
    i += len;
  }
  return true;
}

// Every 1- and 2-byte string, and 3-byte strings with a lead >= 0xC0 and a
// last byte at each edge of the continuation range, each after ASCII prefixes of several lengths (IsValidUtf8 scans ASCII
// itself and hands the rest to simdjson at the first byte >= 0x80), and
// followed by text or not.
TEST(Utf8, AgreesWithUnicodeTableOnAllShortSequences) {
  const std::string prefixes[] = {"", "a", "abcdefg", "abcdefgh", "abcdefghijklmnopq"};
  const int edges[] = {0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0};
  size_t valid = 0, checked = 0;
  auto check = [&](const std::string& seq) {
    const bool want = ReferenceUtf8(seq);
    for (const auto& prefix : prefixes) {
      ASSERT_EQ(IsValidUtf8(prefix + seq), want) << prefix << "|" << seq;
      ASSERT_EQ(IsValidUtf8(prefix + seq + "xyz"), want) << prefix << "|" << seq << "|xyz";
    }
    valid += want;
    checked++;
  };
  for (int a = 0; a < 256; a++) {
    check(std::string(1, static_cast<char>(a)));
    for (int b = 0; b < 256; b++) {
      check({static_cast<char>(a), static_cast<char>(b)});
      if (a < 0xC0) continue;
      for (int c : edges) check({static_cast<char>(a), static_cast<char>(b), static_cast<char>(c)});
    }
  }
  EXPECT_GT(valid, 20000u);  // both verdicts were exercised
  EXPECT_GT(checked - valid, 100000u);
}

// Four-byte sequences around every boundary, and broken sequences placed at
// every offset of long strings (simdjson works in 64-byte blocks).
TEST(Utf8, AgreesWithUnicodeTableInLongStrings) {
  const int edges[] = {0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0};
  for (int lead = 0xEC; lead <= 0xFF; lead++) {
    for (int b : edges) {
      for (int c : edges) {
        for (int d : edges) {
          const std::string seq = {static_cast<char>(lead), static_cast<char>(b), static_cast<char>(c),
                                   static_cast<char>(d)};
          ASSERT_EQ(IsValidUtf8(seq), ReferenceUtf8(seq)) << std::hex << lead << " " << b << " " << c << " " << d;
        }
      }
    }
  }
  std::string text;
  while (text.size() < 300) text += "Z\xC3\xBCrich \xE4\xBB\xB7 \xF0\x9F\x98\x80 ascii ";
  ASSERT_TRUE(IsValidUtf8(text));
  const std::string breakers[] = {"\xFF", "\x80", "\xED\xA0\x80", "\xC0\xAF", "\xF4\x90\x80\x80", "\xE4\xBB"};
  for (const auto& bad : breakers) {
    for (size_t at = 0; at <= text.size(); at++) {
      std::string s = text;
      s.insert(at, bad);
      ASSERT_EQ(IsValidUtf8(s), ReferenceUtf8(s)) << at;
      ASSERT_FALSE(IsValidUtf8(s)) << at;  // inserting whole sequences never repairs one
    }
  }
}

TEST(ToValidUtf8, KeepsValidTextAndReplacesEachBadByte) {
  EXPECT_EQ(ToValidUtf8("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(ToValidUtf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  // An overlong form and a surrogate: every byte of them is replaced.
  EXPECT_EQ(ToValidUtf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_EQ(ToValidUtf8("\xED\xA0\x80" "x"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD" "x");
  // A truncated sequence at the end.
  EXPECT_EQ(ToValidUtf8("ok\xE2\x82"), "ok\xEF\xBF\xBD\xEF\xBF\xBD");
  for (const std::string& s : {std::string("\xFF\xFE"), std::string(300, '\x80'), std::string("a\0b", 3)}) {
    EXPECT_TRUE(IsValidUtf8(ToValidUtf8(s)));
  }
}

TEST(ToValidUtf8, CutsLongTextAtACharacterBoundary) {
  std::string euros;
  for (int i = 0; i < 100; i++) euros += "\xE2\x82\xAC";
  const std::string cut = ToValidUtf8(euros, 20);
  EXPECT_LE(cut.size(), 20u);
  EXPECT_TRUE(IsValidUtf8(cut));
  EXPECT_EQ(cut.substr(cut.size() - 3), "...");
  EXPECT_EQ(ToValidUtf8(std::string(1 << 20, '\xFF'), 2048).size() <= 2048, true);
  EXPECT_EQ(ToValidUtf8("short", 20), "short");
}

}  // namespace
}  // namespace sidetable
