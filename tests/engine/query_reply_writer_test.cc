// QueryReplyWriter: a Query reply written straight from stored rows must be
// byte for byte what EncodeQuery writes for the decoded entities, for whole
// entities and every shape of $select, around the array-size encodings; and a
// corrupt row must be an Internal error, never a crash. The Get reply written
// from the stored row (EncodeRowReply) is held to the same standard against
// EncodeEntityReply.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "engine/etag.h"
#include "engine/internal/codec.h"
#include "protocol/wire.h"

namespace sidetable::wire {
namespace {

Entity Rich(int n) {
  Entity e;
  e.partition_key = "p\xC3\xA9";
  e.row_key = "r" + std::to_string(n);
  e.Set("s", Value::String("text " + std::to_string(n)))
      .Set("b", Value::Binary(std::string("\0\xFF", 2)))
      .Set("t", Value::Boolean(n % 2 == 0))
      .Set("d", Value::DateTime(kMaxDateTimeTicks))
      .Set("x", Value::Double(-0.0))
      .Set("two", Value::Double(2.0))
      .Set("inf", Value::Double(INFINITY))
      .Set("g", Value::MakeGuid(*ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")))
      .Set("i", Value::Int32(n % 3 == 0 ? INT32_MIN : n))
      .Set("l", Value::Int64(INT64_MIN))
      .Set("m", Value::Int64(INT64_MAX));
  if (n % 4 == 0) e.Remove("s");  // some rows lack a selected property
  return e;
}

// A stored row per entity, as the engine keeps it.
struct Stored {
  Entity entity;  // as a read returns it (ETag and timestamp set)
  std::string row;
};
std::vector<Stored> Rows(int count) {
  std::vector<Stored> out;
  for (int n = 0; n < count; n++) {
    Stored s;
    s.entity = Rich(n);
    const uint64_t version = 1000 + static_cast<uint64_t>(n) * 7919;
    s.entity.timestamp = 638000000000000000 + n;
    s.entity.etag = MakeETag(version);
    codec::EncodeRow(s.entity, version, s.entity.timestamp, &s.row);
    out.push_back(std::move(s));
  }
  return out;
}

// EncodeQuery of the entities as the query layer would hand them over
// (projected to the selected user properties).
std::string Reference(const std::vector<Stored>& rows, const std::vector<std::string>& select,
                      const std::optional<std::string>& npk) {
  QueryReply r;
  for (const Stored& s : rows) {
    Entity e = s.entity;
    if (!select.empty()) {
      std::erase_if(e.properties, [&](const Property& p) {
        return std::find(select.begin(), select.end(), p.name) == select.end();
      });
    }
    r.entities.push_back(std::move(e));
  }
  r.select = select;
  if (npk) {
    r.next_pk = npk;
    r.next_rk = "nrk";
  }
  r.plan = "partition-scan";
  r.examined = 123456;
  std::string out;
  EncodeQuery(r, &out);
  return out;
}

std::string Written(const std::vector<Stored>& rows, const std::vector<std::string>& select,
                    const std::optional<std::string>& npk) {
  std::string out = "prefix";  // the writer appends (after the frame's header)
  QueryReplyWriter w(&out, select);
  for (const Stored& s : rows) {
    auto view = RowView::Parse(s.entity.partition_key, s.entity.row_key, s.row);
    EXPECT_TRUE(view.ok());
    EXPECT_TRUE(w.Add(*view).ok());
  }
  EXPECT_EQ(w.count(), rows.size());
  w.Finish(npk, npk ? std::optional<std::string>("nrk") : std::nullopt, "partition-scan", 123456);
  EXPECT_EQ(out.substr(0, 6), "prefix");
  return out.substr(6);
}

TEST(QueryReplyWriter, SameBytesAsEncodeQuery) {
  const std::vector<std::vector<std::string>> selects = {
      {},
      {"s"},
      {"s", "i", "absent"},
      {"absent", "s", "absent", "s"},  // duplicates: each property once, each nil once
      {"PartitionKey"},
      {"RowKey", "Timestamp", "l"},
      {"PartitionKey", "RowKey", "Timestamp", "s", "b", "t", "d", "x", "two", "inf", "g", "i", "l", "m"},
  };
  // Around the array encodings: fixarray up to 15, array16 from 16.
  for (int count : {0, 1, 15, 16, 17, 200}) {
    const std::vector<Stored> rows = Rows(count);
    for (const auto& select : selects) {
      for (bool more : {false, true}) {
        const std::optional<std::string> npk = more ? std::optional<std::string>("npk") : std::nullopt;
        EXPECT_EQ(Written(rows, select, npk), Reference(rows, select, npk))
            << count << " entities, " << select.size() << " selected, continuation " << more;
      }
    }
  }
}

TEST(QueryReplyWriter, DecodesLikeAnyQueryReply) {
  const std::vector<Stored> rows = Rows(20);
  const std::string body = Written(rows, {"s", "absent", "RowKey"}, std::string("npk"));
  QueryReply back;
  ASSERT_TRUE(DecodeQuery(body, &back).ok());
  ASSERT_EQ(back.entities.size(), 20u);
  EXPECT_EQ(back.entities[1].row_key, "r1");
  EXPECT_TRUE(back.entities[1].partition_key.empty()) << "not selected";
  ASSERT_EQ(back.entities[1].properties.size(), 1u);
  EXPECT_EQ(back.entities[1].properties[0].name, "s");
  EXPECT_TRUE(back.entities[0].properties.empty()) << "s is absent from row 0: nil, left out";
  EXPECT_EQ(back.entities[3].etag, rows[3].entity.etag);
  EXPECT_EQ(back.next_pk, "npk");
  EXPECT_EQ(back.examined, 123456u);
}

TEST(QueryReplyWriter, ACorruptRowIsAnInternalError) {
  const std::vector<Stored> rows = Rows(3);
  std::mt19937 rng(11);
  for (const std::vector<std::string>& select : {std::vector<std::string>{}, std::vector<std::string>{"m"}}) {
    for (size_t n = 0; n < rows[1].row.size(); n++) {
      const std::string cut = rows[1].row.substr(0, n);
      auto view = RowView::Parse("pk", "rk", cut);
      if (!view.ok()) {
        EXPECT_EQ(view.status().code(), Code::kInternal);
        continue;
      }
      std::string out;
      QueryReplyWriter w(&out, select);
      EXPECT_EQ(w.Add(*view).code(), Code::kInternal) << "truncated at " << n;
    }
    for (int i = 0; i < 5000; i++) {
      std::string b = rows[2].row;
      b[rng() % b.size()] = static_cast<char>(rng());
      auto view = RowView::Parse("pk", "rk", b);
      if (!view.ok()) continue;
      std::string out;
      QueryReplyWriter w(&out, select);
      Entity e;
      const Code want = codec::DecodeRow(b, &e).code();
      EXPECT_EQ(w.Add(*view).code(), want) << "bytes #" << i;
    }
  }
}

// A Get's reply from the stored row against EncodeEntityReply of the entity
// the engine's Get decodes with the same $select.
TEST(RowReply, SameBytesAsEncodeEntityReply) {
  const std::vector<Stored> rows = Rows(8);
  const std::vector<std::vector<std::string>> selects = {
      {}, {"s"}, {"absent"}, {"s", "absent", "s", "i"}, {"RowKey", "Timestamp"}, {"PartitionKey", "m", "l"}};
  for (const Stored& s : rows) {
    for (const auto& select : selects) {
      Entity e;
      e.partition_key = s.entity.partition_key;
      e.row_key = s.entity.row_key;
      ASSERT_TRUE(codec::DecodeRow(s.row, &e, select.empty() ? nullptr : &select).ok());
      std::string want;
      EncodeEntityReply(e, &want, &select);
      auto view = RowView::Parse(s.entity.partition_key, s.entity.row_key, s.row);
      ASSERT_TRUE(view.ok());
      std::string got = "hdr";
      ASSERT_TRUE(EncodeRowReply(*view, select, &got).ok());
      EXPECT_EQ(got.substr(3), want) << s.entity.row_key << ", " << select.size() << " selected";
      Entity back;
      ASSERT_TRUE(DecodeEntityReply(got.substr(3), &back).ok());
      EXPECT_EQ(back.etag, s.entity.etag);
    }
  }
}

TEST(RowReply, ACorruptRowIsAnInternalError) {
  const std::vector<Stored> rows = Rows(2);
  for (size_t n = 0; n < rows[1].row.size(); n++) {
    auto view = RowView::Parse("pk", "rk", rows[1].row.substr(0, n));
    if (!view.ok()) continue;
    std::string out;
    EXPECT_EQ(EncodeRowReply(*view, {}, &out).code(), Code::kInternal) << "truncated at " << n;
  }
}

}  // namespace
}  // namespace sidetable::wire
