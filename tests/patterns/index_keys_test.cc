#include "patterns/index_table/index_keys.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "engine/limits.h"

namespace sidetable::patterns {
namespace {

std::vector<std::string> HostileTexts() {
  return {"",
          "plain",
          "a/b",
          "a\\b",
          "#",
          "?q=1",
          "%",
          "%25",
          "%%",
          "%zz",
          "|",
          "a|b",
          "||",
          std::string("nul\0x", 5),
          "\x01\x1f\x7f",
          "tab\tnewline\n",
          "\xC2\x80\xC2\x9F",          // U+0080, U+009F (C1 controls)
          "\xC2\xA0\xC3\xA9",          // U+00A0, é: allowed, kept
          "\xE6\x97\xA5\xE6\x9C\xAC",  // 日本
          "\xF0\x9F\x98\x80",          // emoji (a surrogate pair in UTF-16)
          "\xEF\xBF\xBF",              // U+FFFF
          " leading and trailing ",
          "_",
          "a_b"};
}

TEST(KeyEscapeTest, RoundTripsHostileTextToValidKeys) {
  for (const auto& text : HostileTexts()) {
    std::string escaped = EscapeKeyText(text);
    EXPECT_TRUE(ValidateKey(escaped, "k").ok()) << escaped;
    EXPECT_EQ(escaped.find('|'), std::string::npos) << escaped;
    auto back = UnescapeKeyText(escaped);
    ASSERT_TRUE(back.ok()) << back.status().ToString();
    EXPECT_EQ(*back, text);
  }
}

TEST(KeyEscapeTest, SpellsTheSchemeOut) {
  EXPECT_EQ(EscapeKeyText("a/b\\c#d?e%f|g"), "a%2Fb%5Cc%23d%3Fe%25f%7Cg");
  EXPECT_EQ(EscapeKeyText(std::string("\0\x1f\x7f", 3)), "%00%1F%7F");
  EXPECT_EQ(EscapeKeyText("\xC2\x85"), "%C2%85");
  EXPECT_EQ(EscapeKeyText("caf\xC3\xA9 _-:."), "caf\xC3\xA9 _-:.");
}

TEST(KeyEscapeTest, EscapingIsInjective) {
  std::set<std::string> seen;
  auto texts = HostileTexts();
  for (const auto& t : texts) EXPECT_TRUE(seen.insert(EscapeKeyText(t)).second) << t;
}

TEST(KeyEscapeTest, UnescapeAcceptsOnlyTheCanonicalForm) {
  EXPECT_FALSE(UnescapeKeyText("%").ok());
  EXPECT_FALSE(UnescapeKeyText("%2").ok());
  EXPECT_FALSE(UnescapeKeyText("%2f").ok());  // lower-case hex
  EXPECT_FALSE(UnescapeKeyText("%41").ok());  // "A" needs no escape
  EXPECT_FALSE(UnescapeKeyText("%FF").ok());  // not UTF-8
  EXPECT_FALSE(UnescapeKeyText("a|b").ok());  // '|' must be escaped
  EXPECT_EQ(*UnescapeKeyText("%25"), "%");
}

TEST(SourceRowKeyTest, RoundTripsAndNeverCollides) {
  auto texts = HostileTexts();
  std::set<std::string> row_keys;
  for (const auto& pk : texts) {
    for (const auto& rk : texts) {
      auto row_key = MakeSourceRowKey(pk, rk);
      ASSERT_TRUE(row_key.ok()) << row_key.status().ToString();
      EXPECT_TRUE(ValidateKey(*row_key, "RowKey").ok());
      EXPECT_TRUE(row_keys.insert(*row_key).second) << "collision: " << *row_key;
      auto parsed = ParseSourceRowKey(*row_key);
      ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
      EXPECT_EQ(parsed->partition_key, pk);
      EXPECT_EQ(parsed->row_key, rk);
    }
  }
}

TEST(SourceRowKeyTest, SeparatorInsideKeysDoesNotShiftTheSplit) {
  // Naive joining would give "a|b|c" for both.
  EXPECT_NE(*MakeSourceRowKey("a|b", "c"), *MakeSourceRowKey("a", "b|c"));
  EXPECT_EQ(*MakeSourceRowKey("a|b", "c"), "a%7Cb|c");
  EXPECT_EQ(*MakeSourceRowKey("", ""), "|");
}

TEST(SourceRowKeyTest, RandomKeysRoundTrip) {
  std::mt19937 rng(7);
  const std::vector<std::string> alphabet = {
      "a", "/", "\\", "#", "?", "%", "|", "_", "\x01", "\xC2\x90", "\xC3\xA9", "\xF0\x9F\x98\x80",
      "2", "F"};
  for (int i = 0; i < 2000; i++) {
    std::string pk, rk;
    for (int n = rng() % 8; n > 0; n--) pk += alphabet[rng() % alphabet.size()];
    for (int n = rng() % 8; n > 0; n--) rk += alphabet[rng() % alphabet.size()];
    auto parsed = ParseSourceRowKey(*MakeSourceRowKey(pk, rk));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed->partition_key, pk);
    EXPECT_EQ(parsed->row_key, rk);
  }
}

TEST(SourceRowKeyTest, ParseRejectsWhatMakeCannotProduce) {
  EXPECT_FALSE(ParseSourceRowKey("nosep").ok());
  EXPECT_FALSE(ParseSourceRowKey("a|b|c").ok());
  EXPECT_FALSE(ParseSourceRowKey("a%2|b").ok());
}

TEST(SourceRowKeyTest, TooLongSourceKeysAreRefused) {
  std::string pk(400, 'p');
  std::string rk(100, 'r');
  EXPECT_TRUE(MakeSourceRowKey(pk, rk).ok());  // 501 chars
  std::string rk_big(112, '/');                // 336 chars escaped
  auto r = MakeSourceRowKey(pk, rk_big);
  EXPECT_EQ(r.status().code(), Code::kKeyValueTooLarge);
}

TEST(IndexValueTextTest, CanonicalTextPerType) {
  EXPECT_EQ(IndexValueText(Value::String("Jones")), "Jones");
  EXPECT_EQ(IndexValueText(Value::Int32(-42)), "-42");
  EXPECT_EQ(IndexValueText(Value::Int64(9007199254740993LL)), "9007199254740993");
  EXPECT_EQ(IndexValueText(Value::Double(0.1)), "0.1");
  EXPECT_EQ(IndexValueText(Value::Double(2.5)), "2.5");
  EXPECT_EQ(IndexValueText(Value::Double(1e100)), "1e+100");
  EXPECT_EQ(IndexValueText(Value::Double(-0.0)), "0");
  EXPECT_EQ(IndexValueText(Value::Double(std::nan(""))), "NaN");
  EXPECT_EQ(IndexValueText(Value::Double(-1.0 / 0.0)), "-INF");
  EXPECT_EQ(IndexValueText(Value::Boolean(true)), "true");
  EXPECT_EQ(IndexValueText(Value::DateTime(*ParseDateTime("2014-08-22T00:50:32.123Z"))),
            "2014-08-22T00:50:32.1230000Z");
  EXPECT_EQ(IndexValueText(Value::MakeGuid(*ParseGuid("C9DA6455-213D-42C9-9A79-3E9149A57833"))),
            "c9da6455-213d-42c9-9a79-3e9149a57833");
  EXPECT_EQ(IndexValueText(Value::Binary(std::string("\x00\xff\x10", 3))), "00ff10");
}

TEST(IndexLayoutTest, AppliesPlaceholdersAndEscapesOnlyTheValue) {
  auto plain = IndexLayout::Parse("{value}", "");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(*plain->PartitionKey("Email", Value::String("a/b")), "a%2Fb");
  auto prefixed = IndexLayout::Parse("{prefix}_{value}", "email");
  ASSERT_TRUE(prefixed.ok());
  EXPECT_EQ(*prefixed->PartitionKey("Email", Value::String("j@x.com")), "email_j@x.com");
  auto by_property = IndexLayout::Parse("{property}_{value}", "");
  ASSERT_TRUE(by_property.ok());
  EXPECT_EQ(*by_property->PartitionKey("Age", Value::Int32(7)), "Age_7");
  EXPECT_EQ(*by_property->PartitionKey("Age", Value::String("")), "Age_");
  EXPECT_EQ(IndexLayout().text(), "{value}");
  EXPECT_EQ(*IndexLayout().PartitionKey("X", Value::String("v")), "v");
}

TEST(IndexLayoutTest, RejectsBadLayouts) {
  EXPECT_FALSE(IndexLayout::Parse("", "").ok());
  EXPECT_FALSE(IndexLayout::Parse("{prefix}", "p").ok());
  EXPECT_FALSE(IndexLayout::Parse("{value}{value}", "").ok());
  EXPECT_FALSE(IndexLayout::Parse("{value", "").ok());
  EXPECT_FALSE(IndexLayout::Parse("{valu}", "").ok());
  EXPECT_FALSE(IndexLayout::Parse("a/{value}", "").ok());
  EXPECT_FALSE(IndexLayout::Parse("50%_{value}", "").ok());
  EXPECT_FALSE(IndexLayout::Parse("{prefix}_{value}", "").ok());
  EXPECT_FALSE(IndexLayout::Parse("{value}", "p").ok());
  EXPECT_FALSE(IndexLayout::Parse("{prefix}{value}", "a#").ok());
  auto s = IndexLayout::Parse("{nope}_{value}", "");
  EXPECT_NE(s.status().message().find("{nope}"), std::string::npos);
}

TEST(IndexLayoutTest, TooLongValuesAreNotIndexed) {
  IndexLayout layout;
  EXPECT_TRUE(layout.PartitionKey("P", Value::String(std::string(512, 'x'))).has_value());
  EXPECT_FALSE(layout.PartitionKey("P", Value::String(std::string(513, 'x'))).has_value());
  // Escaping triples a character: 171 '/' are 513 UTF-16 units.
  EXPECT_TRUE(layout.PartitionKey("P", Value::String(std::string(170, '/'))).has_value());
  EXPECT_FALSE(layout.PartitionKey("P", Value::String(std::string(171, '/'))).has_value());
  EXPECT_FALSE(layout.PartitionKey("P", Value::Binary(std::string(300, 'b'))).has_value());
}

}  // namespace
}  // namespace sidetable::patterns
