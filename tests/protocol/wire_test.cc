// The wire protocol codec: round trips of every message, exact Edm values,
// and every malformed input answered with InvalidInput.
#include "protocol/wire.h"

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include <cmath>
#include <limits>
#include <random>

namespace sidetable::wire {
namespace {

Entity Rich() {
  Entity e;
  e.partition_key = "p\xC3\xA9";
  e.row_key = "\xF0\x9F\x98\x80";
  e.Set("s", Value::String("text")).Set("b", Value::Binary(std::string("\0\xFF", 2)))
      .Set("t", Value::Boolean(false)).Set("d", Value::DateTime(kMaxDateTimeTicks))
      .Set("x", Value::Double(-0.0)).Set("inf", Value::Double(INFINITY))
      .Set("g", Value::MakeGuid(*ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")))
      .Set("i", Value::Int32(INT32_MIN)).Set("l", Value::Int64(INT64_MIN))
      .Set("m", Value::Int64(INT64_MAX)).Set("small", Value::Int64(1));
  return e;
}

Request RoundTrip(const Request& in) {
  std::string frame;
  EncodeRequest(in, &frame);
  Request out;
  Status s = DecodeRequest(frame, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

TEST(Wire, WriteRequestKeepsEveryTypeExactly) {
  Request r;
  r.op = Op::kWrite;
  r.id = 0xFEDCBA9876543210ull;
  r.table = "People";
  r.caller = "svc";
  r.ops.push_back({OpKind::kInsert, Rich(), ""});
  r.ops.push_back({OpKind::kDelete, Rich(), "W/\"5\""});
  r.ops[1].entity.properties.clear();
  Request out = RoundTrip(r);
  EXPECT_EQ(out.id, r.id);
  EXPECT_EQ(out.op, Op::kWrite);
  EXPECT_EQ(out.table, "People");
  EXPECT_EQ(out.caller, "svc");
  ASSERT_EQ(out.ops.size(), 2u);
  EXPECT_EQ(out.ops[0].entity.properties, r.ops[0].entity.properties);
  EXPECT_EQ(out.ops[0].entity.partition_key, r.ops[0].entity.partition_key);
  EXPECT_EQ(out.ops[0].entity.row_key, r.ops[0].entity.row_key);
  EXPECT_EQ(out.ops[1].kind, OpKind::kDelete);
  EXPECT_EQ(out.ops[1].if_match, "W/\"5\"");
  // Int64 1 stays Int64 (ext), not Int32.
  EXPECT_EQ(out.ops[0].entity.Find("small")->type(), EdmType::kInt64);
}

// The client encodes its caller's operations in place (borrowed_ops): the
// frame must be the very bytes of the same operations owned by the request,
// for a write and for each item of a WriteMany.
TEST(Wire, BorrowedOperationsEncodeAsOwnedOnes) {
  const std::vector<Operation> ops = {{OpKind::kInsert, Rich(), ""},
                                      {OpKind::kUpdate, Rich(), "W/\"5\""},
                                      {OpKind::kFencedUpsert, Rich(), "", 9}};
  Request owned;
  owned.op = Op::kWrite;
  owned.table = "People";
  owned.ops = ops;
  owned.client_request_id = "id-1";
  Request borrowed = owned;
  borrowed.ops.clear();
  borrowed.borrowed_ops = &ops;
  std::string a, b;
  EncodeRequest(owned, &a);
  EncodeRequest(borrowed, &b);
  EXPECT_EQ(a, b);
  Request out = RoundTrip(borrowed);
  ASSERT_EQ(out.ops.size(), 3u);
  EXPECT_EQ(out.ops[1].if_match, "W/\"5\"");
  EXPECT_EQ(out.ops[2].fence, 9u);
  EXPECT_EQ(out.borrowed_ops, nullptr);

  Request many_owned;
  many_owned.op = Op::kWriteMany;
  many_owned.writes.push_back({"A1x", ops, "x"});
  many_owned.writes.push_back({"B1x", {ops[0]}, ""});
  Request many_borrowed = many_owned;
  many_borrowed.writes[0].ops.clear();
  many_borrowed.writes[0].borrowed_ops = &ops;
  a.clear();
  b.clear();
  EncodeRequest(many_owned, &a);
  EncodeRequest(many_borrowed, &b);
  EXPECT_EQ(a, b);
  // Both set: the borrowed ones are what is sent.
  Request both = owned;
  const std::vector<Operation> one = {ops[0]};
  both.borrowed_ops = &one;
  EXPECT_EQ(RoundTrip(both).ops.size(), 1u);
}

TEST(Wire, QueryAndChangesRequests) {
  Request q;
  q.op = Op::kQuery;
  q.table = "T1x";
  q.filter = "PartitionKey eq 'a'";
  q.select = {"a", "b"};
  q.top = 10;
  q.next_pk = "p";
  q.next_rk = "";
  Request out = RoundTrip(q);
  EXPECT_EQ(out.filter, q.filter);
  EXPECT_EQ(out.select, q.select);
  EXPECT_EQ(out.top, 10);
  EXPECT_EQ(out.next_pk, "p");
  EXPECT_EQ(out.next_rk, "");
  Request c;
  c.op = Op::kReadChanges;
  c.from_lsn = 1ull << 40;
  c.max_records = 7;
  Request cout = RoundTrip(c);
  EXPECT_EQ(cout.from_lsn, 1ull << 40);
  EXPECT_EQ(cout.max_records, 7u);
}

// A client reads the continuation before decoding the page (read-ahead):
// the peek must agree with the full decode, with and without a continuation,
// and refuse what the full decode refuses, with its code.
TEST(Wire, PeekQueryContinuationAgreesWithDecodeQuery) {
  QueryReply q;
  q.entities = {Rich(), Rich(), Rich()};
  q.next_pk = "next pk";
  q.next_rk = "";  // an empty RowKey is a continuation too
  q.plan = "partition-scan";
  std::string body;
  EncodeQuery(q, &body);
  std::optional<std::string> npk = "stale", nrk = "stale";
  ASSERT_TRUE(PeekQueryContinuation(body, &npk, &nrk).ok());
  QueryReply full;
  ASSERT_TRUE(DecodeQuery(body, &full).ok());
  EXPECT_EQ(npk, full.next_pk);
  EXPECT_EQ(nrk, full.next_rk);
  EXPECT_EQ(npk, "next pk");
  EXPECT_EQ(nrk, "");

  // The last page: no continuation, and what the caller passed is reset.
  q.next_pk.reset();
  q.next_rk.reset();
  body.clear();
  EncodeQuery(q, &body);
  ASSERT_TRUE(PeekQueryContinuation(body, &npk, &nrk).ok());
  EXPECT_FALSE(npk.has_value());
  EXPECT_FALSE(nrk.has_value());

  // Cut anywhere inside the entities, the body is refused, as DecodeQuery does.
  q.next_pk = "a";
  q.next_rk = "b";
  body.clear();
  EncodeQuery(q, &body);
  for (size_t cut : {size_t{1}, body.size() / 3, body.size() / 2, body.size() - 1}) {
    std::string_view part(body.data(), cut);
    QueryReply ignored;
    const Status full_status = DecodeQuery(part, &ignored);
    EXPECT_FALSE(full_status.ok()) << cut;
    EXPECT_EQ(PeekQueryContinuation(part, &npk, &nrk).code(), full_status.code()) << cut;
  }
  // A continuation that is not a string.
  std::string bad;
  msgpack::Writer w(&bad);
  w.MapHeader(1);
  w.Str("npk");
  w.Uint(7);
  EXPECT_EQ(PeekQueryContinuation(bad, &npk, &nrk).code(), Code::kInternal);  // a malformed reply
}

// A page read in place (the client's PageView) must describe exactly what
// DecodeQuery builds: keys, ETag, timestamp, every property and its value,
// selected-but-absent properties absent, whole entities and $select alike.
TEST(Wire, IndexQueryAgreesWithDecodeQuery) {
  for (bool selected : {false, true}) {
    QueryReply q;
    q.entities = {Rich(), Rich()};
    q.entities[0].etag = "W/\"9\"";
    q.entities[0].timestamp = 12345;
    q.entities[1].row_key = "second";
    q.entities[1].Remove("g");  // lacks one property the $select names
    if (selected) q.select = {"RowKey", "Timestamp", "s", "g", "l", "missing"};
    q.next_pk = "n";
    q.next_rk = "m";
    q.plan = "partition-scan";
    q.examined = 77;
    std::string body;
    EncodeQuery(q, &body);
    QueryReply full;
    ASSERT_TRUE(DecodeQuery(body, &full).ok());
    QueryIndex index;
    ASSERT_TRUE(IndexQuery(body, &index).ok());
    EXPECT_EQ(index.next_pk, full.next_pk);
    EXPECT_EQ(index.next_rk, full.next_rk);
    EXPECT_EQ(index.plan, full.plan);
    EXPECT_EQ(index.examined, full.examined);
    ASSERT_EQ(index.entities.size(), full.entities.size());
    for (size_t i = 0; i < full.entities.size(); i++) {
      const Entity& want = full.entities[i];
      const EntityRef& ref = index.entities[i];
      EXPECT_EQ(ref.pk, want.partition_key) << selected;
      EXPECT_EQ(ref.rk, want.row_key) << selected;
      EXPECT_EQ(ref.etag, want.etag) << selected;
      EXPECT_EQ(ref.timestamp, want.timestamp) << selected;
      Entity built;
      ASSERT_TRUE(EntityFromRef(ref, &built).ok());
      EXPECT_EQ(built.properties, want.properties) << selected << " entity " << i;
      for (const Property& p : want.properties) {
        PropertyView v;
        ASSERT_TRUE(FindProperty(ref, p.name, &v)) << p.name;
        EXPECT_EQ(v.ToValue(), p.value) << p.name;
      }
      PropertyView v;
      EXPECT_FALSE(FindProperty(ref, "missing", &v)) << "nil: selected, and absent";
      EXPECT_FALSE(FindProperty(ref, "nope", &v));
      EXPECT_EQ(FindProperty(ref, "g", &v), want.Find("g") != nullptr);
    }
  }
}

// Found by query_page_fuzz: a body with "entities" twice. DecodeQuery kept
// the first array's elements and read the second into them (keys kept,
// properties appended); both readers now take the second array alone.
TEST(Wire, ARepeatedEntitiesArrayIsReadFresh) {
  std::string body;
  msgpack::Writer w(&body);
  w.MapHeader(2);
  for (int twice = 0; twice < 2; twice++) {
    w.Str("entities");
    w.ArrayHeader(1);
    w.MapHeader(twice ? 1 : 2);
    if (!twice) {
      w.Str("pk");
      w.Str("first");
    }
    w.Str("props");
    w.MapHeader(1);
    w.Str(twice ? "b" : "a");
    w.Int(twice);
  }
  QueryReply full;
  ASSERT_TRUE(DecodeQuery(body, &full).ok());
  ASSERT_EQ(full.entities.size(), 1u);
  EXPECT_EQ(full.entities[0].partition_key, "");
  ASSERT_EQ(full.entities[0].properties.size(), 1u);
  EXPECT_EQ(full.entities[0].properties[0].name, "b");
  QueryIndex index;
  ASSERT_TRUE(IndexQuery(body, &index).ok());
  ASSERT_EQ(index.entities.size(), 1u);
  EXPECT_EQ(index.entities[0].pk, "");
  Entity built;
  ASSERT_TRUE(EntityFromRef(index.entities[0], &built).ok());
  EXPECT_EQ(built.properties, full.entities[0].properties);
}

// IndexQuery checks every value when the page arrives (so a view's reads
// cannot fail later) and refuses what DecodeQuery refuses, with its code.
TEST(Wire, IndexQueryRefusesWhatDecodeQueryRefuses) {
  QueryReply q;
  q.entities = {Rich(), Rich(), Rich()};
  q.next_pk = "a";
  q.next_rk = "b";
  std::string good;
  EncodeQuery(q, &good);
  std::vector<std::string> bad;
  for (size_t cut : {size_t{1}, good.size() / 4, good.size() / 2, good.size() - 1}) bad.push_back(good.substr(0, cut));
  // A property value that is no Edm type (an array), and an ext of the wrong length.
  for (int variant = 0; variant < 2; variant++) {
    std::string body;
    msgpack::Writer w(&body);
    w.MapHeader(1);
    w.Str("entities");
    w.ArrayHeader(1);
    w.MapHeader(2);
    w.Str("rk");
    w.Str("r");
    w.Str("props");
    w.MapHeader(1);
    w.Str("v");
    if (variant == 0) {
      w.ArrayHeader(0);
    } else {
      w.Ext(kExtInt64, std::string(3, '\0'));
    }
    bad.push_back(body);
  }
  // An entity map with a field twice (here "props"): refused, in replies
  // and requests alike, instead of the two readers keeping different ones.
  {
    std::string entity;
    msgpack::Writer w(&entity);
    w.MapHeader(4);
    w.Str("pk");
    w.Str("p");
    w.Str("rk");
    w.Str("r");
    for (int twice = 0; twice < 2; twice++) {
      w.Str("props");
      w.MapHeader(1);
      w.Str(twice ? "b" : "a");
      w.Int(twice);
    }
    Entity e;
    msgpack::Reader r(entity);
    const Status s = ReadEntity(r, &e, EntityRead::kRequest);
    EXPECT_EQ(s.code(), Code::kInvalidInput);
    EXPECT_NE(s.message().find("repeated"), std::string::npos) << s.message();
    std::string body;
    msgpack::Writer b(&body);
    b.MapHeader(1);
    b.Str("entities");
    b.ArrayHeader(1);
    body += entity;
    bad.push_back(body);
  }
  for (const std::string& body : bad) {
    QueryReply full;
    const Status want = DecodeQuery(body, &full);
    ASSERT_FALSE(want.ok()) << body.size();
    QueryIndex index;
    EXPECT_EQ(IndexQuery(body, &index).code(), want.code()) << body.size();
  }
}

TEST(Wire, RepliesRoundTrip) {
  std::string body;
  QueryReply q;
  q.entities = {Rich(), Rich()};
  q.entities[0].etag = "W/\"9\"";
  q.entities[0].timestamp = 12345;
  q.next_pk = "n";
  q.next_rk = "m";
  q.plan = "partition-scan";
  q.examined = 77;
  EncodeQuery(q, &body);
  QueryReply back;
  ASSERT_TRUE(DecodeQuery(body, &back).ok());
  ASSERT_EQ(back.entities.size(), 2u);
  EXPECT_EQ(back.entities[0].properties, q.entities[0].properties);
  EXPECT_EQ(back.entities[0].etag, "W/\"9\"");
  EXPECT_EQ(back.entities[0].timestamp, 12345);
  EXPECT_EQ(back.next_pk, "n");
  EXPECT_EQ(back.examined, 77u);

  ChangeBatch cb;
  ChangeRecord rec;
  rec.lsn = 5;
  rec.kind = ChangeKind::kEntities;
  rec.commit_time = 99;
  rec.table = "T";
  rec.table_id = 3;
  rec.partition_key = "p";
  rec.caller = "me";
  ChangeOp op;
  op.row_key = "r";
  op.kind = OpKind::kMerge;
  op.version = 5;
  op.etag = "W/\"5\"";
  op.before = Rich();
  op.after = Rich();
  rec.ops.push_back(op);
  cb.records.push_back(rec);
  cb.first_available_lsn = 2;
  cb.last_lsn = 9;
  body.clear();
  EncodeChanges(cb, &body);
  ChangeBatch cb2;
  ASSERT_TRUE(DecodeChanges(body, &cb2).ok());
  ASSERT_EQ(cb2.records.size(), 1u);
  EXPECT_EQ(cb2.records[0].caller, "me");
  EXPECT_EQ(cb2.records[0].client_request_id, "") << "absent when the writer sent none";
  EXPECT_EQ(cb2.records[0].commit_time, 99);
  EXPECT_EQ(cb2.records[0].ops[0].before->properties, op.before->properties);
  EXPECT_FALSE(cb2.records[0].ops[0].after->properties.empty());
  EXPECT_EQ(cb2.first_available_lsn, 2u);
}

TEST(Wire, ErrorReplyCarriesCodeMessageAndIndex) {
  std::string frame;
  Header req{kVersion, static_cast<uint8_t>(Op::kWrite), 0, 42};
  EncodeError(req, Status(Code::kInvalidDuplicateRow, "twice", 3), &frame);
  Header h;
  std::string_view body;
  Status s = DecodeReply(frame, &h, &body);
  EXPECT_EQ(h.status, 400);
  EXPECT_EQ(h.request_id, 42u);
  EXPECT_EQ(s.code(), Code::kInvalidDuplicateRow);
  EXPECT_EQ(s.message(), "twice");
  EXPECT_EQ(s.op_index(), 3);
}

Status DecodeBytes(const std::string& frame) {
  Request r;
  return DecodeRequest(frame, &r);
}

std::string HeaderBytes(uint8_t version, uint8_t op, uint16_t status = 0) {
  std::string f;
  AppendHeader(&f, Header{version, op, status, 1});
  return f;
}

TEST(Wire, MalformedRequestsAreInvalidInput) {
  EXPECT_EQ(DecodeBytes("").code(), Code::kInvalidInput);
  EXPECT_EQ(DecodeBytes("short").code(), Code::kInvalidInput);
  EXPECT_EQ(DecodeBytes(HeaderBytes(2, 1) + "\x80").code(), Code::kInvalidInput);  // version
  EXPECT_EQ(DecodeBytes(HeaderBytes(1, 0) + "\x80").code(), Code::kInvalidInput);  // op 0
  EXPECT_EQ(DecodeBytes(HeaderBytes(1, 99) + "\x80").code(), Code::kInvalidInput);
  EXPECT_EQ(DecodeBytes(HeaderBytes(1, 1, 200) + "\x80").code(), Code::kInvalidInput);
  EXPECT_EQ(DecodeBytes(HeaderBytes(1, 1)).code(), Code::kInvalidInput);            // no body
  EXPECT_EQ(DecodeBytes(HeaderBytes(1, 1) + "\x91\x01").code(), Code::kInvalidInput);  // array
  EXPECT_EQ(DecodeBytes(HeaderBytes(1, 1) + std::string("\x80\x00", 2)).code(), Code::kInvalidInput);  // trailing
  EXPECT_EQ(DecodeBytes(HeaderBytes(1, 1) + "\x81\xA5table\x05").code(), Code::kInvalidInput);
  EXPECT_EQ(DecodeBytes(HeaderBytes(1, 2) + "\x80").code(), Code::kInvalidInput);  // no table
  EXPECT_TRUE(DecodeBytes(HeaderBytes(1, 1) + "\x80").ok());  // a valid Ping
  // nil means "absent" for any field: {"filter": nil, "top": nil} is a plain query.
  {
    std::string f = HeaderBytes(1, 7);
    msgpack::Writer w(&f);
    w.MapHeader(3);
    w.Str("table");
    w.Str("Tbl");
    w.Str("filter");
    w.Nil();
    w.Str("top");
    w.Nil();
    Request r;
    ASSERT_TRUE(DecodeRequest(f, &r).ok());
    EXPECT_TRUE(r.filter.empty());
    EXPECT_FALSE(r.top.has_value());
  }
  // Unknown fields are skipped.
  EXPECT_TRUE(DecodeBytes(HeaderBytes(1, 1) + "\x81\xA3new\x92\x01\x02").ok());
}

// One operation, {"op": "Delete", "entity": {"pk": "p", "rk": "r"}}.
void WriteDeleteOp(msgpack::Writer& w) {
  w.MapHeader(2);
  w.Str("op");
  w.Str("Delete");
  w.Str("entity");
  w.MapHeader(2);
  w.Str("pk");
  w.Str("p");
  w.Str("rk");
  w.Str("r");
}

// A request frame of `op` whose body `body` writes (a map of `fields`).
template <typename Body>
std::string Frame(Op op, uint32_t fields, Body body) {
  std::string f = HeaderBytes(1, static_cast<uint8_t>(op));
  msgpack::Writer w(&f);
  w.MapHeader(fields);
  body(w);
  return f;
}

// "" is a valid PartitionKey and RowKey, so a missing key field must not
// read as one: a misspelled field would read the empty-key entity. An
// empty clientRequestId is not "no id" (the write would lose its retry
// protection without a word). Each message names what is wrong.
TEST(Wire, MissingKeysAndEmptyIdsAreRefusedNotDefaulted) {
  auto get = [](bool pk, bool rk) {
    return Frame(Op::kGet, 1 + pk + rk, [&](msgpack::Writer& w) {
      w.Str("table");
      w.Str("T");
      if (pk) {
        w.Str("pk");
        w.Str("");
      }
      if (rk) {
        w.Str("rk");
        w.Str("");
      }
    });
  };
  Request r;
  ASSERT_TRUE(DecodeRequest(get(true, true), &r).ok());  // the entity ("", "")
  EXPECT_TRUE(r.pk.empty() && r.rk.empty());
  for (auto [pk, rk] : {std::pair{false, true}, {true, false}, {false, false}}) {
    Status s = DecodeBytes(get(pk, rk));
    EXPECT_EQ(s.code(), Code::kInvalidInput) << pk << rk;
    EXPECT_EQ(s.message(), "Get needs 'table', 'pk' and 'rk'");
  }
  // A misspelled field is skipped as unknown, so the key is still missing.
  EXPECT_EQ(DecodeBytes(Frame(Op::kGet, 3,
                              [](msgpack::Writer& w) {
                                w.Str("table");
                                w.Str("T");
                                w.Str("pk");
                                w.Str("p");
                                w.Str("rowKey");
                                w.Str("r");
                              }))
                .code(),
            Code::kInvalidInput);

  auto archive = [](bool pk) {
    return Frame(Op::kRequestArchive, 3 + pk, [&](msgpack::Writer& w) {
      w.Str("table");
      w.Str("T");
      w.Str("target");
      w.Str("Arch");
      w.Str("rks");
      w.ArrayHeader(1);
      w.Str("a");
      if (pk) {
        w.Str("pk");
        w.Str("");
      }
    });
  };
  EXPECT_TRUE(DecodeBytes(archive(true)).ok());
  Status a = DecodeBytes(archive(false));
  EXPECT_EQ(a.code(), Code::kInvalidInput);
  EXPECT_EQ(a.message(), "RequestArchive needs 'table', 'pk', 'rks' and 'target'");

  Status id = DecodeBytes(Frame(Op::kWrite, 2, [](msgpack::Writer& w) {
    w.Str("table");
    w.Str("T");
    w.Str("clientRequestId");
    w.Str("");
  }));
  EXPECT_EQ(id.code(), Code::kInvalidInput);
  EXPECT_NE(id.message().find("client request id has 1 to 128"), std::string::npos) << id.message();
  Status item_id = DecodeBytes(Frame(Op::kWriteMany, 1, [](msgpack::Writer& w) {
    w.Str("writes");
    w.ArrayHeader(1);
    w.MapHeader(2);
    w.Str("clientRequestId");
    w.Str("");
    w.Str("table");
    w.Str("T");
  }));
  EXPECT_EQ(item_id.code(), Code::kInvalidInput);
  EXPECT_EQ(item_id.message().rfind("writes[0]: a client request id has 1 to 128", 0), 0u)
      << item_id.message();
}

// nil is absent inside an operation and an entity too (docs/protocol.md), as
// it was for the request's own fields only; an operation field given twice
// is refused, as an entity field given twice already was (found from
// outside: {"op":"Insert","op":"Delete"} ran a Delete).
TEST(Wire, NilIsAbsentInOperationsAndEntitiesAndRepeatsAreRefused) {
  auto write = [](auto op_body, uint32_t op_fields) {
    return Frame(Op::kWrite, 2, [&](msgpack::Writer& w) {
      w.Str("table");
      w.Str("T");
      w.Str("ops");
      w.ArrayHeader(1);
      w.MapHeader(op_fields);
      op_body(w);
    });
  };
  auto entity = [](msgpack::Writer& w, bool nil_extras) {
    w.MapHeader(nil_extras ? 5 : 2);
    w.Str("pk");
    w.Str("p");
    w.Str("rk");
    w.Str("r");
    if (nil_extras) {
      for (const char* k : {"props", "ts", "etag"}) {
        w.Str(k);
        w.Nil();
      }
    }
  };
  Request q;
  ASSERT_TRUE(DecodeRequest(write(
                                [&](msgpack::Writer& w) {
                                  w.Str("op");
                                  w.Str("Merge");
                                  w.Str("entity");
                                  entity(w, true);
                                  w.Str("ifMatch");
                                  w.Nil();
                                  w.Str("fence");
                                  w.Nil();
                                },
                                4),
                            &q)
                  .ok());
  ASSERT_EQ(q.ops.size(), 1u);
  EXPECT_EQ(q.ops[0].if_match, "");
  EXPECT_EQ(q.ops[0].fence, 0u);
  EXPECT_TRUE(q.ops[0].entity.properties.empty());
  EXPECT_EQ(q.ops[0].entity.etag, "");
  // A nil key is a missing key.
  Status nil_pk = DecodeBytes(write(
      [&](msgpack::Writer& w) {
        w.Str("op");
        w.Str("Delete");
        w.Str("entity");
        w.MapHeader(2);
        w.Str("pk");
        w.Nil();
        w.Str("rk");
        w.Str("r");
      },
      2));
  EXPECT_EQ(nil_pk.code(), Code::kInvalidInput);
  EXPECT_NE(nil_pk.message().find("needs pk and rk"), std::string::npos) << nil_pk.message();
  // A nil op is a missing op.
  Status nil_op = DecodeBytes(write(
      [&](msgpack::Writer& w) {
        w.Str("op");
        w.Nil();
        w.Str("entity");
        entity(w, false);
      },
      2));
  EXPECT_EQ(nil_op.code(), Code::kInvalidInput);
  EXPECT_NE(nil_op.message().find("needs 'op' and 'entity'"), std::string::npos)
      << nil_op.message();
  for (const char* twice : {"op", "ifMatch", "fence", "entity"}) {
    Status rep = DecodeBytes(write(
        [&](msgpack::Writer& w) {
          w.Str("op");
          w.Str("Insert");
          w.Str("entity");
          entity(w, false);
          w.Str(twice);
          if (std::string_view(twice) == "op") w.Str("Delete");
          if (std::string_view(twice) == "ifMatch") w.Str("*");
          if (std::string_view(twice) == "fence") w.Uint(1);
          if (std::string_view(twice) == "entity") entity(w, false);
          if (std::string_view(twice) == "ifMatch" || std::string_view(twice) == "fence") {
            w.Str(twice);
            w.Nil();  // even a nil second one
          }
        },
        std::string_view(twice) == "ifMatch" || std::string_view(twice) == "fence" ? 4 : 3));
    EXPECT_EQ(rep.code(), Code::kInvalidInput) << twice;
    EXPECT_NE(rep.message().find(std::string("operation field '") + twice + "' repeated"),
              std::string::npos)
        << rep.message();
    EXPECT_EQ(rep.op_index(), 0);
  }
}

// A request's own field given twice is refused naming it, as an operation's
// is: before, the last one counted, so a Write {"table": "A", ..., "table":
// "B"} went to B. A nil counts as given; an unknown field may repeat (it is
// skipped), and so may the same name inside an operation (its own map).
TEST(Wire, ARepeatedRequestFieldIsRefusedNamingIt) {
  // {"table": "T", "ops": [Delete p/r], "<twice>": <first>, "<twice>": <second>}
  auto write = [](const char* twice, auto first, auto second) {
    return Frame(Op::kWrite, 4, [&](msgpack::Writer& w) {
      w.Str("table");
      w.Str("T");
      w.Str("ops");
      w.ArrayHeader(1);
      WriteDeleteOp(w);
      w.Str(twice);
      first(w);
      w.Str(twice);
      second(w);
    });
  };
  auto str = [](const char* v) { return [v](msgpack::Writer& w) { w.Str(v); }; };
  auto nil = [](msgpack::Writer& w) { w.Nil(); };
  auto ops = [](msgpack::Writer& w) {
    w.ArrayHeader(1);
    WriteDeleteOp(w);
  };
  struct Case {
    const char* field;
    std::string frame;
  };
  const Case cases[] = {
      {"caller", write("caller", str("a"), str("b"))},
      {"clientRequestId", write("clientRequestId", str("id1"), str("id2"))},
      {"token", write("token", nil, str("t"))},  // nil first: still said twice
      {"noContent", write(
                        "noContent", [](msgpack::Writer& w) { w.Bool(true); }, nil)},
      {"filter", write("filter", str("x"), str("y"))},
  };
  for (const Case& c : cases) {
    Status s = DecodeBytes(c.frame);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << c.field;
    EXPECT_NE(s.message().find(std::string("request field '") + c.field + "' repeated"),
              std::string::npos)
        << s.message();
  }
  // The fields that say where a request goes: table, pk, rk, ops.
  std::string two_tables = Frame(Op::kWrite, 3, [&](msgpack::Writer& w) {
    w.Str("table");
    w.Str("A");
    w.Str("ops");
    ops(w);
    w.Str("table");
    w.Str("B");
  });
  Status t = DecodeBytes(two_tables);
  EXPECT_EQ(t.code(), Code::kInvalidInput);
  EXPECT_NE(t.message().find("request field 'table' repeated"), std::string::npos) << t.message();
  std::string two_ops = Frame(Op::kWrite, 3, [&](msgpack::Writer& w) {
    w.Str("table");
    w.Str("A");
    w.Str("ops");
    ops(w);
    w.Str("ops");
    ops(w);
  });
  EXPECT_NE(DecodeBytes(two_ops).message().find("request field 'ops' repeated"), std::string::npos);
  for (const char* key : {"pk", "rk"}) {
    std::string get = Frame(Op::kGet, 4, [&](msgpack::Writer& w) {
      w.Str("table");
      w.Str("A");
      w.Str("pk");
      w.Str("p");
      w.Str("rk");
      w.Str("r");
      w.Str(key);
      w.Str("other");
    });
    Status g = DecodeBytes(get);
    EXPECT_EQ(g.code(), Code::kInvalidInput) << key;
    EXPECT_NE(g.message().find(std::string("request field '") + key + "' repeated"),
              std::string::npos)
        << g.message();
  }
  // A repeated field inside one of WriteMany's batches, likewise.
  std::string many = Frame(Op::kWriteMany, 1, [&](msgpack::Writer& w) {
    w.Str("writes");
    w.ArrayHeader(1);
    w.MapHeader(3);
    w.Str("table");
    w.Str("A");
    w.Str("ops");
    ops(w);
    w.Str("table");
    w.Str("B");
  });
  Status m = DecodeBytes(many);
  EXPECT_EQ(m.code(), Code::kInvalidInput);
  EXPECT_NE(m.message().find("writes[0]: field 'table' repeated"), std::string::npos)
      << m.message();
  // Still accepted: an unknown field twice, and each known field once
  // (with "op" and "entity" inside the operation, a separate map).
  Request ok;
  ASSERT_TRUE(DecodeRequest(write("futureField", str("a"), str("b")), &ok).ok());
  EXPECT_EQ(ok.table, "T");
  ASSERT_EQ(ok.ops.size(), 1u);
}

// Operations that are not maps, and batches without operations, get a
// message about what they are, not about the frame's length.
TEST(Wire, OperationsThatAreNotMapsAreNamedWithTheirIndex) {
  Status s = DecodeBytes(Frame(Op::kWrite, 2, [](msgpack::Writer& w) {
    w.Str("table");
    w.Str("T");
    w.Str("ops");
    w.ArrayHeader(1);
    w.Uint(5);
  }));
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_EQ(s.message(), "an operation must be a map");
  EXPECT_EQ(s.op_index(), 0);
  // Declared 3, holds 1: the second is the one missing.
  Status short_frame = DecodeBytes(Frame(Op::kWrite, 2, [](msgpack::Writer& w) {
    w.Str("table");
    w.Str("T");
    w.Str("ops");
    w.ArrayHeader(3);
    WriteDeleteOp(w);
  }));
  EXPECT_EQ(short_frame.code(), Code::kInvalidInput);
  EXPECT_EQ(short_frame.message(), "an operation must be a map");
  EXPECT_EQ(short_frame.op_index(), 1);
  Status empty_ops = DecodeBytes(Frame(Op::kWriteMany, 1, [](msgpack::Writer& w) {
    w.Str("writes");
    w.ArrayHeader(1);
    w.MapHeader(2);
    w.Str("table");
    w.Str("T");
    w.Str("ops");
    w.ArrayHeader(0);
  }));
  EXPECT_EQ(empty_ops.code(), Code::kInvalidInput);
  EXPECT_EQ(empty_ops.message(), "writes[0] needs 'ops' (1 to 100 operations)");
  Status no_table = DecodeBytes(Frame(Op::kWriteMany, 1, [](msgpack::Writer& w) {
    w.Str("writes");
    w.ArrayHeader(1);
    w.MapHeader(1);
    w.Str("ops");
    w.ArrayHeader(1);
    WriteDeleteOp(w);
  }));
  EXPECT_EQ(no_table.message(), "writes[0] needs 'table'");
}

std::string WriteWithValue(const std::string& encoded_value) {
  // {"table":"T","ops":[{"op":"Insert","entity":{"pk":"p","rk":"r","props":{"v":<value>}}}]}
  std::string f = HeaderBytes(1, 5);
  msgpack::Writer w(&f);
  w.MapHeader(2);
  w.Str("table");
  w.Str("Tbl");
  w.Str("ops");
  w.ArrayHeader(1);
  w.MapHeader(2);
  w.Str("op");
  w.Str("Insert");
  w.Str("entity");
  w.MapHeader(3);
  w.Str("pk");
  w.Str("p");
  w.Str("rk");
  w.Str("r");
  w.Str("props");
  w.MapHeader(1);
  w.Str("v");
  f += encoded_value;
  return f;
}

TEST(Wire, IssueTokenRequestAndReplyRoundTrip) {
  Request in;
  in.op = Op::kIssueToken;
  in.id = 9;
  in.token = "v=1&kid=k1";
  token::TokenSpec s;
  s.table = "acme";
  s.table_is_prefix = true;
  s.start_pk = "acme|";
  s.start_rk = "";
  s.end_pk = "acme|~";
  s.end_rk = "z \xC3\xA9&=%";
  s.permissions = token::ParsePermissions("ra").value();
  s.start = token::ParseTime("2026-01-01T00:00:00Z").value();
  s.expiry = token::ParseTime("2026-12-31T23:59:59Z").value();
  s.tenant = "acme";
  s.identity = "acme web/1";
  in.issue = s;
  Request out = RoundTrip(in);
  EXPECT_EQ(out.op, Op::kIssueToken);
  EXPECT_EQ(OpName(out.op), "IssueToken");
  ASSERT_TRUE(out.issue.has_value());
  // The same fields give the same canonical token text.
  EXPECT_EQ(token::CanonicalString("k1", *out.issue), token::CanonicalString("k1", s));
  s.table_is_prefix = false;
  s.table = "orders";
  s.policy_id = "readers";
  s.permissions.reset();
  in.issue = s;
  out = RoundTrip(in);
  ASSERT_TRUE(out.issue.has_value());
  EXPECT_EQ(token::CanonicalString("k1", *out.issue), token::CanonicalString("k1", s));

  std::string reply;
  EncodeIssuedToken("v=1&kid=k1&sig=x", &reply);
  std::string text;
  ASSERT_TRUE(DecodeIssuedToken(reply, &text).ok());
  EXPECT_EQ(text, "v=1&kid=k1&sig=x");
  reply.clear();
  EncodeEmpty(&reply);
  EXPECT_EQ(DecodeIssuedToken(reply, &text).code(), Code::kInternal);
}

TEST(Wire, BadIssueTokenSpecsAreInvalidInput) {
  // {"spec": <fields>} as op 15.
  auto decode = [](const std::function<void(msgpack::Writer&)>& spec) {
    std::string f = HeaderBytes(1, 15);
    msgpack::Writer w(&f);
    w.MapHeader(1);
    w.Str("spec");
    spec(w);
    Request r;
    return DecodeRequest(f, &r);
  };
  auto fields = [&](std::vector<std::pair<std::string, std::string>> kv) {
    return decode([&](msgpack::Writer& w) {
      w.MapHeader(static_cast<uint32_t>(kv.size()));
      for (const auto& [k, v] : kv) {
        w.Str(k);
        w.Str(v);
      }
    });
  };
  EXPECT_TRUE(fields({{"tn", "orders"}, {"tenant", "acme"}, {"caller", "x"}}).ok());
  EXPECT_EQ(DecodeBytes(HeaderBytes(1, 15) + "\x80").code(), Code::kInvalidInput);  // no spec
  EXPECT_EQ(decode([](msgpack::Writer& w) { w.Str("tn=orders"); }).code(), Code::kInvalidInput);
  EXPECT_EQ(fields({{"tenant", "acme"}}).code(), Code::kInvalidInput);  // no table
  EXPECT_EQ(fields({{"tn", "a"}, {"tp", "b"}}).code(), Code::kInvalidInput);
  EXPECT_EQ(fields({{"tn", "a"}, {"tn", "b"}}).code(), Code::kInvalidInput);
  EXPECT_EQ(fields({{"tn", "a"}, {"sig", "b"}}).code(), Code::kInvalidInput);  // not a spec field
  EXPECT_EQ(fields({{"tn", "a"}, {"kid", "k1"}}).code(), Code::kInvalidInput);
  EXPECT_EQ(fields({{"tn", "a"}, {"sp", "rx"}}).code(), Code::kInvalidInput);
  EXPECT_EQ(fields({{"tn", "a"}, {"se", "2026-01-01 00:00:00"}}).code(), Code::kInvalidInput);
  EXPECT_EQ(fields({{"tn", "a"}, {"spk", std::string(token::kMaxKeyBoundLength + 1, 'k')}}).code(),
            Code::kInvalidInput);
  EXPECT_EQ(fields({{"tn", "a"}, {"caller", std::string(token::kMaxIdentityLength + 1, 'c')}}).code(),
            Code::kInvalidInput);
  EXPECT_EQ(decode([](msgpack::Writer& w) {
              w.MapHeader(2);
              w.Str("tn");
              w.Int(5);
            }).code(),
            Code::kInvalidInput);
  // A declared count beyond the fields there are is refused before reading on.
  EXPECT_EQ(decode([](msgpack::Writer& w) { w.MapHeader(1u << 30); }).code(), Code::kInvalidInput);
}

TEST(Wire, BadValuesAreInvalidInputWithTheOperationIndex) {
  auto code_of = [](const std::string& v) {
    Request r;
    Status s = DecodeRequest(WriteWithValue(v), &r);
    if (!s.ok()) {
      EXPECT_EQ(s.op_index(), 0) << s.ToString();
    }
    return s.code();
  };
  EXPECT_EQ(code_of("\x05"), Code::kOk);                                   // Int32 5
  EXPECT_EQ(code_of(std::string("\xCE\x80\x00\x00\x00", 5)), Code::kInvalidInput);  // 2^31
  EXPECT_EQ(code_of("\xC0"), Code::kInvalidInput);                         // nil
  EXPECT_EQ(code_of("\x90"), Code::kInvalidInput);                         // array
  EXPECT_EQ(code_of("\x80"), Code::kInvalidInput);                         // map
  EXPECT_EQ(code_of(std::string("\xD4\x09\x00", 3)), Code::kInvalidInput);  // unknown ext
  EXPECT_EQ(code_of(std::string("\xD6\x01\x00\x00\x00\x00", 6)), Code::kInvalidInput);  // Int64 of 4 bytes
  EXPECT_EQ(code_of("\xC1"), Code::kInvalidInput);                         // reserved byte
  EXPECT_EQ(code_of("\xDB\xFF\xFF\xFF\xFF"), Code::kInvalidInput);         // huge str, truncated
}

TEST(Wire, RandomBytesNeverCrash) {
  std::mt19937 rng(99);
  std::string valid;
  Request r;
  r.op = Op::kWrite;
  r.table = "Tbl";
  r.ops.push_back({OpKind::kInsert, Rich(), ""});
  EncodeRequest(r, &valid);
  int accepted = 0;
  for (int i = 0; i < 20000; i++) {
    std::string f = valid;
    for (int k = 0; k < 1 + static_cast<int>(rng() % 4); k++) f[rng() % f.size()] = static_cast<char>(rng());
    if (rng() % 4 == 0) f.resize(rng() % f.size());
    Request out;
    Status s = DecodeRequest(f, &out);
    if (s.ok()) {
      accepted++;
    } else if (s.code() != Code::kTooManyProperties) {  // a mutated props count over 252
      EXPECT_EQ(s.code(), Code::kInvalidInput);
    }
  }
  EXPECT_GT(accepted, 0);  // some mutations stay valid (e.g. changed characters)
}

}  // namespace
}  // namespace sidetable::wire

// The request fuzz target's entry point, on its seed corpus and mutations of
// it, in the normal suite (the libFuzzer run is scripts/fuzz.sh).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#include <filesystem>
#include <fstream>

namespace sidetable::wire {
namespace {

TEST(RequestFuzzReplay, SeedsAndMutationsNeverCrash) {
  std::vector<std::string> seeds;
  for (const auto& f : std::filesystem::directory_iterator(ST_REQUEST_CORPUS_DIR)) {
    std::ifstream in(f.path(), std::ios::binary);
    seeds.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  ASSERT_GE(seeds.size(), 7u);
  std::mt19937 rng(4);
  size_t accepted = 0;
  for (const auto& seed : seeds) {
    Request r;
    ASSERT_TRUE(DecodeRequest(seed, &r).ok()) << "seed must be valid";
    for (int i = 0; i < 3000; i++) {
      std::string f = seed;
      for (int k = 0; k < 1 + static_cast<int>(rng() % 3); k++) f[rng() % f.size()] = static_cast<char>(rng());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(f.data()), f.size());
      Request out;
      accepted += DecodeRequest(f, &out).ok();
    }
  }
  EXPECT_GT(accepted, 0u);
}

}  // namespace
}  // namespace sidetable::wire

namespace sidetable::wire {
namespace {

TEST(Wire, WriteManyAndFencedOperationsRoundTrip) {
  Request r;
  r.op = Op::kWriteMany;
  r.caller = "worker";
  Operation up{OpKind::kFencedUpsert, Rich(), "", 42};
  Operation del{OpKind::kFencedDelete, {}, "", 43};
  del.entity.partition_key = "p";
  del.entity.row_key = "r";
  r.writes.push_back({"Idx", {up}});
  r.writes.push_back({"Other", {del, {OpKind::kInsert, Rich(), ""}}});
  Request out = RoundTrip(r);
  EXPECT_EQ(out.op, Op::kWriteMany);
  ASSERT_EQ(out.writes.size(), 2u);
  EXPECT_EQ(out.writes[0].table, "Idx");
  ASSERT_EQ(out.writes[0].ops.size(), 1u);
  EXPECT_EQ(out.writes[0].ops[0].kind, OpKind::kFencedUpsert);
  EXPECT_EQ(out.writes[0].ops[0].fence, 42u);
  EXPECT_EQ(out.writes[0].ops[0].entity.properties, Rich().properties);
  EXPECT_EQ(out.writes[1].ops[0].fence, 43u);
  EXPECT_EQ(out.writes[1].ops[1].fence, 0u);
  auto batches = out.ToBatches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[1].caller(), "worker");
  EXPECT_EQ(batches[1].table(), "Other");

  // Replies: results in order, errors with their code and index.
  std::vector<Result<WriteResult>> results;
  WriteResult w;
  w.lsn = 7;
  w.timestamp = 123;
  w.etags = {"", "W/\"7\""};
  w.skipped = {0};
  results.push_back(w);
  results.push_back(Status(Code::kEntityAlreadyExists, "exists", 1));
  std::string body;
  EncodeWriteMany(results, &body);
  std::vector<Result<WriteResult>> back;
  ASSERT_TRUE(DecodeWriteMany(body, &back).ok());
  ASSERT_EQ(back.size(), 2u);
  ASSERT_TRUE(back[0].ok());
  EXPECT_EQ(back[0]->lsn, 7u);
  EXPECT_EQ(back[0]->etags, w.etags);
  EXPECT_EQ(back[0]->skipped, w.skipped);
  ASSERT_FALSE(back[1].ok());
  EXPECT_EQ(back[1].status().code(), Code::kEntityAlreadyExists);
  EXPECT_EQ(back[1].status().op_index(), 1);

  // A single write's reply carries "skipped" only when something was.
  std::string one;
  EncodeWrite(w, &one);
  WriteResult single;
  ASSERT_TRUE(DecodeWrite(one, &single).ok());
  EXPECT_EQ(single.skipped, w.skipped);
}

TEST(Wire, BadWriteManyRequestsAreInvalidInput) {
  auto frame = [](uint32_t batches, bool with_table, bool with_ops) {
    std::string f = HeaderBytes(1, static_cast<uint8_t>(Op::kWriteMany));
    msgpack::Writer w(&f);
    w.MapHeader(1);
    w.Str("writes");
    w.ArrayHeader(batches);
    for (uint32_t i = 0; i < batches && i < 2000; i++) {
      w.MapHeader(static_cast<uint32_t>(with_table) + static_cast<uint32_t>(with_ops));
      if (with_table) {
        w.Str("table");
        w.Str("T");
      }
      if (with_ops) {
        w.Str("ops");
        w.ArrayHeader(1);
        WriteDeleteOp(w);
      }
    }
    return f;
  };
  EXPECT_TRUE(DecodeBytes(frame(2, true, true)).ok());
  EXPECT_EQ(DecodeBytes(frame(0, true, true)).code(), Code::kInvalidInput);       // nothing to write
  EXPECT_EQ(DecodeBytes(frame(1, false, true)).code(), Code::kInvalidInput);      // no table
  EXPECT_EQ(DecodeBytes(frame(1, true, false)).code(), Code::kInvalidInput);      // no ops
  EXPECT_EQ(DecodeBytes(frame(1001, true, true)).code(), Code::kInvalidInput);    // over 1,000
  // A declared count the bytes cannot hold fails before any allocation.
  std::string lying = HeaderBytes(1, static_cast<uint8_t>(Op::kWriteMany));
  msgpack::Writer w(&lying);
  w.MapHeader(1);
  w.Str("writes");
  w.ArrayHeader(900);
  EXPECT_EQ(DecodeBytes(lying).code(), Code::kInvalidInput);
  // A fence must be an unsigned integer.
  std::string bad_fence = HeaderBytes(1, 5);
  msgpack::Writer b(&bad_fence);
  b.MapHeader(2);
  b.Str("table");
  b.Str("T");
  b.Str("ops");
  b.ArrayHeader(1);
  b.MapHeader(3);
  b.Str("op");
  b.Str("FencedDelete");
  b.Str("fence");
  b.Str("7");
  b.Str("entity");
  b.MapHeader(2);
  b.Str("pk");
  b.Str("p");
  b.Str("rk");
  b.Str("r");
  EXPECT_EQ(DecodeBytes(bad_fence).code(), Code::kInvalidInput);
  // noContent must be a boolean; true round-trips.
  std::string bad_nc = HeaderBytes(1, 5);
  msgpack::Writer n(&bad_nc);
  n.MapHeader(2);
  n.Str("table");
  n.Str("T");
  n.Str("noContent");
  n.Str("yes");
  EXPECT_EQ(DecodeBytes(bad_nc).code(), Code::kInvalidInput);
  Request quiet;
  quiet.op = Op::kWrite;
  quiet.table = "T";
  quiet.no_content = true;
  quiet.ops.push_back({OpKind::kInsert, Rich(), ""});
  EXPECT_TRUE(RoundTrip(quiet).no_content);
}

// Client request ids: on Write and on each WriteMany item, into the Batch;
// TakeBatch / TakeBatches (what a worker uses for a request it is done
// with) give the same Batches as ToBatch / ToBatches, moving the operations
// out instead of copying them; every other field of the request stays.
TEST(Wire, TakeBatchMovesTheSameBatchOut) {
  Request w;
  w.op = Op::kWrite;
  w.id = 77;
  w.table = "T";
  w.caller = "app";
  w.client_request_id = "take-1";
  w.ops.push_back({OpKind::kInsert, Rich(), ""});
  w.ops.push_back({OpKind::kUpdate, Rich(), "*"});
  w.ops[1].entity.row_key = "r2";
  const Batch copied = w.ToBatch();
  const Batch taken = w.TakeBatch();
  EXPECT_TRUE(w.ops.empty());
  EXPECT_EQ(w.table, "T");
  EXPECT_EQ(w.id, 77u);
  EXPECT_EQ(w.op, Op::kWrite);
  EXPECT_EQ(taken.table(), copied.table());
  EXPECT_EQ(taken.caller(), "app");
  EXPECT_EQ(taken.client_request_id(), "take-1");
  ASSERT_EQ(taken.operations().size(), 2u);
  for (size_t i = 0; i < 2; i++) {
    EXPECT_EQ(taken.operations()[i].kind, copied.operations()[i].kind);
    EXPECT_EQ(taken.operations()[i].if_match, copied.operations()[i].if_match);
    EXPECT_EQ(taken.operations()[i].entity.row_key, copied.operations()[i].entity.row_key);
    EXPECT_EQ(taken.operations()[i].entity.properties, copied.operations()[i].entity.properties);
  }

  Request many;
  many.op = Op::kWriteMany;
  many.caller = "worker";
  many.writes.push_back({"A", {{OpKind::kInsert, Rich(), ""}}, "one"});
  many.writes.push_back({"B", {{OpKind::kFencedUpsert, Rich(), "", 9}}, ""});
  const std::vector<Batch> copies = many.ToBatches();
  const std::vector<Batch> takes = many.TakeBatches();
  EXPECT_TRUE(many.writes.empty());
  ASSERT_EQ(takes.size(), 2u);
  for (size_t i = 0; i < 2; i++) {
    EXPECT_EQ(takes[i].table(), copies[i].table());
    EXPECT_EQ(takes[i].caller(), "worker");
    EXPECT_EQ(takes[i].client_request_id(), copies[i].client_request_id());
    ASSERT_EQ(takes[i].operations().size(), 1u);
    EXPECT_EQ(takes[i].operations()[0].fence, copies[i].operations()[0].fence);
    EXPECT_EQ(takes[i].operations()[0].entity.properties, copies[i].operations()[0].entity.properties);
  }
}

// `replayed` in the write reply; the id in change records. A bad id is
// InvalidInput whatever carries it.
TEST(Wire, ClientRequestIdsRoundTripAndBadOnesAreRefused) {
  Request w;
  w.op = Op::kWrite;
  w.table = "T";
  w.client_request_id = "7f3a-retry-safe";
  w.ops.push_back({OpKind::kInsert, Rich(), ""});
  Request back = RoundTrip(w);
  EXPECT_EQ(back.client_request_id, "7f3a-retry-safe");
  EXPECT_EQ(back.ToBatch().client_request_id(), "7f3a-retry-safe");

  Request many;
  many.op = Op::kWriteMany;
  many.writes.push_back({"T", {{OpKind::kInsert, Rich(), ""}}, "one"});
  many.writes.push_back({"T", {{OpKind::kInsert, Rich(), ""}}, ""});
  Request many_back = RoundTrip(many);
  auto batches = many_back.ToBatches();
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0].client_request_id(), "one");
  EXPECT_EQ(batches[1].client_request_id(), "");

  for (const std::string& bad : {std::string("has space"), std::string(129, 'x'), std::string("\x01")}) {
    Request b = w;
    b.client_request_id = bad;
    std::string frame;
    EncodeRequest(b, &frame);
    Request out;
    EXPECT_EQ(DecodeRequest(frame, &out).code(), Code::kInvalidInput) << bad;
    Request m = many;
    m.writes[1].client_request_id = bad;
    frame.clear();
    EncodeRequest(m, &frame);
    EXPECT_EQ(DecodeRequest(frame, &out).code(), Code::kInvalidInput) << bad;
  }

  WriteResult r;
  r.lsn = 9;
  r.etags = {"W/\"9\""};
  std::string body;
  EncodeWrite(r, &body);
  WriteResult plain;
  ASSERT_TRUE(DecodeWrite(body, &plain).ok());
  EXPECT_FALSE(plain.replayed);
  r.replayed = true;
  body.clear();
  EncodeWrite(r, &body);
  WriteResult again;
  ASSERT_TRUE(DecodeWrite(body, &again).ok());
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.lsn, 9u);

  ChangeBatch cb;
  ChangeRecord rec;
  rec.lsn = 1;
  rec.table = "T";
  rec.client_request_id = "abc";
  cb.records.push_back(rec);
  body.clear();
  EncodeChanges(cb, &body);
  ChangeBatch cb2;
  ASSERT_TRUE(DecodeChanges(body, &cb2).ok());
  ASSERT_EQ(cb2.records.size(), 1u);
  EXPECT_EQ(cb2.records[0].client_request_id, "abc");
}

// $select as Azure answers it: keys and Timestamp only when selected, the
// ETag always, a selected property the entity lacks as nil (dropped by the
// C++ decoder: absent means null there); replies without keys decode, a
// request entity without keys or with a nil value does not.
TEST(Wire, SelectedEntitiesCarryOnlyWhatWasSelected) {
  Entity e;
  e.partition_key = "p";
  e.row_key = "r";
  e.timestamp = 4242;
  e.etag = "W/\"7\"";
  e.Set("a", Value::Int32(1));
  const std::vector<std::string> select = {"a", "zz", "zz", "RowKey"};
  std::string body;
  EncodeEntityReply(e, &body, &select);
  msgpack::Reader r(body);
  uint32_t n;
  ASSERT_TRUE(r.MapHeader(&n));
  std::string_view key;
  ASSERT_TRUE(r.Str(&key));
  ASSERT_EQ(key, "entity");
  ASSERT_TRUE(r.MapHeader(&n));
  std::map<std::string, std::string> fields;
  std::vector<std::string> props, nil_props;
  for (uint32_t i = 0; i < n; i++) {
    ASSERT_TRUE(r.Str(&key));
    if (key == "props") {
      uint32_t m;
      ASSERT_TRUE(r.MapHeader(&m));
      for (uint32_t j = 0; j < m; j++) {
        std::string_view name;
        ASSERT_TRUE(r.Str(&name));
        if (r.Peek() == msgpack::Kind::kNil) {
          r.Nil();
          nil_props.emplace_back(name);
        } else {
          ASSERT_TRUE(r.Skip());
          props.emplace_back(name);
        }
      }
      fields["props"] = "";
    } else {
      fields[std::string(key)] = "";
      ASSERT_TRUE(r.Skip());
    }
  }
  EXPECT_EQ(fields.count("pk"), 0u);
  EXPECT_EQ(fields.count("ts"), 0u);
  EXPECT_EQ(fields.count("rk"), 1u);
  EXPECT_EQ(fields.count("etag"), 1u);
  EXPECT_EQ(props, std::vector<std::string>{"a"});
  EXPECT_EQ(nil_props, std::vector<std::string>{"zz"}) << "each missing one once";

  Entity back;
  ASSERT_TRUE(DecodeEntityReply(body, &back).ok());
  EXPECT_EQ(back.partition_key, "");
  EXPECT_EQ(back.row_key, "r");
  EXPECT_EQ(back.etag, e.etag);
  EXPECT_EQ(back.timestamp, 0);
  ASSERT_EQ(back.properties.size(), 1u);
  EXPECT_EQ(back.properties[0].name, "a");

  // Without $select: the whole entity, as before.
  body.clear();
  EncodeEntityReply(e, &body);
  Entity whole;
  ASSERT_TRUE(DecodeEntityReply(body, &whole).ok());
  EXPECT_EQ(whole.partition_key, "p");
  EXPECT_EQ(whole.timestamp, 4242);

  // A query page projects every entity the same way.
  QueryReply q;
  q.entities = {e, e};
  q.select = {"PartitionKey", "Timestamp"};
  body.clear();
  EncodeQuery(q, &body);
  QueryReply qb;
  ASSERT_TRUE(DecodeQuery(body, &qb).ok());
  ASSERT_EQ(qb.entities.size(), 2u);
  EXPECT_EQ(qb.entities[1].partition_key, "p");
  EXPECT_EQ(qb.entities[1].row_key, "");
  EXPECT_EQ(qb.entities[1].timestamp, 4242);

  // In a request, an entity needs its keys and takes no nil value.
  const std::string nil_frame = WriteWithValue(std::string(1, '\xc0'));  // MessagePack nil
  EXPECT_EQ(DecodeBytes(nil_frame).code(), Code::kInvalidInput);
}

// A $select may name 255 properties, and each one an entity lacks travels
// as a nil: a reply's props then hold more entries than an entity's 252.
// Before session 38 every C++ decoder (the client's, the REST gateway's)
// refused such a reply as malformed; the gateway answered 500.
TEST(Wire, RepliesToTheLargestSelectDecode) {
  Entity e;
  e.partition_key = "p";
  e.row_key = "r";
  e.etag = "W/\"7\"";
  e.Set("x0", Value::Int32(1));
  std::vector<std::string> select;
  for (int i = 0; i < 255; i++) select.push_back("x" + std::to_string(i));

  std::string body;
  EncodeEntityReply(e, &body, &select);
  Entity back;
  ASSERT_TRUE(DecodeEntityReply(body, &back).ok()) << DecodeEntityReply(body, &back).ToString();
  ASSERT_EQ(back.properties.size(), 1u);
  EXPECT_EQ(back.properties[0].name, "x0");

  QueryReply q;
  q.entities = {e, e};
  q.select = select;
  body.clear();
  EncodeQuery(q, &body);
  QueryReply qb;
  ASSERT_TRUE(DecodeQuery(body, &qb).ok()) << DecodeQuery(body, &qb).ToString();
  ASSERT_EQ(qb.entities.size(), 2u);
  EXPECT_EQ(qb.entities[1].properties.size(), 1u);
  QueryIndex index;
  ASSERT_TRUE(IndexQuery(body, &index).ok()) << IndexQuery(body, &index).ToString();
  EXPECT_EQ(index.entities.size(), 2u);
}

}  // namespace
}  // namespace sidetable::wire
