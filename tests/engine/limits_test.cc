#include "engine/limits.h"

#include <gtest/gtest.h>

#include "engine/utf8.h"

namespace sidetable {
namespace {

TEST(ValidateCaller, AcceptsUpToOneKibOfPrintableUtf8) {
  EXPECT_TRUE(ValidateCaller("").ok());
  EXPECT_TRUE(ValidateCaller("hr-app \xC3\xA9").ok());
  EXPECT_TRUE(ValidateCaller(std::string(Limits::kMaxCallerBytes, 'c')).ok());
}

TEST(ValidateCaller, RejectsLongInvalidOrControlCallers) {
  EXPECT_EQ(ValidateCaller(std::string(Limits::kMaxCallerBytes + 1, 'c')).code(), Code::kInvalidInput);
  for (std::string bad : std::vector<std::string>{"a\xFF", "\xC0\xAF", "\xED\xA0\x80", "tab\t", std::string("nul\0", 4),
                                                   "del\x7F", "c1\xC2\x85"}) {
    EXPECT_EQ(ValidateCaller(bad).code(), Code::kInvalidInput) << bad;
  }
}

TEST(ValidateKey, AcceptsOrdinaryAndUnicodeKeys) {
  EXPECT_TRUE(ValidateKey("", "RowKey").ok());
  EXPECT_TRUE(ValidateKey("Sales_000223", "RowKey").ok());
  EXPECT_TRUE(ValidateKey("\xC3\xA9t\xC3\xA9 \xF0\x9F\x98\x80", "RowKey").ok());
}

TEST(ValidateKey, RejectsForbiddenCharacters) {
  for (std::string bad : std::vector<std::string>{"a/b", "a\\b", "a#b", "a?b", std::string("a\0b", 3), "a\tb", "a\x7F",
                          "a\xC2\x80", "a\xC2\x9F"}) {
    EXPECT_EQ(ValidateKey(bad, "RowKey").code(), Code::kOutOfRangeInput) << bad;
  }
  EXPECT_TRUE(ValidateKey("a\xC2\xA0", "RowKey").ok());  // U+00A0 is allowed
}

TEST(ValidateKey, SizeIsCountedInUtf16) {
  EXPECT_TRUE(ValidateKey(std::string(512, 'k'), "PartitionKey").ok());
  EXPECT_EQ(ValidateKey(std::string(513, 'k'), "PartitionKey").code(), Code::kKeyValueTooLarge);
  // 256 supplementary characters = 512 UTF-16 units = 1 KiB.
  std::string emoji;
  for (int i = 0; i < 256; i++) emoji += "\xF0\x9F\x98\x80";
  EXPECT_TRUE(ValidateKey(emoji, "RowKey").ok());
  EXPECT_EQ(ValidateKey(emoji + "a", "RowKey").code(), Code::kKeyValueTooLarge);
}

TEST(ValidateKey, RejectsInvalidUtf8) {
  EXPECT_EQ(ValidateKey("\xFF", "RowKey").code(), Code::kInvalidInput);
}

TEST(ValidatePropertyName, Rules) {
  EXPECT_TRUE(ValidatePropertyName("Age").ok());
  EXPECT_TRUE(ValidatePropertyName("_x1").ok());
  EXPECT_TRUE(ValidatePropertyName("\xC3\xA9l\xC3\xA8ve").ok());
  for (const char* bad : {"", "1abc", "a-b", "a b", "a.b"}) {
    EXPECT_EQ(ValidatePropertyName(bad).code(), Code::kPropertyNameInvalid) << bad;
  }
  for (const char* reserved : {"PartitionKey", "RowKey", "Timestamp", "odata.etag"}) {
    EXPECT_EQ(ValidatePropertyName(reserved).code(), Code::kPropertyNameInvalid) << reserved;
  }
  EXPECT_TRUE(ValidatePropertyName(std::string(255, 'a')).ok());
  EXPECT_EQ(ValidatePropertyName(std::string(256, 'a')).code(), Code::kPropertyNameTooLong);
}

// ASCII keys and names take a table-driven path, others decode code points:
// every ASCII byte, first or later, gets the same answer from both (the
// other path is forced with a non-ASCII letter, allowed in keys and names).
TEST(ValidateKey, AsciiPathAgreesWithTheUnicodePath) {
  const std::string e_acute = "\xC3\xA9";
  for (int c = 0; c < 128; c++) {
    const std::string ch(1, static_cast<char>(c));
    for (const std::string& key : {ch, "k" + ch, "key-" + ch + "-tail"}) {
      const Status ascii = ValidateKey(key, "RowKey");
      const Status unicode = ValidateKey(key + e_acute, "RowKey");
      ASSERT_EQ(ascii.code(), unicode.code()) << "byte " << c << " in '" << key << "'";
      ASSERT_EQ(ascii.message(), unicode.message()) << "byte " << c;
    }
  }
  // The size limit on both paths: 512 units, the 513th refused.
  EXPECT_TRUE(ValidateKey(std::string(511, 'k') + e_acute, "RowKey").ok());
  EXPECT_EQ(ValidateKey(std::string(512, 'k') + e_acute, "RowKey").code(), Code::kKeyValueTooLarge);
}

TEST(ValidatePropertyName, AsciiPathAgreesWithTheUnicodePath) {
  const std::string e_acute = "\xC3\xA9";
  for (int c = 0; c < 128; c++) {
    const std::string ch(1, static_cast<char>(c));
    for (const std::string& name : {ch, "n" + ch, "name" + ch + "x"}) {
      const Status ascii = ValidatePropertyName(name);
      const Status unicode = ValidatePropertyName(name + e_acute);
      ASSERT_EQ(ascii.code(), unicode.code()) << "byte " << c << " in '" << name << "'";
    }
  }
  EXPECT_TRUE(ValidatePropertyName(std::string(254, 'a') + e_acute).ok());
  EXPECT_EQ(ValidatePropertyName(std::string(255, 'a') + e_acute).code(),
            Code::kPropertyNameTooLong);
  // Reserved names are ASCII: the reserved check runs on that path.
  EXPECT_EQ(ValidatePropertyName("Timestamp").code(), Code::kPropertyNameInvalid);
  EXPECT_TRUE(ValidatePropertyName("Timestamps").ok());
}

// Azure's system properties are PartitionKey, RowKey and Timestamp; an
// entity's ETag is metadata, so "ETag" is an ordinary name, in any case.
TEST(ValidatePropertyName, OnlyTheSystemPropertiesAreReserved) {
  for (const char* name : {"PartitionKey", "RowKey", "Timestamp"}) {
    const Status s = ValidatePropertyName(name);
    EXPECT_EQ(s.code(), Code::kPropertyNameInvalid) << name;
    EXPECT_NE(s.message().find("reserved"), std::string::npos) << s.message();
  }
  for (const char* name : {"ETag", "etag", "Etag", "PartitionKeys", "rowkey", "timestamp"}) {
    EXPECT_TRUE(ValidatePropertyName(name).ok()) << name;
  }
}

// Non-ASCII names: letters of any script (and, after the first character,
// combining marks) are identifier characters; controls, spaces, invisible
// format characters, punctuation, symbols, emoji and private use are not.
TEST(ValidatePropertyName, NonAsciiLettersPassAndOtherCharactersAreRefused) {
  for (const char* name : {"\u00e9t\u00e9", "\u00aaB", "\u00b5s", "\u4e2d\u6587", "\u03a9mega",
                           "\u0416", "\u05d0\u05d1", "\u0905\u093f", "a\u0301", "\U00010400x",
                           "\u3005x", "\uff21\uff3f\uff22", "x\ufe33y", "\u00c0\u00ff"}) {
    EXPECT_TRUE(ValidatePropertyName(name).ok()) << name;
  }
  for (const char* name :
       {"\u0085",   "a\u009fb", "\u00a0",  "x\u00a0",    "\u00d7",      "a\u00f7",    "\u00bf",
        "\u00ab",   "\u2028",   "a\u2029", "a\u200bb",   "\u200d",      "a\u202e",    "\ufeff",
        "a\ufeffb", "\u3000",   "a\u3001", "\U0001F600", "a\U0001F600", "a\u2192",    "\u2603",
        "a\u2500",  "\ue000",   "a\uf8ff", "\U000F0000", "a\ufffd",     "a\ufdd0",    "a\U0001FFFE",
        "\uff01",   "a\uff1f",  "\u0301a", "\ufe0fa",    "\u2e2e",      "a\U000E0041"}) {
    const Status s = ValidatePropertyName(name);
    EXPECT_EQ(s.code(), Code::kPropertyNameInvalid) << name;
    EXPECT_NE(s.message().find("not a valid identifier"), std::string::npos) << s.message();
  }
}

// A name too long is quoted cut at a character boundary: the message stays
// valid UTF-8 whatever the name.
TEST(ValidatePropertyName, TooLongNameIsQuotedWholeCharacters) {
  const std::string cjk = "\u4e2d";  // 3 bytes; 32 is not a multiple of 3
  std::string name;
  for (int i = 0; i < 256; i++) name += cjk;
  const Status s = ValidatePropertyName(name);
  ASSERT_EQ(s.code(), Code::kPropertyNameTooLong);
  EXPECT_TRUE(IsValidUtf8(s.message())) << s.message();
  EXPECT_NE(s.message().find(cjk + cjk + "..."), std::string::npos) << s.message();
  EXPECT_EQ(Utf8Prefix(name, 32).size(), 30u);
  EXPECT_EQ(Utf8Prefix("abc", 32), "abc");
  EXPECT_EQ(Utf8Prefix("\xF0\x9F\x98\x80", 3), "");
}

// ValidateEntity's size, summed from what the validators measured, is
// EntitySize's, for ASCII and non-ASCII keys, names and values.
TEST(ValidateEntity, SizeMatchesEntitySize) {
  const std::string e_acute = "\xC3\xA9", emoji = "\xF0\x9F\x98\x80";
  for (int i = 0; i < 16; i++) {
    auto pick = [&](int bit, const std::string& ascii) {
      return (i >> bit & 1) ? ascii + emoji + e_acute : ascii;
    };
    Entity e;
    e.partition_key = pick(0, "pk");
    e.row_key = pick(1, "rk");
    // A name's non-ASCII characters must be letters: a supplementary-plane
    // one (U+10400, two UTF-16 units) and é.
    e.Set((i >> 2 & 1) ? "Name\U00010400" + e_acute : std::string("Name"),
          Value::String(pick(3, std::string(100, 'v'))));
    e.Set("Count", Value::Int32(i));
    size_t size = 0;
    ASSERT_TRUE(ValidateEntity(e, &size).ok()) << i;
    EXPECT_EQ(size, EntitySize(e)) << i;
  }
}

TEST(ValidateValue, StringAndBinaryAt64KiB) {
  EXPECT_TRUE(ValidateValue("s", Value::String(std::string(32768, 'x'))).ok());
  EXPECT_EQ(ValidateValue("s", Value::String(std::string(32769, 'x'))).code(),
            Code::kPropertyValueTooLarge);
  EXPECT_TRUE(ValidateValue("b", Value::Binary(std::string(65536, 'x'))).ok());
  EXPECT_EQ(ValidateValue("b", Value::Binary(std::string(65537, 'x'))).code(),
            Code::kPropertyValueTooLarge);
  EXPECT_EQ(ValidateValue("s", Value::String("\xC0\xAF")).code(), Code::kInvalidInput);
}

TEST(ValidateValue, DateTimeRange) {
  EXPECT_TRUE(ValidateValue("d", Value::DateTime(kMinDateTimeTicks)).ok());
  EXPECT_TRUE(ValidateValue("d", Value::DateTime(kMaxDateTimeTicks)).ok());
  EXPECT_EQ(ValidateValue("d", Value::DateTime(kMinDateTimeTicks - 1)).code(),
            Code::kOutOfRangeInput);
  EXPECT_EQ(ValidateValue("d", Value::DateTime(kMaxDateTimeTicks + 1)).code(),
            Code::kOutOfRangeInput);
}

TEST(ValidateEntity, PropertyCountAndDuplicates) {
  Entity e;
  for (int i = 0; i < 252; i++) e.properties.push_back({"p" + std::to_string(i), Value::Int32(i)});
  EXPECT_TRUE(ValidateEntity(e).ok());
  e.properties.push_back({"p252", Value::Int32(0)});
  EXPECT_EQ(ValidateEntity(e).code(), Code::kTooManyProperties);
  Entity d;
  d.properties = {{"a", Value::Int32(1)}, {"a", Value::Int32(2)}};
  EXPECT_EQ(ValidateEntity(d).code(), Code::kInvalidInput);
}

TEST(ValidateEntity, OneMiBTotal) {
  Entity e;
  // Strings of 32,000 UTF-16 units are 64,000 bytes each: 16 fit in 1 MiB, 17 do not.
  for (int i = 0; i < 15; i++) e.Set("s" + std::to_string(i), Value::String(std::string(32000, 'x')));
  EXPECT_TRUE(ValidateEntity(e).ok()) << EntitySize(e);
  e.Set("s15", Value::String(std::string(32000, 'x')));
  EXPECT_TRUE(ValidateEntity(e).ok()) << EntitySize(e);  // 1,024,000 + overhead
  e.Set("s16", Value::String(std::string(32000, 'x')));
  EXPECT_GT(EntitySize(e), Limits::kMaxEntityBytes);
  EXPECT_EQ(ValidateEntity(e).code(), Code::kEntityTooLarge);
}

TEST(ValidateTableName, Rules) {
  for (const std::string& good : std::vector<std::string>{"abc", "Customers", "a12", std::string(63, 'a')}) {
    EXPECT_TRUE(ValidateTableName(good).ok()) << good;
  }
  for (std::string bad : {std::string("ab"), std::string(64, 'a'), std::string("")}) {
    EXPECT_EQ(ValidateTableName(bad).code(), Code::kOutOfRangeInput) << bad;
  }
  for (std::string bad : {std::string("1abc"), std::string("ab-c"), std::string("ab_c"), std::string("tables"),
                          std::string("Tables"), std::string("ab\xC3\xA9" "c")}) {
    EXPECT_EQ(ValidateTableName(bad).code(), Code::kInvalidResourceName) << bad;
  }
}

}  // namespace
}  // namespace sidetable
