// Row encoding round trips, corruption handling, and the key order property:
// the bytewise order of encoded keys is Azure's ordinal (UTF-16) order.
#include "engine/internal/codec.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "engine/etag.h"
#include "engine/utf8.h"
#include "testing/random_keys.h"

namespace sidetable {
namespace {

Entity AllTypes() {
  Entity e;
  e.Set("s", Value::String("h\xC3\xA9llo"))
      .Set("b", Value::Binary(std::string("\0\x01\xFF", 3)))
      .Set("t", Value::Boolean(true))
      .Set("d", Value::DateTime(kMaxDateTimeTicks))
      .Set("x", Value::Double(-1.5e-300))
      .Set("n", Value::Double(std::numeric_limits<double>::quiet_NaN()))
      .Set("g", Value::MakeGuid(*ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")))
      .Set("i", Value::Int32(std::numeric_limits<int32_t>::min()))
      .Set("l", Value::Int64(std::numeric_limits<int64_t>::max()))
      .Set("m", Value::Int64(std::numeric_limits<int64_t>::min()));
  return e;
}

TEST(RowCodec, RoundTripsEveryTypeExactly) {
  Entity in = AllTypes();
  std::string row;
  codec::EncodeRow(in, 42, 1234567, &row);
  Entity out;
  ASSERT_TRUE(codec::DecodeRow(row, &out).ok());
  EXPECT_EQ(out.properties, in.properties);
  EXPECT_EQ(out.timestamp, 1234567);
  EXPECT_EQ(out.etag, MakeETag(42));
  uint64_t version;
  int64_t ts;
  ASSERT_TRUE(codec::DecodeRowHeader(row, &version, &ts).ok());
  EXPECT_EQ(version, 42u);
}

// The row format field by field, as the format is written down
// (engine/internal/codec.h): EncodeRow writes through a pointer into space
// sized once, and must produce exactly these bytes, after what `dst` held.
std::string ReferenceRow(const Entity& e, uint64_t version, int64_t timestamp) {
  std::string r(1, static_cast<char>(codec::kRowFormat));
  codec::PutVarint64(&r, version);
  codec::PutFixed64(&r, static_cast<uint64_t>(timestamp));
  codec::PutVarint64(&r, e.properties.size());
  for (const Property& p : e.properties) {
    codec::PutLengthPrefixed(&r, p.name);
    r.push_back(static_cast<char>(p.value.type()));
    switch (p.value.type()) {
      case EdmType::kString:
      case EdmType::kBinary:
        codec::PutLengthPrefixed(&r, p.value.bytes());
        break;
      case EdmType::kGuid:
        r.append(p.value.bytes());
        break;
      case EdmType::kBoolean:
        r.push_back(p.value.as_bool() ? 1 : 0);
        break;
      case EdmType::kDateTime:
        codec::PutFixed64(&r, static_cast<uint64_t>(p.value.as_ticks()));
        break;
      case EdmType::kDouble: {
        uint64_t bits;
        const double d = p.value.as_double();
        std::memcpy(&bits, &d, sizeof bits);
        codec::PutFixed64(&r, bits);
        break;
      }
      case EdmType::kInt32:
      case EdmType::kInt64: {
        const int64_t v = p.value.as_int64();
        codec::PutVarint64(&r, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
        break;
      }
    }
  }
  return r;
}

TEST(RowCodec, BytesAreTheFormatFieldByField) {
  std::vector<Entity> entities = {Entity{}, AllTypes()};
  Entity big = AllTypes();
  // Lengths whose varints take one, two and three bytes; an empty string.
  big.Set("empty", Value::String(""))
      .Set("s127", Value::String(std::string(127, 'a')))
      .Set("s128", Value::String(std::string(128, 'b')))
      .Set("s20000", Value::String(std::string(20000, 'c')))
      .Set(std::string(200, 'N'), Value::Binary(std::string(65536, '\xFE')))
      .Set("zero", Value::Int32(0))
      .Set("neg", Value::Int32(-1))
      .Set("f", Value::Boolean(false));
  entities.push_back(big);
  for (const Entity& e : entities) {
    for (uint64_t version : {uint64_t{0}, uint64_t{127}, uint64_t{128}, ~uint64_t{0}}) {
      for (int64_t ts : {int64_t{0}, int64_t{-1}, kMaxDateTimeTicks}) {
        std::string row = "prefix";  // appended after what is there
        codec::EncodeRow(e, version, ts, &row);
        ASSERT_EQ(row, "prefix" + ReferenceRow(e, version, ts))
            << e.properties.size() << " properties, version " << version << ", timestamp " << ts;
      }
    }
  }
}

TEST(RowCodec, ProjectionKeepsOnlySelected) {
  std::string row;
  codec::EncodeRow(AllTypes(), 1, 1, &row);
  std::vector<std::string> select = {"l", "s", "missing"};
  Entity out;
  ASSERT_TRUE(codec::DecodeRow(row, &out, &select).ok());
  ASSERT_EQ(out.properties.size(), 2u);
  EXPECT_EQ(*out.Find("l"), Value::Int64(std::numeric_limits<int64_t>::max()));
  EXPECT_EQ(out.Find("i"), nullptr);
}

TEST(RowCodec, EveryTruncationIsAnErrorNotACrash) {
  std::string row;
  codec::EncodeRow(AllTypes(), 7, 7, &row);
  for (size_t n = 0; n < row.size(); n++) {
    Entity out;
    Status s = codec::DecodeRow(std::string_view(row.data(), n), &out);
    EXPECT_EQ(s.code(), Code::kInternal) << "prefix " << n;
  }
  Entity out;
  EXPECT_EQ(codec::DecodeRow(row + "x", &out).code(), Code::kInternal);
  std::string wrong_format = row;
  wrong_format[0] = 9;
  EXPECT_EQ(codec::DecodeRow(wrong_format, &out).code(), Code::kInternal);
}

TEST(RowCodec, RandomBytesNeverCrash) {
  std::mt19937 rng(3);
  for (int i = 0; i < 20000; i++) {
    std::string junk(rng() % 64, '\0');
    for (auto& c : junk) c = static_cast<char>(rng());
    if (!junk.empty()) junk[0] = codec::kRowFormat;
    Entity out;
    codec::DecodeRow(junk, &out).IgnoreError();
  }
}

TEST(KeyCodec, EntityKeyRoundTrips) {
  testing::RandomKeys gen(11);
  for (int i = 0; i < 2000; i++) {
    std::string pk = gen.Next(), rk = gen.Next();
    uint32_t id;
    std::string pk2, rk2;
    ASSERT_TRUE(codec::DecodeEntityKey(codec::EntityKey(77, pk, rk), &id, &pk2, &rk2));
    EXPECT_EQ(id, 77u);
    EXPECT_EQ(pk2, pk);
    EXPECT_EQ(rk2, rk);
  }
}

// Property: for random (pk, rk) pairs over the whole Unicode range, sorting the
// encoded keys bytewise gives the same order as comparing (pk, rk) by UTF-16
// code units, which is how Azure (and .NET's ordinal comparison) orders keys.
TEST(KeyCodec, ByteOrderIsUtf16OrdinalOrder) {
  testing::RandomKeys gen(5);
  struct Item {
    std::u16string pk, rk;
    std::string key;
  };
  std::vector<Item> items;
  for (int i = 0; i < 5000; i++) {
    // Few distinct PartitionKeys so ties on pk exercise the RowKey order too.
    std::string pk = i % 3 == 0 ? gen.Next() : gen.FromSmallSet();
    std::string rk = gen.Next();
    items.push_back({testing::ToUtf16(pk), testing::ToUtf16(rk), codec::EntityKey(1, pk, rk)});
  }
  auto by_bytes = items, by_utf16 = items;
  std::sort(by_bytes.begin(), by_bytes.end(),
            [](const Item& a, const Item& b) { return a.key < b.key; });
  std::sort(by_utf16.begin(), by_utf16.end(), [](const Item& a, const Item& b) {
    return std::tie(a.pk, a.rk) < std::tie(b.pk, b.rk);
  });
  for (size_t i = 0; i < items.size(); i++) {
    ASSERT_EQ(by_bytes[i].key, by_utf16[i].key) << "position " << i;
  }
}

TEST(Ordinal, CompareMatchesUtf16) {
  testing::RandomKeys gen(9);
  for (int i = 0; i < 20000; i++) {
    std::string a = gen.Next(), b = gen.Next();
    int want = testing::ToUtf16(a).compare(testing::ToUtf16(b));
    int got = CompareOrdinal(a, b);
    ASSERT_EQ(want < 0, got < 0) << i;
    ASSERT_EQ(want == 0, got == 0) << i;
  }
  // The case plain UTF-8 byte order gets wrong: U+FF01 vs U+1F600.
  EXPECT_GT(CompareOrdinal("\xEF\xBC\x81", "\xF0\x9F\x98\x80"), 0);
}

}  // namespace
}  // namespace sidetable

namespace sidetable::codec {
namespace {

// Change records of format 1 (written before client request ids) are still
// read; format 2 carries the id after the caller.
TEST(ChangeCodec, ReadsFormatOneAndTwo) {
  std::string v2;
  EncodeChangeHeader(7, ChangeKind::kTableCreated, 99, "Orders", 3, "", "app", 0, &v2, {}, "req-1");
  ChangeRecord r2;
  ASSERT_TRUE(DecodeChange(v2, &r2).ok());
  EXPECT_EQ(r2.caller, "app");
  EXPECT_EQ(r2.client_request_id, "req-1");
  EXPECT_EQ(r2.lsn, 7u);

  // Format 1, byte for byte as it was written: no id field.
  std::string v1;
  v1.push_back(static_cast<char>(kChangeFormatV1));
  v1.push_back(static_cast<char>(ChangeKind::kTableCreated));
  PutVarint64(&v1, 7);
  PutFixed64(&v1, 99);
  PutLengthPrefixed(&v1, "Orders");
  PutVarint64(&v1, 3);
  PutLengthPrefixed(&v1, "");
  PutLengthPrefixed(&v1, "app");
  PutVarint64(&v1, 0);
  ChangeRecord r1;
  ASSERT_TRUE(DecodeChange(v1, &r1).ok());
  EXPECT_EQ(r1.caller, "app");
  EXPECT_EQ(r1.client_request_id, "");
  EXPECT_EQ(r1.table, "Orders");

  std::string v6 = v2;
  v6[0] = 6;
  EXPECT_EQ(DecodeChange(v6, &r1).code(), Code::kInternal) << "an unknown format is corrupt";
}

// Format 3 (scale-out) carries the epoch after the client request id and is
// written only for epoch > 0: epoch 0 writes format 2 byte for byte.
TEST(ChangeCodec, FormatThreeCarriesTheEpoch) {
  std::string plain, zero;
  EncodeChangeHeader(7, ChangeKind::kEntities, 99, "Orders", 3, "p", "app", 0, &plain, {}, "req-1");
  EncodeChangeHeader(7, ChangeKind::kEntities, 99, "Orders", 3, "p", "app", 0, &zero, {}, "req-1", 0);
  EXPECT_EQ(plain, zero);
  EXPECT_EQ(static_cast<uint8_t>(plain[0]), kChangeFormat);

  std::string v3;
  EncodeChangeHeader(7, ChangeKind::kEntities, 99, "Orders", 3, "p", "app", 1, &v3, {}, "req-1", 5);
  EXPECT_EQ(static_cast<uint8_t>(v3[0]), kChangeFormatEpoch);
  std::string row;
  Entity e;
  e.Set("n", Value::Int32(1));
  EncodeRow(e, StampVersion(5, 7), 99, &row);
  EncodeChangeOp({"r", OpKind::kInsert, "", row}, &v3);
  ChangeRecord r;
  ASSERT_TRUE(DecodeChange(v3, &r).ok());
  EXPECT_EQ(r.epoch, 5u);
  EXPECT_EQ(r.lsn, 7u);
  EXPECT_EQ(r.client_request_id, "req-1");
  ASSERT_EQ(r.ops.size(), 1u);
  EXPECT_EQ(r.ops[0].version, uint64_t{5} << 40 | 7);
  EXPECT_EQ(r.ops[0].etag, "W/\"" + std::to_string(uint64_t{5} << 40 | 7) + "\"");

  // Every truncation is an error, never a crash.
  for (size_t n = 0; n < v3.size(); n++) {
    ChangeRecord t;
    EXPECT_FALSE(DecodeChange(std::string_view(v3).substr(0, n), &t).ok()) << n;
  }
  // Format 3 with epoch 0, or an epoch beyond 24 bits, is corrupt.
  for (uint64_t bad : {uint64_t{0}, uint64_t{1} << 24}) {
    std::string b;
    b.push_back(static_cast<char>(kChangeFormatEpoch));
    b.push_back(static_cast<char>(ChangeKind::kEntities));
    PutVarint64(&b, 7);
    PutFixed64(&b, 99);
    PutLengthPrefixed(&b, "Orders");
    PutVarint64(&b, 3);
    PutLengthPrefixed(&b, "p");
    PutLengthPrefixed(&b, "app");
    PutLengthPrefixed(&b, "");
    PutVarint64(&b, bad);
    PutVarint64(&b, 0);
    ChangeRecord t;
    EXPECT_EQ(DecodeChange(b, &t).code(), Code::kInternal) << bad;
  }
}

}  // namespace
}  // namespace sidetable::codec

namespace sidetable::codec {
namespace {

// Formats 4 and 5 (engine/internal/images.h): a mode byte per operation; an
// after image "in the row" is not in the record, and only the engine, which
// can resolve it, may read such a record.
TEST(ChangeCodec, FormatsFourAndFiveReferToTheRowAndAreReadOnlyResolved) {
  Entity e;
  e.Set("n", Value::Int32(1));
  std::string row, before;
  EncodeRow(e, 7, 99, &row, kRowFormatSoleImage);
  EncodeRow(e, 5, 98, &before, kRowFormatSoleImage);
  for (uint64_t epoch : {uint64_t{0}, uint64_t{5}}) {
    std::string v;
    EncodeChangeHeader(7, ChangeKind::kEntities, 99, "Orders", 3, "p", "app", 2, &v, {}, "req-1",
                       epoch,
                       /*image_refs=*/true);
    EXPECT_EQ(static_cast<uint8_t>(v[0]), epoch == 0 ? kChangeFormatRefs : kChangeFormatEpochRefs);
    EncodeChangeOp({"a", OpKind::kInsertOrReplace, before, row}, &v, kImageInRow);
    EncodeChangeOp({"b", OpKind::kDelete, before, ""}, &v, kImageInline);
    ASSERT_TRUE(HasImageRefs(v));
    StoredChange split;
    ASSERT_TRUE(SplitStoredChange(v, &split).ok());
    EXPECT_EQ(split.lsn, 7u);
    EXPECT_EQ(split.epoch, epoch);
    EXPECT_EQ(split.table_id, 3u);
    EXPECT_EQ(split.partition_key, "p");
    ASSERT_EQ(split.ops.size(), 2u);
    EXPECT_EQ(split.ops[0].image_mode, kImageInRow);
    EXPECT_TRUE(split.ops[0].after.empty()) << "no copy of the after image";
    EXPECT_EQ(static_cast<uint8_t>(split.ops[0].before[0]), kRowFormat)
        << "images in records are format 1";
    EXPECT_EQ(split.ops[1].image_mode, kImageInline);
    ChangeRecord r;
    EXPECT_EQ(DecodeChange(v, &r).code(), Code::kInternal);
    EXPECT_EQ(DecodeChangeHeader(v, &r).code(), Code::kOk) << "the header reads as before";
    EXPECT_EQ(r.epoch, epoch);

    // A bad mode byte, or a reference with an image beside it, is corrupt.
    std::string bad;
    EncodeChangeHeader(7, ChangeKind::kEntities, 99, "Orders", 3, "p", "app", 1, &bad, {}, "",
                       epoch, true);
    std::string bad_mode = bad, both = bad;
    EncodeChangeOp({"a", OpKind::kInsert, "", row}, &bad_mode, 2);
    EncodeChangeOp({"a", OpKind::kInsert, "", row}, &both, kImageInline);
    both[both.size() - row.size() - 3] = static_cast<char>(kImageInRow);  // the mode byte
    EXPECT_EQ(SplitStoredChange(bad_mode, &split).code(), Code::kInternal);
    EXPECT_EQ(SplitStoredChange(both, &split).code(), Code::kInternal);
  }
}

TEST(RowCodec, FormatTwoReadsAsFormatOne) {
  Entity e;
  e.Set("n", Value::Int32(4));
  std::string one, two;
  EncodeRow(e, 9, 99, &one);
  EncodeRow(e, 9, 99, &two, kRowFormatSoleImage);
  EXPECT_EQ(one.substr(1), two.substr(1));
  Entity a, b;
  ASSERT_TRUE(DecodeRow(one, &a).ok());
  ASSERT_TRUE(DecodeRow(two, &b).ok());
  EXPECT_EQ(a.properties, b.properties);
  EXPECT_EQ(a.etag, b.etag);
  std::string three = one;
  three[0] = 3;
  EXPECT_EQ(DecodeRow(three, &a).code(), Code::kInternal);
  std::string image;
  PutRowImage(&image, two);
  EXPECT_EQ(image.substr(image.size() - one.size()), one) << "a row image in a record is format 1";
}

}  // namespace
}  // namespace sidetable::codec
