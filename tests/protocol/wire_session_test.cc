// AdvanceWatermarks, ReadWatermarks and session tokens on the wire: round
// trips, and every malformed field answered InvalidInput.
#include <gtest/gtest.h>

#include <functional>

#include "protocol/wire.h"

namespace sidetable::wire {
namespace {

std::string Frame(Op op, const std::function<void(msgpack::Writer&)>& body) {
  std::string f;
  AppendHeader(&f, Header{kVersion, static_cast<uint8_t>(op), 0, 7});
  msgpack::Writer w(&f);
  body(w);
  return f;
}

Status Decode(const std::string& frame) {
  Request r;
  return DecodeRequest(frame, &r);
}

TEST(WireSession, WatermarksRoundTrip) {
  Request in;
  in.op = Op::kAdvanceWatermarks;
  in.watermarks = {{"Idx", "People", 0, 3, 42, 637000000000000000}, {"Idx", "People", 2, 3, 0, 0}};
  std::string frame;
  EncodeRequest(in, &frame);
  Request out;
  ASSERT_TRUE(DecodeRequest(frame, &out).ok());
  ASSERT_EQ(out.watermarks.size(), 2u);
  EXPECT_EQ(out.watermarks[0].derived, "Idx");
  EXPECT_EQ(out.watermarks[0].source, "People");
  EXPECT_EQ(out.watermarks[0].partition, 0);
  EXPECT_EQ(out.watermarks[0].partitions, 3);
  EXPECT_EQ(out.watermarks[0].lsn, 42u);
  EXPECT_EQ(out.watermarks[0].time, 637000000000000000);
  EXPECT_EQ(out.watermarks[1].partition, 2);

  std::string body;
  EncodeWatermarks(in.watermarks, &body);
  std::vector<WatermarkEntry> back;
  ASSERT_TRUE(DecodeWatermarks(body, &back).ok());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].time, 637000000000000000);
  EXPECT_EQ(back[1].partitions, 3);

  Request rw;
  rw.op = Op::kReadWatermarks;
  rw.derived = "Idx";
  frame.clear();
  EncodeRequest(rw, &frame);
  ASSERT_TRUE(DecodeRequest(frame, &out).ok());
  EXPECT_EQ(out.derived, "Idx");

  Request fw;
  fw.op = Op::kForgetWatermarks;
  fw.derived = "Idx";
  frame.clear();
  EncodeRequest(fw, &frame);
  Request forgotten;
  ASSERT_TRUE(DecodeRequest(frame, &forgotten).ok());
  EXPECT_EQ(forgotten.op, Op::kForgetWatermarks);
  EXPECT_EQ(forgotten.derived, "Idx");
  EXPECT_EQ(OpName(Op::kForgetWatermarks), "ForgetWatermarks");
}

TEST(WireSession, AfterTokensRoundTrip) {
  Request in;
  in.op = Op::kGet;
  in.table = "Idx";
  in.pk = "p";
  in.rk = "r";
  in.after = {{"People", 5}, {"Orders", 9}};
  in.wait_ms = 0;
  std::string frame;
  EncodeRequest(in, &frame);
  Request out;
  ASSERT_TRUE(DecodeRequest(frame, &out).ok());
  ASSERT_EQ(out.after.size(), 2u);
  EXPECT_EQ(out.after[1].source, "Orders");
  EXPECT_EQ(out.after[1].lsn, 9u);
  ASSERT_TRUE(out.wait_ms.has_value());
  EXPECT_EQ(*out.wait_ms, 0u);
  // No tokens, no fields: a plain Get encodes as before.
  Request plain;
  plain.op = Op::kGet;
  plain.table = "Idx";
  std::string a;
  EncodeRequest(plain, &a);
  out = Request();
  ASSERT_TRUE(DecodeRequest(a, &out).ok());
  EXPECT_TRUE(out.after.empty());
  EXPECT_FALSE(out.wait_ms.has_value());
}

