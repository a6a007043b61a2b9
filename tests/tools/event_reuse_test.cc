// Decoding into reused storage (events/event.h, events/entity_json_dom.h):
// the Kafka replay source decodes each change event into a record it has
// decoded before (tools/replay/kafka_partition.h), so whatever an event
// leaves out must not survive from the previous one. Every pair of events
// of different shapes is decoded one after the other into the same Event
// and compared, field by field, with a decode into a fresh one.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <string>
#include <vector>

#include "events/entity_json_dom.h"
#include "events/event.h"

namespace sidetable::events {
namespace {

// A field added to these types must be reset by the decoder (event.cc,
// ResetOptionalFields, or assigned by every successful decode) and compared
// below; these sizes make the build say so.
static_assert(sizeof(ChangeRecord) == 272,
              "a new ChangeRecord field: reset it in event.cc and compare it here");
static_assert(sizeof(ChangeOp) == 352,
              "a new ChangeOp field: reset it in event.cc and compare it here");
static_assert(sizeof(Entity) == 128,
              "a new Entity field: reset it in EntityFromJsonElement and compare it here");

::testing::AssertionResult SameEntity(const std::optional<Entity>& a,
                                      const std::optional<Entity>& b) {
  if (a.has_value() != b.has_value())
    return ::testing::AssertionFailure() << "image on one side only";
  if (!a) return ::testing::AssertionSuccess();
  if (a->partition_key != b->partition_key || a->row_key != b->row_key) {
    return ::testing::AssertionFailure() << "keys " << a->row_key << " vs " << b->row_key;
  }
  if (a->timestamp != b->timestamp) return ::testing::AssertionFailure() << "timestamp";
  if (a->etag != b->etag)
    return ::testing::AssertionFailure() << "etag '" << a->etag << "' vs '" << b->etag << "'";
  if (a->properties.size() != b->properties.size()) {
    return ::testing::AssertionFailure()
           << a->properties.size() << " vs " << b->properties.size() << " properties";
  }
  for (size_t i = 0; i < a->properties.size(); i++) {
    const Property &x = a->properties[i], &y = b->properties[i];
    if (x.name != y.name || x.value.type() != y.value.type() || !(x.value == y.value) ||
        x.value.bytes() != y.value.bytes()) {
      return ::testing::AssertionFailure()
             << "property " << i << " (" << x.name << " vs " << y.name << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult SameEvent(const Event& a, const Event& b) {
  const ChangeRecord &x = a.record, &y = b.record;
  if (a.schema != b.schema || a.source != b.source)
    return ::testing::AssertionFailure() << "schema/source";
  if (x.lsn != y.lsn || x.kind != y.kind || x.commit_time != y.commit_time) {
    return ::testing::AssertionFailure() << "lsn/kind/time";
  }
  if (x.table != y.table || x.table_id != y.table_id || x.partition_key != y.partition_key) {
    return ::testing::AssertionFailure() << "table/tableId/pk";
  }
  if (x.caller != y.caller || x.client_request_id != y.client_request_id ||
      x.target_table != y.target_table) {
    return ::testing::AssertionFailure()
           << "caller '" << x.caller << "' vs '" << y.caller << "', clientRequestId or targetTable";
  }
  if (x.epoch != y.epoch || x.shard != y.shard || x.service != y.service ||
      x.table_incarnation != y.table_incarnation) {
    return ::testing::AssertionFailure() << "epoch/shard/service/incarnation";
  }
  if (x.ops.size() != y.ops.size())
    return ::testing::AssertionFailure() << x.ops.size() << " vs " << y.ops.size() << " ops";
  for (size_t i = 0; i < x.ops.size(); i++) {
    const ChangeOp &p = x.ops[i], &q = y.ops[i];
    if (p.row_key != q.row_key || p.kind != q.kind || p.version != q.version || p.etag != q.etag) {
      return ::testing::AssertionFailure() << "op " << i << " rk/kind/version/etag";
    }
    if (auto r = SameEntity(p.before, q.before); !r) return r << " (op " << i << " before)";
    if (auto r = SameEntity(p.after, q.after); !r) return r << " (op " << i << " after)";
  }
  return ::testing::AssertionSuccess();
}

// Events of every shape: optional fields present and absent, more and fewer
// operations, images and properties, every Edm type in a slot another event
// fills with a different one.
const std::vector<std::string>& Shapes() {
  static const std::vector<std::string> shapes = {
      // Everything an Entities event may carry.
      R"({"schema":1,"source":"s1","lsn":7,"kind":"Entities","time":"2026-11-30T10:00:00.1234567Z",)"
      R"("table":"Orders","tableId":3,"pk":"P","caller":"app","clientRequestId":"req-1","epoch":5,"ops":[)"
      R"({"rk":"a","op":"Merge","version":5497558138887,"etag":"W/\"x\"",)"
      R"("before":{"PartitionKey":"P","RowKey":"a","Timestamp":"2026-11-30T09:00:00Z","odata.etag":"W/\"w\"",)"
      R"("s":"a string longer than the small-string buffer","n":1,"g@odata.type":"Edm.Guid",)"
      R"("g":"c9da6455-213d-42c9-9a79-3e9149a57833","b@odata.type":"Edm.Binary","b":"AAEC"},)"
      R"("after":{"PartitionKey":"P","RowKey":"a","Timestamp":"2026-11-30T10:00:00.1234567Z","odata.etag":"W/\"x\"",)"
      R"("s":"another string, longer than fifteen bytes","n":2,"big@odata.type":"Edm.Int64","big":"1099511627776",)"
      R"("d":1.5,"t@odata.type":"Edm.DateTime","t":"2026-01-01T00:00:00Z","ok":true}},)"
      R"({"rk":"b","op":"Delete","version":5497558138887,"etag":"","before":{"PartitionKey":"P","RowKey":"b",)"
      R"("Timestamp":"2026-11-30T09:00:00Z","x":"a value long enough to live on the heap"}},)"
      R"({"rk":"c","op":"Insert","version":5497558138887,"etag":"W/\"x\"","after":{"PartitionKey":"P","RowKey":"c",)"
      R"("Timestamp":"2026-11-30T10:00:00.1234567Z","odata.etag":"W/\"x\""}}]})",
      // The least an Entities event needs: no caller, pk, clientRequestId,
      // epoch or ETag; one image without a Timestamp, with a property whose
      // name another event gives a string.
      R"({"schema":1,"source":"s2","lsn":8,"kind":"Entities","time":"2026-11-30T10:00:01Z","table":"T","tableId":1,)"
      R"("ops":[{"rk":"r","op":"Insert","version":8,"after":{"PartitionKey":"","RowKey":"r","s":3}}]})",
      // A table event: no operations.
      R"({"schema":1,"source":"s3","lsn":9,"kind":"TableCreated","time":"2026-11-30T10:00:02Z","table":"New",)"
      R"("tableId":4,"caller":"admin","ops":[]})",
      // An archive request: a target table, operations without images.
      R"({"schema":1,"source":"s1","lsn":10,"kind":"ArchiveRequested","time":"2026-11-30T10:00:03Z",)"
      R"("table":"Orders","tableId":3,"pk":"P","targetTable":"OrdersArchive","caller":"app",)"
      R"("ops":[{"rk":"a","op":"Delete","version":10,"etag":""},{"rk":"b","op":"Delete","version":10,"etag":""}]})",
      // A claim: no LSN, table or operations; a shard and a service.
      R"({"schema":1,"kind":"ShardClaimed","source":"orders-2","epoch":7,"shard":3,"service":"orders",)"
      R"("time":"2026-11-30T10:00:04Z"})",
      // A claim from before claims named their service.
      R"({"schema":1,"kind":"ShardClaimed","source":"orders-3","epoch":8,"shard":1,"time":"2026-11-30T10:00:05Z"})",
  };
  return shapes;
}

