// JSON <-> Entity: exact round trips for every Edm type, the inference
// rules, and an error naming the property for every kind of bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "events/base64.h"
#include "events/entity_json.h"
#include "events/json_writer.h"
#include "tools/cli/table_printer.h"

namespace sidetable::cli {

using namespace ::sidetable::json;  // the JSON entity format (events/)
namespace {

Entity MustParse(std::string_view json) {
  auto e = ParseEntityJson(json);
  EXPECT_TRUE(e.ok()) << json << " -> " << e.status().ToString();
  return e.ok() ? *e : Entity{};
}

// The error message for `json`, which must be rejected as InvalidInput.
std::string ErrorOf(std::string_view json) {
  auto e = ParseEntityJson(json);
  EXPECT_FALSE(e.ok()) << json;
  if (e.ok()) return "";
  EXPECT_EQ(e.status().code(), Code::kInvalidInput);
  return e.status().message();
}

const Value& Prop(const Entity& e, std::string_view name) {
  static const Value kMissing = Value::String("<missing>");
  const Value* v = e.Find(name);
  EXPECT_NE(v, nullptr) << name;
  return v ? *v : kMissing;
}

// Parse -> write -> parse gives the same entity, and writing is a fixed point.
void ExpectRoundTrip(const Entity& e) {
  const std::string json = EntityToJson(e);
  Entity back = MustParse(json);
  EXPECT_EQ(back.partition_key, e.partition_key) << json;
  EXPECT_EQ(back.row_key, e.row_key) << json;
  EXPECT_EQ(back.properties, e.properties) << json;
  EXPECT_EQ(EntityToJson(back), json);
}

TEST(EntityJsonTest, EveryTypeRoundTripsExactly) {
  Entity e;
  e.partition_key = "Sales";
  e.row_key = "1";
  e.Set("Name", Value::String("Ana"))
      .Set("Age", Value::Int32(34))
      .Set("Salary", Value::Int64(5'400'000'000))
      .Set("Hired", Value::DateTime(*ParseDateTime("2019-05-20T09:00:00.1234567Z")))
      .Set("Id", Value::MakeGuid(*ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")))
      .Set("Raw", Value::Binary(std::string("\0\x01", 2)))
      .Set("Score", Value::Double(1.5))
      .Set("Active", Value::Boolean(true));
  const std::string json = EntityToJson(e);
  EXPECT_EQ(json,
            R"({"PartitionKey":"Sales","RowKey":"1","Name":"Ana","Age":34,)"
            R"("Salary":"5400000000","Salary@odata.type":"Edm.Int64",)"
            R"("Hired":"2019-05-20T09:00:00.1234567Z","Hired@odata.type":"Edm.DateTime",)"
            R"("Id":"c9da6455-213d-42c9-9a79-3e9149a57833","Id@odata.type":"Edm.Guid",)"
            R"("Raw":"AAE=","Raw@odata.type":"Edm.Binary","Score":1.5,"Active":true})");
  ExpectRoundTrip(e);
}

TEST(EntityJsonTest, ExtremesRoundTrip) {
  Entity e;
  e.partition_key = "";
  e.row_key = "";
  e.Set("I64Min", Value::Int64(std::numeric_limits<int64_t>::min()))
      .Set("I64Max", Value::Int64(std::numeric_limits<int64_t>::max()))
      .Set("I64Small", Value::Int64(1))  // fits Int32, stays Int64 by its annotation
      .Set("I32Min", Value::Int32(std::numeric_limits<int32_t>::min()))
      .Set("I32Max", Value::Int32(std::numeric_limits<int32_t>::max()))
      .Set("DtMin", Value::DateTime(kMinDateTimeTicks))
      .Set("DtMax", Value::DateTime(kMaxDateTimeTicks))
      .Set("Dt100ns", Value::DateTime(kUnixEpochTicks + 1))
      .Set("Nan", Value::Double(std::numeric_limits<double>::quiet_NaN()))
      .Set("Inf", Value::Double(std::numeric_limits<double>::infinity()))
      .Set("NegInf", Value::Double(-std::numeric_limits<double>::infinity()))
      .Set("NegZero", Value::Double(-0.0))
      .Set("Integral", Value::Double(2.0))  // must not come back as Int32
      .Set("Tiny", Value::Double(5e-324))
      .Set("Huge", Value::Double(std::numeric_limits<double>::max()))
      .Set("Tenth", Value::Double(0.1))
      .Set("EmptyBin", Value::Binary(""))
      .Set("Bin1", Value::Binary("\xff"))
      .Set("Bin2", Value::Binary("\xff\xfe"))
      .Set("AllBytes", Value::Binary([] {
             std::string s;
             for (int i = 0; i < 256; i++) s += static_cast<char>(i);
             return s;
           }()))
      .Set("EmptyStr", Value::String(""))
      .Set("GuidZero", Value::MakeGuid(Guid{}))
      .Set("False", Value::Boolean(false));
  ExpectRoundTrip(e);
  const std::string json = EntityToJson(e);
  EXPECT_NE(json.find(R"("I64Min":"-9223372036854775808","I64Min@odata.type":"Edm.Int64")"), std::string::npos);
  EXPECT_NE(json.find(R"("I64Max":"9223372036854775807")"), std::string::npos);
  EXPECT_NE(json.find(R"("Dt100ns":"1970-01-01T00:00:00.0000001Z")"), std::string::npos);
  EXPECT_NE(json.find(R"("Nan":"NaN","Nan@odata.type":"Edm.Double")"), std::string::npos);
  EXPECT_NE(json.find(R"("NegInf":"-Infinity","NegInf@odata.type":"Edm.Double")"), std::string::npos);
  EXPECT_NE(json.find(R"("Integral":2.0,)"), std::string::npos);
  EXPECT_NE(json.find(R"("EmptyBin":"","EmptyBin@odata.type":"Edm.Binary")"), std::string::npos);
  Entity back = MustParse(json);
  EXPECT_TRUE(std::signbit(Prop(back, "NegZero").as_double()));
  EXPECT_TRUE(std::isnan(Prop(back, "Nan").as_double()));
}

TEST(EntityJsonTest, UnicodeAndEscapesRoundTrip) {
  Entity e = MustParse(
      R"({"PartitionKey":"p\u00e9","RowKey":"\ud83d\ude00","S":"quote \" backslash \\ slash \/ \b\f\n\r\t \u0001 \u007f é 😀 \u4e2d","K\u00e9y":"v"})");
  EXPECT_EQ(e.partition_key, "p\xc3\xa9");
  EXPECT_EQ(e.row_key, "\xf0\x9f\x98\x80");  // a surrogate pair is one code point
  EXPECT_EQ(Prop(e, "S").bytes(),
            "quote \" backslash \\ slash / \b\f\n\r\t \x01 \x7f \xc3\xa9 \xf0\x9f\x98\x80 \xe4\xb8\xad");
  EXPECT_EQ(Prop(e, "K\xc3\xa9y").bytes(), "v");
  ExpectRoundTrip(e);
  const std::string json = EntityToJson(e);
  EXPECT_NE(json.find(R"(\u0001 \u007f)"), std::string::npos) << json;
  EXPECT_NE(json.find("\xf0\x9f\x98\x80"), std::string::npos);  // UTF-8 kept as is
}

TEST(EntityJsonTest, InvalidUnicodeIsBadJson) {
  EXPECT_NE(ErrorOf(R"({"PartitionKey":"p","RowKey":"r","S":"\ud800"})").find("invalid JSON"), std::string::npos);
  EXPECT_NE(ErrorOf("{\"PartitionKey\":\"p\",\"RowKey\":\"r\",\"S\":\"\xff\"}").find("invalid JSON"),
            std::string::npos);
}

TEST(EntityJsonTest, InferenceWithoutAnnotations) {
  Entity e = MustParse(
      R"({"PartitionKey":"p","RowKey":"r","S":"5","B":true,"I":2147483647,"N":-2147483648,)"
      R"("L":2147483648,"M":-2147483649,"D":1.5,"E":1e3,"Z":0.0,"Big":9223372036854775807})");
  EXPECT_EQ(Prop(e, "S"), Value::String("5"));
  EXPECT_EQ(Prop(e, "B"), Value::Boolean(true));
  EXPECT_EQ(Prop(e, "I"), Value::Int32(2147483647));
  EXPECT_EQ(Prop(e, "N"), Value::Int32(-2147483647 - 1));
  EXPECT_EQ(Prop(e, "L"), Value::Int64(2147483648LL));
  EXPECT_EQ(Prop(e, "M"), Value::Int64(-2147483649LL));
  EXPECT_EQ(Prop(e, "D"), Value::Double(1.5));
  EXPECT_EQ(Prop(e, "E"), Value::Double(1000));
  EXPECT_EQ(Prop(e, "Z"), Value::Double(0));
  EXPECT_EQ(Prop(e, "Big"), Value::Int64(std::numeric_limits<int64_t>::max()));
  // Properties keep their order.
  ASSERT_EQ(e.properties.size(), 10u);
  EXPECT_EQ(e.properties[0].name, "S");
  EXPECT_EQ(e.properties[9].name, "Big");
}

TEST(EntityJsonTest, AnnotatedConversions) {
  Entity e = MustParse(
      R"({"PartitionKey":"p","RowKey":"r",)"
      R"("A@odata.type":"Edm.Int64","A":"-9223372036854775808",)"  // annotation before the value
      R"("B":7,"B@odata.type":"Edm.Int64",)"
      R"("C":3,"C@odata.type":"Edm.Double",)"
      R"("D":"Infinity","D@odata.type":"Edm.Double",)"
      R"("F":"2014-08-22T00:50:32Z","F@odata.type":"Edm.DateTime",)"
      R"("G":"C9DA6455-213D-42C9-9A79-3E9149A57833","G@odata.type":"Edm.Guid",)"
      R"("H":"12","H@odata.type":"Edm.String",)"
      R"("I":-5,"I@odata.type":"Edm.Int32",)"
      R"("J":false,"J@odata.type":"Edm.Boolean",)"
      R"("K":"aGk=","K@odata.type":"Binary"})");
  EXPECT_EQ(Prop(e, "A"), Value::Int64(std::numeric_limits<int64_t>::min()));
  EXPECT_EQ(Prop(e, "B"), Value::Int64(7));
  EXPECT_EQ(Prop(e, "C"), Value::Double(3));
  EXPECT_EQ(Prop(e, "D"), Value::Double(std::numeric_limits<double>::infinity()));
  EXPECT_EQ(Prop(e, "F"), Value::DateTime(*ParseDateTime("2014-08-22T00:50:32Z")));
  EXPECT_EQ(FormatGuid(Prop(e, "G").as_guid()), "c9da6455-213d-42c9-9a79-3e9149a57833");
  EXPECT_EQ(Prop(e, "H"), Value::String("12"));
  EXPECT_EQ(Prop(e, "I"), Value::Int32(-5));
  EXPECT_EQ(Prop(e, "J"), Value::Boolean(false));
  EXPECT_EQ(Prop(e, "K"), Value::Binary("hi"));
}

// Double text past the limits of a double: below the smallest denormal it
// rounds to a zero of its sign (as a JSON number does), the largest finite
// double still parses; beyond it is refused (ErrorsNameTheProperty).
TEST(EntityJsonTest, DoubleTextAtTheEdgesOfTheRange) {
  Entity e = MustParse(R"({"PartitionKey":"p","RowKey":"r",)"
                       R"("U":"1e-400","U@odata.type":"Edm.Double",)"
                       R"("N":"-1e-400","N@odata.type":"Edm.Double",)"
                       R"("D":"4e-324","D@odata.type":"Edm.Double",)"
                       R"("M":"1.7976931348623157e308","M@odata.type":"Edm.Double",)"
                       R"("L":"-1.7976931348623157e308","L@odata.type":"Edm.Double"})");
  EXPECT_EQ(Prop(e, "U").as_double(), 0.0);
  EXPECT_FALSE(std::signbit(Prop(e, "U").as_double()));
  EXPECT_EQ(Prop(e, "N").as_double(), 0.0);
  EXPECT_TRUE(std::signbit(Prop(e, "N").as_double())) << "the sign of an underflow is kept";
  EXPECT_EQ(Prop(e, "D").as_double(), std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(Prop(e, "M").as_double(), std::numeric_limits<double>::max());
  EXPECT_EQ(Prop(e, "L").as_double(), -std::numeric_limits<double>::max());
}

TEST(EntityJsonTest, MetadataKeys) {
  Entity e = MustParse(
      R"({"odata.etag":"W/\"7\"","odata.metadata":"x","PartitionKey":"p","RowKey":"r",)"
      R"("Timestamp":"2020-01-01T00:00:00Z","Timestamp@odata.type":"Edm.DateTime","X":1})");
  EXPECT_EQ(e.etag, "W/\"7\"");
  EXPECT_EQ(e.timestamp, 0);  // the server sets it
  ASSERT_EQ(e.properties.size(), 1u);
  EXPECT_EQ(e.properties[0].name, "X");
  e.timestamp = *ParseDateTime("2020-01-01T00:00:00.5Z");
  EXPECT_EQ(EntityToJson(e),
            R"({"odata.etag":"W/\"7\"","PartitionKey":"p","RowKey":"r",)"
            R"("Timestamp":"2020-01-01T00:00:00.5000000Z","X":1})");
}

// Each rejection says what is wrong and names the property.
TEST(EntityJsonTest, ErrorsNameTheProperty) {
  auto expect = [](std::string_view json, std::string_view needle1, std::string_view needle2) {
    const std::string m = ErrorOf(json);
    EXPECT_NE(m.find(needle1), std::string::npos) << m;
    EXPECT_NE(m.find(needle2), std::string::npos) << m;
  };
  const std::string k = R"({"PartitionKey":"p","RowKey":"r",)";
  expect(k + R"("Raw":"AAE","Raw@odata.type":"Edm.Binary"})", "'Raw'", "base64");
  expect(k + R"("Raw":"A=E=","Raw@odata.type":"Edm.Binary"})", "'Raw'", "base64");
  expect(k + R"("Raw":"AAF=","Raw@odata.type":"Edm.Binary"})", "'Raw'", "base64");  // non-zero pad bits
  expect(k + R"("Raw":"AA E","Raw@odata.type":"Edm.Binary"})", "'Raw'", "base64");
  expect(k + R"("X":1,"X@odata.type":"Edm.Decimal"})", "'X'", "unknown type annotation 'Edm.Decimal'");
  expect(k + R"("X":1,"X@odata.type":5})", "'X'", "must be a string");
  expect(k + R"("Ghost@odata.type":"Edm.Int64"})", "'Ghost'", "without a value");
  expect(k + R"("O":{"a":1}})", "'O'", "nested");
  expect(k + R"("A":[1,2]})", "'A'", "nested");
  expect(k + R"("N":null})", "'N'", "null");
  expect(k + R"("X":2147483648,"X@odata.type":"Edm.Int32"})", "'X'", "out of the Edm.Int32 range");
  expect(k + R"("X":-2147483649,"X@odata.type":"Edm.Int32"})", "'X'", "out of the Edm.Int32 range");
  expect(k + R"("X":1.5,"X@odata.type":"Edm.Int32"})", "'X'", "Edm.Int32 expects an integer");
  expect(k + R"("X":"9223372036854775808","X@odata.type":"Edm.Int64"})", "'X'", "not an Edm.Int64");
  expect(k + R"("X":" 1","X@odata.type":"Edm.Int64"})", "'X'", "not an Edm.Int64");
  expect(k + R"("X":"+1","X@odata.type":"Edm.Int64"})", "'X'", "not an Edm.Int64");
  expect(k + R"("X":18446744073709551615})", "'X'", "out of the Edm.Int64 range");
  expect(k + R"("X":"nan","X@odata.type":"Edm.Double"})", "'X'", "not an Edm.Double");
  expect(k + R"("X":true,"X@odata.type":"Edm.Double"})", "'X'", "Edm.Double expects a number");
  // Beyond the largest double: refused, not stored as 0 (found from outside).
  expect(k + R"("X":"1e400","X@odata.type":"Edm.Double"})", "'X'",
         "out of the range of an Edm.Double");
  expect(k + R"("X":"-1e400","X@odata.type":"Edm.Double"})", "'X'",
         "out of the range of an Edm.Double");
  expect(k + R"("X":"1797693134862315800000e288","X@odata.type":"Edm.Double"})", "'X'",
         "out of the range");
  expect(k + R"("X":"2020-01-01T00:00:00.12345678Z","X@odata.type":"Edm.DateTime"})", "'X'", "not an Edm.DateTime");
  expect(k + R"("X":"1600-12-31T23:59:59Z","X@odata.type":"Edm.DateTime"})", "'X'", "outside");
  expect(k + R"("X":"c9da6455","X@odata.type":"Edm.Guid"})", "'X'", "not an Edm.Guid");
  expect(k + R"("X":1,"X@odata.type":"Edm.String"})", "'X'", "Edm.String expects a string");
  expect(k + R"("X":"true","X@odata.type":"Edm.Boolean"})", "'X'", "Edm.Boolean expects");
  expect(k + R"("X":1,"X":2})", "duplicate key", "'X'");
  expect(R"({"PartitionKey":1,"RowKey":"r"})", "'PartitionKey'", "must be a string");
  expect(R"({"PartitionKey":"p","RowKey":"r","RowKey@odata.type":"Edm.Int32"})", "'RowKey'", "Edm.String");
  expect(R"({"RowKey":"r"})", "'PartitionKey'", "missing");
  expect(R"({"PartitionKey":"p"})", "'RowKey'", "missing");
  expect(R"({"PartitionKey":"p","RowKey":"r","odata.etag":3})", "'odata.etag'", "must be a string");
  // An empty ETag would be no condition at all on the wire (protocol.md).
  expect(R"({"PartitionKey":"p","RowKey":"r","odata.etag":""})", "'odata.etag'", "empty ETag");
}

// The duplicate-key check compares a word of each key (its length and five
// of its bytes) before the keys: these keys all share that word and differ
// only in the bytes it leaves out, so only the full comparison tells them
// apart. Each count spans the small array and the hash set past 24 keys:
// distinct keys parse, and any key given twice is refused by name; an
// annotation whose property is missing is found among them too.
TEST(EntityJsonTest, DuplicateKeysAreFoundAmongLookalikes) {
  auto key = [](int i) {  // "ab" c c "M" c c "yz": positions 0, 1, 4, 7, 8 fixed
    std::string k = "abxxMxxyz";
    k[2] = static_cast<char>('a' + i % 26);
    k[3] = static_cast<char>('a' + i / 26 % 26);
    k[5] = static_cast<char>('A' + i % 7);
    k[6] = static_cast<char>('A' + i / 7 % 7);
    return k;
  };
  for (int n : {2, 5, 22, 23, 24, 25, 40}) {
    auto json = [&](int dup_of, int at) {
      std::string j = R"({"PartitionKey":"p","RowKey":"r")";
      for (int i = 0; i < n; i++)
        j += ",\"" + key(i == at ? dup_of : i) + "\":" + std::to_string(i);
      return j + "}";
    };
    auto e = ParseEntityJson(json(-1, -1));
    ASSERT_TRUE(e.ok()) << n << ": " << e.status().ToString();
    EXPECT_EQ(e->properties.size(), static_cast<size_t>(n));
    for (int at = 1; at < n; at++) {
      for (int dup_of : {0, at / 2, at - 1}) {
        const std::string m = ErrorOf(json(dup_of, at));
        EXPECT_NE(m.find("duplicate key '" + key(dup_of) + "'"), std::string::npos)
            << n << " keys, key " << at << " repeats key " << dup_of << ": " << m;
      }
    }
    // An annotation of a lookalike that is not there.
    std::string j = json(-1, -1);
    j.insert(j.size() - 1, ",\"" + key(n) + "@odata.type\":\"Edm.Int64\"");
    EXPECT_NE(ErrorOf(j).find("'" + key(n) + "': type annotation without a value"),
              std::string::npos)
        << n << ": " << ErrorOf(j);
    // And one that is: the annotation applies to its own property only.
    j = json(-1, -1);
    j.insert(j.size() - 1, ",\"" + key(n - 1) + "@odata.type\":\"Edm.Int64\"");
    auto typed = ParseEntityJson(j);
    ASSERT_TRUE(typed.ok()) << typed.status().ToString();
    for (const Property& p : typed->properties) {
      EXPECT_EQ(p.value.type(), p.name == key(n - 1) ? EdmType::kInt64 : EdmType::kInt32) << p.name;
    }
  }
}

TEST(EntityJsonTest, NonObjectsAndBadJson) {
  EXPECT_NE(ErrorOf("[1,2]").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(ErrorOf("\"text\"").find("must be a JSON object"), std::string::npos);
  EXPECT_NE(ErrorOf("{\"PartitionKey\":").find("invalid JSON"), std::string::npos);
  EXPECT_NE(ErrorOf("").find("invalid JSON"), std::string::npos);
  EXPECT_NE(ErrorOf("{} {}").find("invalid JSON"), std::string::npos);
}

TEST(EntityJsonTest, Base64MatchesRfc4648Vectors) {
  const std::pair<const char*, const char*> kVectors[] = {
      {"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
      {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
  for (auto [plain, encoded] : kVectors) {
    EXPECT_EQ(Base64Encode(plain), encoded);
    EXPECT_EQ(Base64Decode(encoded), std::optional<std::string>(plain));
  }
  EXPECT_FALSE(Base64Decode("Zg="));
  EXPECT_FALSE(Base64Decode("Z==="));
  EXPECT_FALSE(Base64Decode("Zg==Zg=="));
  EXPECT_FALSE(Base64Decode("Zm9v\n"));
}

// The decoder's strictness is part of the JSON entity format (one text per
// value): pin every edge, whatever implements it.
TEST(EntityJsonTest, Base64DecodeRejectsEveryNonCanonicalText) {
  const std::string_view kRejected[] = {
      " Zm9v", "Zm 9v", "Zm9v ", "Zm9v\r\n", "\tZm9v",            // blanks anywhere
      "Zg", "Zm8", "Zm9vYg", "Zm9vYmE",                          // padding missing
      "Zg=", "Zm9vYg=",                                          // padding short
      "Zm8==", "Zm9v=", "Zm9v====", "====", "=", "Zg===",        // padding extra or alone
      "Zg==Zm9v", "Zm=9v", "Z=g=",                               // padding not at the end
      "Zh==", "Zm9=", "Zm9vYh==", "Zm9vYmF=",                    // non-zero unused bits
      "Zm-_", "Zm9v!", "Zm9\xC3\xA9", std::string_view("Zm9\0", 4),  // not in the alphabet
  };
  for (std::string_view text : kRejected) {
    EXPECT_FALSE(Base64Decode(text)) << "accepted: '" << text << "'";
  }
  EXPECT_EQ(Base64Decode("AA=="), std::optional<std::string>(std::string(1, '\0')));
  EXPECT_EQ(Base64Decode("//79"), std::optional<std::string>("\xFF\xFE\xFD"));
  EXPECT_EQ(Base64Decode("+/+/"), std::optional<std::string>("\xFB\xFF\xBF"));
}

// Every byte value and every length mod 3 round-trips, and the text is
// canonical (encoding the decoded bytes gives the same text back).
TEST(EntityJsonTest, Base64RoundTripsAllByteValues) {
  std::string bytes;
  for (int i = 0; i < 256; i++) bytes.push_back(static_cast<char>(i));
  for (size_t n = 0; n <= bytes.size(); n += 1 + n / 8) {
    const std::string plain = bytes.substr(bytes.size() - n);
    const std::string text = Base64Encode(plain);
    EXPECT_EQ(text.size(), (n + 2) / 3 * 4);
    EXPECT_EQ(Base64Decode(text), std::optional<std::string>(plain)) << n;
  }
}

TEST(BatchJsonTest, ParsesOperationsAndConditions) {
  auto b = ParseBatchJson(
      R"([{"op":"Insert","entity":{"PartitionKey":"p","RowKey":"1","A":1}},
          {"op":"Update","entity":{"odata.etag":"W/\"3\"","PartitionKey":"p","RowKey":"2"}},
          {"op":"Merge","entity":{"PartitionKey":"p","RowKey":"3"},"ifMatch":"W/\"9\""},
          {"op":"Delete","entity":{"PartitionKey":"p","RowKey":"4","Ignored":1},"ifMatch":"*"},
          {"op":"InsertOrMerge","entity":{"PartitionKey":"p","RowKey":"5"}},
          {"op":"Delete","entity":{"PartitionKey":"p","RowKey":"6"}}])",
      "T");
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  ASSERT_EQ(b->size(), 6u);
  EXPECT_EQ(b->table(), "T");
  const auto& ops = b->operations();
  EXPECT_EQ(ops[0].kind, OpKind::kInsert);
  EXPECT_EQ(ops[0].if_match, "");
  EXPECT_EQ(ops[1].if_match, "W/\"3\"");  // from the entity's odata.etag
  EXPECT_EQ(ops[2].if_match, "W/\"9\"");
  EXPECT_EQ(ops[3].kind, OpKind::kDelete);
  EXPECT_TRUE(ops[3].entity.properties.empty());
  EXPECT_EQ(ops[4].kind, OpKind::kInsertOrMerge);
  EXPECT_EQ(ops[5].if_match, "*");
}

TEST(BatchJsonTest, ErrorsNameTheOperation) {
  auto expect = [](std::string_view json, std::string_view needle) {
    auto b = ParseBatchJson(json, "T");
    ASSERT_FALSE(b.ok()) << json;
    EXPECT_EQ(b.status().code(), Code::kInvalidInput);
    EXPECT_NE(b.status().message().find(needle), std::string::npos) << b.status().message();
  };
  expect(R"({"op":"Insert"})", "JSON array");
  expect("[]", "at least one");
  expect(R"([{"op":"Insert","entity":{"PartitionKey":"p","RowKey":"1"}},{"op":"Upsert","entity":{}}])",
         "operation 1: \"op\" must be one of");
  expect(R"([{"op":"Insert","entity":{"PartitionKey":"p","RowKey":"1","X":null}}])", "operation 0: property 'X'");
  expect(R"([{"op":"Insert","entity":{"PartitionKey":"p","RowKey":"1"},"ifMatch":"*"}])", "operation 0: \"ifMatch\" is only");
  expect(R"([{"op":"Delete","entity":{"PartitionKey":"p","RowKey":"1"},"ifmatch":"*"}])", "unknown field 'ifmatch'");
  expect(R"([{"entity":{"PartitionKey":"p","RowKey":"1"}}])", "\"op\" is missing");
  expect(R"([{"op":"Insert"}])", "\"entity\" is missing");
  expect(R"([5])", "operation 0: must be an object");
  // Empty is no condition on the wire: refused, not sent as unconditional.
  expect(R"([{"op":"Merge","entity":{"PartitionKey":"p","RowKey":"1"},"ifMatch":""}])",
         "operation 0: \"ifMatch\" is empty");
  expect(R"([{"op":"Delete","entity":{"odata.etag":"","PartitionKey":"p","RowKey":"1"}}])",
         "operation 0: property 'odata.etag'");
}

TEST(ChangeRecordJsonTest, WritesRecordWithImages) {
  ChangeRecord r;
  r.lsn = 42;
  r.kind = ChangeKind::kEntities;
  r.commit_time = kUnixEpochTicks;
  r.table = "People";
  r.table_id = 3;
  r.partition_key = "Sales";
  r.caller = "hr-app";
  ChangeOp op;
  op.row_key = "1";
  op.kind = OpKind::kMerge;
  op.version = 42;
  op.etag = "W/\"42\"";
  Entity after;
  after.partition_key = "Sales";
  after.row_key = "1";
  after.Set("Big", Value::Int64(1));
  op.after = after;
  r.ops.push_back(op);
  EXPECT_EQ(ChangeRecordToJson(r),
            R"({"lsn":42,"kind":"Entities","time":"1970-01-01T00:00:00.0000000Z","table":"People",)"
            R"("tableId":3,"pk":"Sales","caller":"hr-app","ops":[{"rk":"1","op":"Merge","version":42,)"
            R"("etag":"W/\"42\"","after":{"PartitionKey":"Sales","RowKey":"1","Big":"1",)"
            R"("Big@odata.type":"Edm.Int64"}}]})");
  // The client request id, when the writer gave one, right after the caller.
  r.client_request_id = "req-7";
  EXPECT_NE(ChangeRecordToJson(r).find(R"("caller":"hr-app","clientRequestId":"req-7","ops")"),
            std::string::npos);
}

TEST(JsonWriterTest, EscapesAndNesting) {
  JsonWriter w;
  w.BeginObject().Key("a\"b").BeginArray().Int(-1).UInt(2).Bool(false).Null().String("x\ny").EndArray();
  w.Key("c").BeginObject().EndObject().EndObject();
  EXPECT_EQ(w.str(), R"({"a\"b":[-1,2,false,null,"x\ny"],"c":{}})");
  EXPECT_EQ(FormatDouble(1e21), "1e+21");
  EXPECT_EQ(FormatDouble(-0.0), "-0.0");
  EXPECT_EQ(FormatDouble(100), "100.0");
}

// The escaper finds bytes to escape eight at a time: every byte value at
// every position of strings of 1..17 bytes (one and two words plus a tail)
// must come out exactly as a byte-at-a-time escaper writes it.
TEST(JsonWriterTest, EscapesEveryByteAtEveryPosition) {
  auto reference = [](std::string_view s) {
    std::string out = "\"";
    for (unsigned char c : s) {
      char buf[8];
      if (c == '"') out += "\\\"";
      else if (c == '\\') out += "\\\\";
      else if (c == '\b') out += "\\b";
      else if (c == '\f') out += "\\f";
      else if (c == '\n') out += "\\n";
      else if (c == '\r') out += "\\r";
      else if (c == '\t') out += "\\t";
      else if (c < 0x20 || c == 0x7F) out += (std::snprintf(buf, sizeof buf, "\\u%04x", c), buf);
      else out.push_back(static_cast<char>(c));
    }
    return out + "\"";
  };
  for (size_t len = 1; len <= 17; len++) {
    for (size_t at = 0; at < len; at++) {
      for (int b = 0; b < 256; b++) {
        std::string s(len, 'a');
        s[at] = static_cast<char>(b);
        std::string out;
        AppendJsonString(s, &out);
        ASSERT_EQ(out, reference(s)) << "byte " << b << " at " << at << " of " << len;
      }
    }
  }
  std::string out;
  AppendJsonString("\x1F\x7F\xC3\xA9", &out);
  EXPECT_EQ(out, "\"\\u001f\\u007f\xC3\xA9\"");  // lower-case hex; UTF-8 as it is
}

// Characters JSON allows as they are but a terminal or an editor acts on
// are written as \uXXXX (the CLI printed U+009B, a terminal's CSI, and
// U+202E, which reverses the text after it, as stored; found from outside
// in session 40): C1 controls, U+2028/U+2029 and the bidirectional
// controls. Their neighbours are copied as they are, and each is found at
// every position of strings of 1..20 bytes (across the eight-byte words the
// escaper reads).
TEST(JsonWriterTest, EscapesCharactersATerminalActsOn) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"\u0080", "\\u0080"}, {"\u0085", "\\u0085"}, {"\u009b", "\\u009b"}, {"\u009f", "\\u009f"},
      {"\u00a0", "\u00a0"},  {"\u00e9", "\u00e9"},  {"\u2027", "\u2027"},  {"\u2028", "\\u2028"},
      {"\u2029", "\\u2029"}, {"\u202a", "\\u202a"}, {"\u202e", "\\u202e"}, {"\u202f", "\u202f"},
      {"\u2065", "\u2065"},  {"\u2066", "\\u2066"}, {"\u2069", "\\u2069"}, {"\u206a", "\u206a"},
      {"\u20ac", "\u20ac"},  {"\u201c", "\u201c"},
  };
  for (const auto& [text, written] : cases) {
    for (size_t before = 0; before <= 17; before++) {
      const std::string s = std::string(before, 'a') + text + "b";
      std::string out;
      AppendJsonString(s, &out);
      ASSERT_EQ(out, "\"" + std::string(before, 'a') + written + "b\"")
          << "after " << before << " bytes";
    }
  }
  std::string out;
  AppendJsonString("x\u202e\u009b[2J\n\u2066", &out);
  EXPECT_EQ(out, R"("x\u202e\u009b[2J\n\u2066")");
  // A sequence cut short at the end of the string is copied as it is (the
  // engine stores valid UTF-8 only; nothing is read past the end).
  out.clear();
  AppendJsonString(std::string("ab\xE2\x80", 4), &out);
  EXPECT_EQ(out, "\"ab\xE2\x80\"");
}

TEST(TablePrinterTest, AlignsUnionOfColumns) {
  TablePrinter t;
  Entity a;
  a.partition_key = "p";
  a.row_key = "1";
  a.Set("Name", Value::String("Ana")).Set("Age", Value::Int32(34));
  Entity b;
  b.partition_key = "p";
  b.row_key = "22";
  b.Set("City", Value::String("Zürich\n")).Set("Name", Value::String("Bo"));
  t.Add(a);
  t.Add(b);
  EXPECT_EQ(t.Render(),
            "PartitionKey  RowKey  Name  Age  City\n"
            "------------  ------  ----  ---  --------\n"
            "p             1       Ana   34\n"
            "p             22      Bo         Zürich\\n\n");
}

// C1 controls are escaped like the C0 ones: U+009B is a one-character CSI
// to terminals that read C1 controls, and it went through as it was (found
// from outside). Other non-ASCII text (U+00A0 and up) is left alone.
TEST(TablePrinterTest, EscapesC1ControlsToo) {
  Entity e;
  e.partition_key = "p";
  e.row_key = "1";
  e.Set("V", Value::String("a\u009b31mRED\u0085\u0080\u009f\u00a0\u00e9"));
  EXPECT_EQ(CellText(*e.Find("V")), "a\\u009b31mRED\\u0085\\u0080\\u009f\u00a0\u00e9");
}

}  // namespace
}  // namespace sidetable::cli