TEST(WireSession, MalformedWatermarksAreInvalidInput) {
  auto entry = [](const std::function<void(msgpack::Writer&)>& fields, uint32_t n) {
    return Frame(Op::kAdvanceWatermarks, [&](msgpack::Writer& w) {
      w.MapHeader(1);
      w.Str("watermarks");
      w.ArrayHeader(1);
      w.MapHeader(n);
      fields(w);
    });
  };
  auto valid_with = [&](const char* key, const std::function<void(msgpack::Writer&)>& value) {
    return entry([&](msgpack::Writer& w) {
      w.Str("derived"); w.Str("Idx");
      w.Str("source"); w.Str("People");
      w.Str("partition"); w.Int(0);
      w.Str("partitions"); w.Int(2);
      w.Str("lsn"); w.Uint(1);
      w.Str(key);
      value(w);
    }, 6);
  };
  EXPECT_TRUE(Decode(valid_with("extra", [](msgpack::Writer& w) { w.Int(1); })).ok());
  EXPECT_EQ(Decode(valid_with("derived", [](msgpack::Writer& w) { w.Str("\xff\xfe"); })).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(valid_with("derived", [](msgpack::Writer& w) { w.Str("tables"); })).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(valid_with("source", [](msgpack::Writer& w) { w.Str("ab"); })).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(valid_with("source", [](msgpack::Writer& w) { w.Int(3); })).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(valid_with("partition", [](msgpack::Writer& w) { w.Int(2); })).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(valid_with("partition", [](msgpack::Writer& w) { w.Int(-1); })).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(valid_with("partitions", [](msgpack::Writer& w) { w.Int(0); })).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(valid_with("partitions", [](msgpack::Writer& w) { w.Int(10001); })).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(valid_with("lsn", [](msgpack::Writer& w) { w.Int(-1); })).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(valid_with("time", [](msgpack::Writer& w) { w.Int(5); })).code(), Code::kInvalidInput);
  // Missing lsn.
  EXPECT_EQ(Decode(entry([](msgpack::Writer& w) {
              w.Str("derived"); w.Str("Idx");
              w.Str("source"); w.Str("People");
              w.Str("partition"); w.Int(0);
              w.Str("partitions"); w.Int(2);
            }, 4)).code(), Code::kInvalidInput);
  // Counts: over the limit, or more than the bytes can hold.
  auto declared = [](Op op, const char* key, uint32_t n) {
    return Frame(op, [&](msgpack::Writer& w) {
      w.MapHeader(2);
      w.Str("table"); w.Str("Idx");
      w.Str(key);
      w.ArrayHeader(n);
    });
  };
  EXPECT_EQ(Decode(declared(Op::kAdvanceWatermarks, "watermarks", 1001)).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(declared(Op::kAdvanceWatermarks, "watermarks", 1000)).code(), Code::kInvalidInput);  // truncated
  EXPECT_EQ(Decode(declared(Op::kAdvanceWatermarks, "watermarks", 0)).code(), Code::kInvalidInput);     // empty
  EXPECT_EQ(Decode(declared(Op::kQuery, "after", 65)).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(declared(Op::kQuery, "after", 64)).code(), Code::kInvalidInput);  // truncated
  EXPECT_TRUE(Decode(declared(Op::kQuery, "after", 0)).ok());
}

TEST(WireSession, MalformedTokensAndWaitAreInvalidInput) {
  auto get = [](const std::function<void(msgpack::Writer&)>& extra) {
    return Frame(Op::kGet, [&](msgpack::Writer& w) {
      w.MapHeader(4);
      w.Str("table"); w.Str("Idx");
      w.Str("pk"); w.Str("p");
      w.Str("rk"); w.Str("r");
      extra(w);
    });
  };
  auto token = [&](const std::function<void(msgpack::Writer&)>& fields, uint32_t n) {
    return get([&](msgpack::Writer& w) {
      w.Str("after");
      w.ArrayHeader(1);
      w.MapHeader(n);
      fields(w);
    });
  };
  Request ok;
  ASSERT_TRUE(DecodeRequest(token([](msgpack::Writer& w) { w.Str("source"); w.Str("People"); w.Str("lsn"); w.Uint(3); }, 2),
                            &ok).ok());
  EXPECT_EQ(ok.after.at(0).lsn, 3u);
  EXPECT_EQ(Decode(token([](msgpack::Writer& w) { w.Str("source"); w.Str("People"); }, 1)).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(token([](msgpack::Writer& w) { w.Str("lsn"); w.Uint(3); }, 1)).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(token([](msgpack::Writer& w) { w.Str("source"); w.Str("1x1"); w.Str("lsn"); w.Uint(3); }, 2)).code(),
            Code::kInvalidInput);
  EXPECT_EQ(Decode(token([](msgpack::Writer& w) { w.Str("source"); w.Str("People"); w.Str("lsn"); w.Str("3"); }, 2)).code(),
            Code::kInvalidInput);
  EXPECT_EQ(Decode(get([](msgpack::Writer& w) { w.Str("after"); w.Str("People"); })).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(get([](msgpack::Writer& w) { w.Str("waitMs"); w.Uint(60001); })).code(), Code::kInvalidInput);
  EXPECT_EQ(Decode(get([](msgpack::Writer& w) { w.Str("waitMs"); w.Int(-1); })).code(), Code::kInvalidInput);
  EXPECT_TRUE(Decode(get([](msgpack::Writer& w) { w.Str("waitMs"); w.Uint(60000); })).ok());
  EXPECT_EQ(Decode(Frame(Op::kReadWatermarks, [](msgpack::Writer& w) {
              w.MapHeader(1);
              w.Str("derived");
              w.Str("\xc3\x28");
            })).code(),
            Code::kInvalidInput);
  // ForgetWatermarks names its table: without one it would be read as "all".
  Status no_table =
      Decode(Frame(Op::kForgetWatermarks, [](msgpack::Writer& w) { w.MapHeader(0); }));
  EXPECT_EQ(no_table.code(), Code::kInvalidInput);
  EXPECT_NE(no_table.message().find("needs 'derived'"), std::string::npos) << no_table.ToString();
}

}  // namespace
}  // namespace sidetable::wire
