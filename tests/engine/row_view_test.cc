// RowView: a stored row read in place must say exactly what DecodeRow says
// (properties, version, timestamp, ETag), and a corrupt row must be an
// Internal error, never a crash or a read past the bytes.
#include "engine/row_view.h"

#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "engine/etag.h"
#include "engine/internal/codec.h"

namespace sidetable {
namespace {

Entity AllTypesEntity() {
  Entity e;
  e.Set("s", Value::String("h\xC3\xA9llo"))
      .Set("b", Value::Binary(std::string("\0\x01\xFF", 3)))
      .Set("t", Value::Boolean(true))
      .Set("f", Value::Boolean(false))
      .Set("d", Value::DateTime(kMaxDateTimeTicks))
      .Set("x", Value::Double(-1.5e-300))
      .Set("g", Value::MakeGuid(*ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")))
      .Set("i", Value::Int32(std::numeric_limits<int32_t>::min()))
      .Set("l", Value::Int64(std::numeric_limits<int64_t>::max()))
      .Set("m", Value::Int64(std::numeric_limits<int64_t>::min()))
      .Set("e", Value::String(""));
  return e;
}

std::string Encode(const Entity& e, uint64_t version = 42, int64_t ts = 1234567) {
  std::string row;
  codec::EncodeRow(e, version, ts, &row);
  return row;
}

// Everything a RowView yields, as an Entity, or the first error.
Status ViewToEntity(std::string_view row, Entity* out) {
  auto view = RowView::Parse("pk", "rk", row);
  if (!view.ok()) return view.status();
  return RowToEntity(*view, out);
}

TEST(RowView, SaysWhatDecodeRowSays) {
  const Entity in = AllTypesEntity();
  const std::string row = Encode(in, 42, 1234567);
  auto view = RowView::Parse("p\xC3\xA9", "r", row);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->partition_key(), "p\xC3\xA9");
  EXPECT_EQ(view->row_key(), "r");
  EXPECT_EQ(view->version(), 42u);
  EXPECT_EQ(view->timestamp(), 1234567);
  EXPECT_EQ(view->property_count(), in.properties.size());

  PropertyReader r(*view);
  size_t i = 0;
  for (PropertyView p; r.Next(&p); i++) {
    ASSERT_LT(i, in.properties.size());
    EXPECT_EQ(p.name, in.properties[i].name);
    EXPECT_EQ(p.ToValue(), in.properties[i].value) << p.name;
  }
  EXPECT_TRUE(r.status().ok());
  EXPECT_EQ(i, in.properties.size());

  Entity via_view, via_decode;
  ASSERT_TRUE(RowToEntity(*view, &via_view).ok());
  ASSERT_TRUE(codec::DecodeRow(row, &via_decode).ok());
  EXPECT_EQ(via_view.properties, via_decode.properties);
  EXPECT_EQ(via_view.etag, via_decode.etag);
  EXPECT_EQ(via_view.timestamp, via_decode.timestamp);
  EXPECT_EQ(via_view.partition_key, "p\xC3\xA9");
}

TEST(RowView, SelectKeepsOnlyTheNamedProperties) {
  const std::string row = Encode(AllTypesEntity());
  auto view = RowView::Parse("pk", "rk", row);
  ASSERT_TRUE(view.ok());
  const std::vector<std::string> select = {"l", "s", "absent"};
  Entity e;
  ASSERT_TRUE(RowToEntity(*view, &e, &select).ok());
  ASSERT_EQ(e.properties.size(), 2u);
  EXPECT_EQ(e.properties[0].name, "s");  // stored order, not $select order
  EXPECT_EQ(e.properties[1].name, "l");
}

TEST(RowView, FindsAPropertyByName) {
  const std::string row = Encode(AllTypesEntity());
  auto view = RowView::Parse("pk", "rk", row);
  ASSERT_TRUE(view.ok());
  PropertyView p;
  Status error;
  ASSERT_TRUE(view->Find("x", &p, &error));
  EXPECT_EQ(p.type(), EdmType::kDouble);
  EXPECT_EQ(p.as_double(), -1.5e-300);
  EXPECT_FALSE(view->Find("nope", &p, &error));
  EXPECT_FALSE(view->Find("S", &p, &error)) << "names are case-sensitive";
  EXPECT_TRUE(error.ok());
}

TEST(RowView, ETagIsMakeETag) {
  for (uint64_t v : {uint64_t{0}, uint64_t{1}, uint64_t{9}, uint64_t{10}, uint64_t{123456789012345},
                     std::numeric_limits<uint64_t>::max()}) {
    auto view = RowView::Parse("pk", "rk", Encode(Entity(), v));
    ASSERT_TRUE(view.ok());
    ETagBuffer buf;
    EXPECT_EQ(view->ETag(&buf), MakeETag(v));
    EXPECT_EQ(MakeETag(v), "W/\"" + std::to_string(v) + "\"");
  }
}

TEST(RowView, EveryTruncationIsAnInternalErrorNotACrash) {
  const std::string row = Encode(AllTypesEntity());
  for (size_t n = 0; n < row.size(); n++) {
    // A copy of exactly n bytes, so a read past them is caught by sanitizers.
    const std::string cut = row.substr(0, n);
    Entity e;
    Status s = ViewToEntity(cut, &e);
    EXPECT_EQ(s.code(), Code::kInternal) << "truncated at " << n;
    EXPECT_EQ(s.code(), codec::DecodeRow(cut, &e).code()) << "truncated at " << n;
  }
}

TEST(RowView, TrailingBytesAndBadValuesAreCorrupt) {
  Entity e;
  std::string row = Encode(AllTypesEntity());
  EXPECT_EQ(ViewToEntity(row + "x", &e).code(), Code::kInternal);

  Entity one;
  one.Set("a", Value::Boolean(true));
  std::string bad = Encode(one);
  bad.back() = 2;  // a Boolean is 0 or 1
  EXPECT_EQ(ViewToEntity(bad, &e).code(), Code::kInternal);
  bad = Encode(one);
  bad[bad.size() - 2] = 99;  // no such Edm type
  EXPECT_EQ(ViewToEntity(bad, &e).code(), Code::kInternal);

  auto view = RowView::Parse("pk", "rk", bad);
  ASSERT_TRUE(view.ok()) << "the header is fine";
  PropertyView p;
  Status error;
  EXPECT_FALSE(view->Find("a", &p, &error));
  EXPECT_EQ(error.code(), Code::kInternal) << "Find reports the corruption it meets";

  EXPECT_EQ(RowView::Parse("pk", "rk", "").status().code(), Code::kInternal);
  EXPECT_EQ(RowView::Parse("pk", "rk", std::string(1, '\x07')).status().code(), Code::kInternal)
      << "unknown format";
}

TEST(RowView, RandomBytesNeverCrash) {
  std::mt19937 rng(7);
  const std::string row = Encode(AllTypesEntity());
  for (int i = 0; i < 20000; i++) {
    std::string b = row;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; f++) b[rng() % b.size()] = static_cast<char>(rng());
    Entity e, d;
    const Status s = ViewToEntity(b, &e);
    const Status ds = codec::DecodeRow(b, &d);
    EXPECT_EQ(s.code(), ds.code()) << "bytes #" << i;
    if (s.ok() && ds.ok()) {
      EXPECT_EQ(e.properties, d.properties);
    }
  }
}

}  // namespace
}  // namespace sidetable