TEST(EventReuseTest, EveryPairDecodesIntoReusedStorageAsIntoFresh) {
  const auto& shapes = Shapes();
  EventDecoder decoder;
  for (size_t i = 0; i < shapes.size(); i++) {
    for (size_t j = 0; j < shapes.size(); j++) {
      Event fresh;
      ASSERT_TRUE(DecodeEvent(shapes[j], &fresh).ok()) << j;
      Event reused;
      ASSERT_TRUE(decoder.Decode(shapes[i], &reused).ok()) << i;
      ASSERT_TRUE(decoder.Decode(shapes[j], &reused).ok()) << j;
      EXPECT_TRUE(SameEvent(reused, fresh)) << "event " << j << " decoded over event " << i;
      // DecodeEvent reuses the same way.
      Event again;
      ASSERT_TRUE(DecodeEvent(shapes[i], &again).ok());
      ASSERT_TRUE(DecodeEvent(shapes[j], &again).ok());
      EXPECT_TRUE(SameEvent(again, fresh)) << "DecodeEvent: event " << j << " over " << i;
    }
  }
}

TEST(EventReuseTest, AFailedDecodeLeavesNothingForTheNext) {
  const auto& shapes = Shapes();
  // Fails after the envelope and the first image were read.
  std::string bad = shapes[0];
  bad.replace(bad.find(R"("ok":true)"), 9, R"("ok":null)");
  EventDecoder decoder;
  Event ev;
  ASSERT_FALSE(decoder.Decode(bad, &ev).ok());
  for (size_t j = 0; j < shapes.size(); j++) {
    Event fresh;
    ASSERT_TRUE(DecodeEvent(shapes[j], &fresh).ok());
    Event reused;
    ASSERT_FALSE(decoder.Decode(bad, &reused).ok());
    ASSERT_TRUE(decoder.Decode(shapes[j], &reused).ok());
    EXPECT_TRUE(SameEvent(reused, fresh)) << "event " << j << " after a failed decode";
  }
}

