// Evaluation: Azure's typing rules, one test per rule, on concrete entities.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "engine/query/filter.h"

namespace sidetable::query {
namespace {

// Parses (asserting success) and evaluates.
bool Eval(std::string_view filter, const Entity& e) {
  auto r = ParseFilter(filter);
  EXPECT_TRUE(r.ok()) << filter << ": " << r.status().message();
  if (!r.ok()) return false;
  return Matches(**r, e);
}

Entity Sample() {
  Entity e;
  e.partition_key = "Sales";
  e.row_key = "empid_000223";
  e.timestamp = *ParseDateTime("2014-08-22T00:50:32.1234567Z");
  e.Set("Age", Value::Int32(36));
  e.Set("Big", Value::Int64(int64_t{1} << 62));
  e.Set("Score", Value::Double(2.0));
  e.Set("Active", Value::Boolean(true));
  e.Set("Off", Value::Boolean(false));
  e.Set("Name", Value::String("Ada"));
  e.Set("Born", Value::DateTime(*ParseDateTime("1815-12-10T00:00:00Z")));
  e.Set("Id", Value::MakeGuid(*ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")));
  e.Set("Blob", Value::Binary(std::string("\x0A\x1B", 2)));
  return e;
}

constexpr const char* kOps[] = {"eq", "ne", "gt", "ge", "lt", "le"};

TEST(FilterEval, OtherTypeMatchesNothingForEveryOperator) {
  const Entity e = Sample();
  // Age is Int32 36: each literal below is "36" in another Edm type.
  for (const char* literal : {"36L", "36.0", "'36'", "true", "datetime'2014-08-22T00:50:32Z'",
                              "guid'00000000-0000-0000-0000-000000000024'", "X'24'"}) {
    for (const char* op : kOps) {
      const std::string f = std::string("Age ") + op + " " + literal;
      EXPECT_FALSE(Eval(f, e)) << f;
      EXPECT_TRUE(Eval("not (" + f + ")", e)) << f;
    }
  }
  // And the matching type does match, so the above is about the type.
  EXPECT_TRUE(Eval("Age eq 36", e));
  EXPECT_TRUE(Eval("Age ne 35", e));
}

TEST(FilterEval, MissingPropertyMatchesNothingEvenNe) {
  const Entity e = Sample();
  for (const char* op : kOps) {
    const std::string f = std::string("Missing ") + op + " 1";
    EXPECT_FALSE(Eval(f, e)) << f;
    // `not` negates the boolean result, so it is true on a missing property.
    EXPECT_TRUE(Eval("not (" + f + ")", e)) << f;
  }
  EXPECT_FALSE(Eval("Missing ne 'x'", Entity()));
  // Property names are case-sensitive.
  EXPECT_FALSE(Eval("age eq 36", e));
}

TEST(FilterEval, Int32Ordering) {
  const Entity e = Sample();
  struct { const char* f; bool want; } cases[] = {
      {"Age eq 36", true},  {"Age ne 36", false}, {"Age gt 35", true},  {"Age gt 36", false},
      {"Age ge 36", true},  {"Age ge 37", false}, {"Age lt 37", true},  {"Age lt 36", false},
      {"Age le 36", true},  {"Age le 35", false}, {"Age gt -2147483648", true},
      {"36 eq Age", true},  {"37 gt Age", true},  {"36 lt Age", false},
  };
  for (const auto& c : cases) EXPECT_EQ(Eval(c.f, e), c.want) << c.f;
}

TEST(FilterEval, NoPromotionBetweenInt32Int64AndDouble) {
  Entity e = Sample();
  e.Set("I64", Value::Int64(5));
  e.Set("I32", Value::Int32(5));
  e.Set("D", Value::Double(5.0));
  EXPECT_TRUE(Eval("I64 eq 5L", e));
  EXPECT_FALSE(Eval("I64 eq 5", e));
  EXPECT_FALSE(Eval("I64 eq 5.0", e));
  EXPECT_TRUE(Eval("I32 eq 5", e));
  EXPECT_FALSE(Eval("I32 eq 5L", e));
  EXPECT_FALSE(Eval("I32 eq 5.0", e));
  EXPECT_TRUE(Eval("D eq 5.0", e));
  EXPECT_FALSE(Eval("D eq 5", e));
  EXPECT_FALSE(Eval("D eq 5L", e));
}

TEST(FilterEval, Int64ComparesAsANumber) {
  const Entity e = Sample();  // Big = 2^62
  EXPECT_TRUE(Eval("Big eq 4611686018427387904L", e));
  EXPECT_TRUE(Eval("Big gt 4611686018427387903L", e));
  EXPECT_TRUE(Eval("Big lt 9223372036854775807L", e));
  EXPECT_TRUE(Eval("Big gt -9223372036854775808L", e));
  EXPECT_FALSE(Eval("Big gt 4611686018427387904L", e));
  Entity neg;
  neg.Set("Big", Value::Int64(-10));
  EXPECT_TRUE(Eval("Big lt 9L", neg));  // not compared as text ("-10" > "9")
  EXPECT_TRUE(Eval("Big lt -9L", neg));
}

TEST(FilterEval, DoubleIsIeeeIncludingNaN) {
  Entity e = Sample();
  e.Set("Nan", Value::Double(std::numeric_limits<double>::quiet_NaN()));
  e.Set("Zero", Value::Double(-0.0));
  e.Set("Inf", Value::Double(std::numeric_limits<double>::infinity()));
  EXPECT_FALSE(Eval("Nan eq 1.0", e));
  EXPECT_TRUE(Eval("Nan ne 1.0", e));
  EXPECT_FALSE(Eval("Nan gt 1.0", e));
  EXPECT_FALSE(Eval("Nan ge 1.0", e));
  EXPECT_FALSE(Eval("Nan lt 1.0", e));
  EXPECT_FALSE(Eval("Nan le 1.0", e));
  EXPECT_TRUE(Eval("not (Nan lt 1.0) and not (Nan ge 1.0)", e));
  EXPECT_TRUE(Eval("Zero eq 0.0", e));  // -0 == +0 under IEEE
  EXPECT_FALSE(Eval("Zero lt 0.0", e));
  EXPECT_TRUE(Eval("Inf gt 1.7976931348623157e308", e));
  EXPECT_TRUE(Eval("Score gt 1.9999999999999998 and Score lt 2.0000000000000004", e));
  EXPECT_FALSE(Eval("Score gt 2.0", e));
  // NaN is a property value only: CompareMatches gives the same answer.
  const Value nan = Value::Double(std::nan(""));
  EXPECT_TRUE(CompareMatches(&nan, CompareOp::kNe, Value::Double(std::nan(""))));
  EXPECT_FALSE(CompareMatches(&nan, CompareOp::kEq, Value::Double(std::nan(""))));
}

TEST(FilterEval, StringsCompareOrdinallyByUtf16CodeUnits) {
  Entity e = Sample();
  e.Set("Upper", Value::String("B"));
  EXPECT_TRUE(Eval("Upper lt 'a'", e));  // ordinal: 'B' (0x42) < 'a' (0x61)
  EXPECT_TRUE(Eval("Name gt 'Ad'", e));  // a proper prefix sorts first
  EXPECT_TRUE(Eval("Name lt 'Ada '", e));
  EXPECT_TRUE(Eval("Name eq 'Ada'", e));
  EXPECT_FALSE(Eval("Name eq 'ada'", e));

  // U+1F600 is the surrogate pair D83D DE00 in UTF-16, so it sorts *below*
  // U+E000..U+FFFF, although its UTF-8 (F0 ...) is bytewise above (EE/EF ...).
  e.Set("Emoji", Value::String("\xF0\x9F\x98\x80"));
  EXPECT_TRUE(Eval("Emoji lt '\xEF\xBC\xA1'", e));   // U+FF21
  EXPECT_TRUE(Eval("Emoji lt '\xEE\x80\x80'", e));   // U+E000
  EXPECT_TRUE(Eval("Emoji gt '\xED\x9F\xBF'", e));   // U+D7FF: below the surrogates
  EXPECT_FALSE(Eval("Emoji ge '\xEF\xBF\xBD'", e));  // U+FFFD
  // The keys follow the same order.
  Entity k;
  k.partition_key = "\xEF\xBF\xBF";  // U+FFFF
  EXPECT_TRUE(Eval("PartitionKey gt '\xF4\x8F\xBF\xBF'", k));  // U+10FFFF
}

TEST(FilterEval, SystemProperties) {
  const Entity e = Sample();
  EXPECT_TRUE(Eval("PartitionKey eq 'Sales' and RowKey eq 'empid_000223'", e));
  EXPECT_TRUE(Eval("PartitionKey ge 'S' and PartitionKey lt 'T'", e));
  EXPECT_TRUE(Eval("RowKey gt 'empid_000222'", e));
  EXPECT_FALSE(Eval("RowKey ne 'empid_000223'", e));
  // Keys are strings and Timestamp a DateTime: other literal types match nothing.
  EXPECT_FALSE(Eval("PartitionKey ne 1", e));
  EXPECT_FALSE(Eval("Timestamp ne '2014-08-22T00:50:32.1234567Z'", e));
  // A user property can't shadow a system name.
  Entity shadow = e;
  shadow.Set("PartitionKey", Value::String("Other"));
  EXPECT_FALSE(Eval("PartitionKey eq 'Other'", shadow));
}

TEST(FilterEval, DateTimeHas100NsPrecision) {
  const Entity e = Sample();  // Timestamp ...32.1234567Z, Born 1815-12-10
  EXPECT_TRUE(Eval("Timestamp eq datetime'2014-08-22T00:50:32.1234567Z'", e));
  EXPECT_TRUE(Eval("Timestamp gt datetime'2014-08-22T00:50:32.1234566Z'", e));
  EXPECT_TRUE(Eval("Timestamp lt datetime'2014-08-22T00:50:32.1234568Z'", e));
  EXPECT_FALSE(Eval("Timestamp eq datetime'2014-08-22T00:50:32.123456Z'", e));
  EXPECT_TRUE(Eval("Timestamp ne datetime'2014-08-22T00:50:32Z'", e));
  EXPECT_TRUE(Eval("Born eq datetime'1815-12-10T00:00:00Z'", e));
  EXPECT_TRUE(Eval("Born lt datetime'1815-12-10T00:00:00.0000001Z'", e));
}

TEST(FilterEval, BinaryComparesBytewiseShorterPrefixFirst) {
  Entity e = Sample();  // Blob = 0A 1B
  EXPECT_TRUE(Eval("Blob eq X'0A1B'", e));
  EXPECT_TRUE(Eval("Blob eq binary'0a1b'", e));
  EXPECT_TRUE(Eval("Blob gt X'0A'", e));     // a proper prefix sorts first
  EXPECT_TRUE(Eval("Blob gt X''", e));
  EXPECT_TRUE(Eval("Blob lt X'0A1B00'", e));
  EXPECT_TRUE(Eval("Blob lt X'0A1C'", e));
  EXPECT_TRUE(Eval("Blob lt X'FF'", e));     // bytes are unsigned
  e.Set("High", Value::Binary("\x80"));
  EXPECT_TRUE(Eval("High gt X'7F'", e));
  EXPECT_FALSE(Eval("Blob eq '\x0A\x1B'", e));  // a String literal is another type
}

TEST(FilterEval, GuidEqualityAndByteOrder) {
  const Entity e = Sample();
  EXPECT_TRUE(Eval("Id eq guid'c9da6455-213d-42c9-9a79-3e9149a57833'", e));
  EXPECT_TRUE(Eval("Id eq guid'C9DA6455-213D-42C9-9A79-3E9149A57833'", e));
  EXPECT_TRUE(Eval("Id ne guid'c9da6455-213d-42c9-9a79-3e9149a57834'", e));
  EXPECT_TRUE(Eval("Id lt guid'c9da6455-213d-42c9-9a79-3e9149a57834'", e));
  EXPECT_TRUE(Eval("Id gt guid'0fffffff-ffff-ffff-ffff-ffffffffffff'", e));
  EXPECT_TRUE(Eval("Id lt guid'ca000000-0000-0000-0000-000000000000'", e));
  EXPECT_FALSE(Eval("Id eq 'c9da6455-213d-42c9-9a79-3e9149a57833'", e));
}

TEST(FilterEval, BooleanFalseBeforeTrue) {
  const Entity e = Sample();  // Active true, Off false
  EXPECT_TRUE(Eval("Active eq true", e));
  EXPECT_TRUE(Eval("Active gt false", e));
  EXPECT_FALSE(Eval("Active lt true", e));
  EXPECT_TRUE(Eval("Off lt true", e));
  EXPECT_TRUE(Eval("Off le false", e));
  EXPECT_FALSE(Eval("Off eq 0", e));
}

TEST(FilterEval, BooleanStructure) {
  Entity e;
  e.Set("a", Value::Int32(1));
  e.Set("b", Value::Int32(0));
  e.Set("c", Value::Int32(0));
  // a or (b and c) is true; (a or b) and c would be false.
  EXPECT_TRUE(Eval("a eq 1 or b eq 2 and c eq 3", e));
  EXPECT_FALSE(Eval("(a eq 1 or b eq 2) and c eq 3", e));
  EXPECT_TRUE(Eval("not a eq 2 and b eq 0", e));
  EXPECT_FALSE(Eval("not (a eq 1 or b eq 2)", e));
  EXPECT_TRUE(Eval("not not a eq 1", e));
  EXPECT_TRUE(Eval("a eq 0 or b eq 1 or c eq 0", e));
  EXPECT_FALSE(Eval("a eq 1 and b eq 0 and c eq 1", e));
}

TEST(FilterEval, CompareMatchesHandlesMissingValue) {
  for (CompareOp op : {CompareOp::kEq, CompareOp::kNe, CompareOp::kLt}) {
    EXPECT_FALSE(CompareMatches(nullptr, op, Value::Int32(1)));
  }
  const Value one = Value::Int32(1);
  EXPECT_TRUE(CompareMatches(&one, CompareOp::kLe, Value::Int32(1)));
}

}  // namespace
}  // namespace sidetable::query
