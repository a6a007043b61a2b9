#include "engine/edm.h"

#include <gtest/gtest.h>

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

// The word-at-a-time paths agree with a byte-at-a-time reference on strings
// of every length and alignment, with multi-byte sequences straddling words.
TEST(Utf8, FastPathsAgreeWithReference) {
  std::mt19937 rng(17);
  const char* pieces[] = {"a", "Z", " ", "\xC3\xA9", "\xE2\x82\xAC", "\xEF\xBF\xBF",
                          "\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF"};
  for (int i = 0; i < 20000; i++) {
    std::string s;
    size_t n = rng() % 40;
    for (size_t k = 0; k < n; k++) s += pieces[rng() % (i % 2 ? 3 : 8)];
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