TEST(EventReuseTest, AReusedEntityIsOverwrittenNotAppendedTo) {
  simdjson::dom::parser parser;
  auto read = [&](const char* json, Entity* e) {
    simdjson::padded_string text(std::string_view{json});
    simdjson::dom::element el;
    EXPECT_EQ(parser.parse(text).get(el), simdjson::SUCCESS);
    return json::EntityFromJsonElement(el, e, true);
  };
  Entity e;
  ASSERT_TRUE(
      read(
          R"({"PartitionKey":"p","RowKey":"r","Timestamp":"2026-11-30T10:00:00Z","odata.etag":"W/\"1\"",)"
          R"("a":"a long string value on the heap","b":2,"c":true})",
          &e)
          .ok());
  ASSERT_EQ(e.properties.size(), 3u);
  ASSERT_TRUE(
      read(
          R"({"PartitionKey":"q","RowKey":"s","c@odata.type":"Edm.Guid","c":"c9da6455-213d-42c9-9a79-3e9149a57833"})",
          &e)
          .ok());
  EXPECT_EQ(e.partition_key, "q");
  EXPECT_EQ(e.row_key, "s");
  EXPECT_EQ(e.timestamp, 0) << "no Timestamp in the second object";
  EXPECT_EQ(e.etag, "") << "no odata.etag in the second object";
  ASSERT_EQ(e.properties.size(), 1u);
  EXPECT_EQ(e.properties[0].name, "c");
  EXPECT_EQ(e.properties[0].value,
            Value::MakeGuid(*ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")));
}

TEST(EventReuseTest, InPlaceSettersEqualTheFactories) {
  Value v = Value::Int64(42);
  v.SetString("a string longer than the small-string buffer");
  EXPECT_EQ(v, Value::String("a string longer than the small-string buffer"));
  v.SetBinary(std::string("\0\1", 2));
  EXPECT_EQ(v, Value::Binary(std::string("\0\1", 2)));
  EXPECT_NE(v, Value::String(std::string("\0\1", 2))) << "the type changes with the bytes";
  const Guid g = *ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833");
  v.SetGuid(g);
  EXPECT_EQ(v, Value::MakeGuid(g));
  EXPECT_EQ(v.as_guid(), g);
  v = Value::Double(1.5);  // a scalar over bytes: none left behind
  EXPECT_EQ(v, Value::Double(1.5));
  EXPECT_TRUE(v.bytes().empty());
}

}  // namespace
}  // namespace sidetable::events
