#include "bench/codecs/shapes.h"

namespace sidetable::bench::codecs {

Entity SampleEntity(size_t i) {
  Entity e;
  e.partition_key = "Sales";
  e.row_key = "row-" + std::to_string(100000 + i);
  e.timestamp = 638'000'000'000'000'000 + static_cast<int64_t>(i);
  e.etag = "W/\"datetime'2026-01-01T00%3A00%3A00.0000000Z'\"";
  e.Set("Name", Value::String("Ana Lucía Fernández"));
  e.Set("City", Value::String("Zürich"));
  e.Set("Note", Value::String("line one\nline \"two\"\ttabbed \\ path, 价格 €12"));
  e.Set("Email", Value::String("ana.fernandez@example.com"));
  e.Set("Age", Value::Int32(36));
  e.Set("Rank", Value::Int32(-1200));
  e.Set("Balance", Value::Int64(9'007'199'254'740'993LL));
  e.Set("Score", Value::Double(1234.5678));
  e.Set("Active", Value::Boolean(true));
  e.Set("Born", Value::DateTime(627'666'624'000'000'000));
  e.Set("Id", Value::MakeGuid(*ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")));
  std::string blob(32, '\0');
  for (size_t k = 0; k < blob.size(); k++) blob[k] = static_cast<char>(k * 37 + i);
  e.Set("Blob", Value::Binary(std::move(blob)));
  return e;
}

wire::Request SampleWriteRequest() {
  wire::Request r;
  r.id = 42;
  r.op = wire::Op::kWrite;
  r.table = "Employees";
  r.caller = "hr-app";
  Operation op;
  op.kind = OpKind::kInsert;
  op.entity = SampleEntity(0);
  op.entity.timestamp = 0;  // requests carry no metadata
  op.entity.etag.clear();
  r.ops.push_back(std::move(op));
  return r;
}

wire::QueryReply SampleQueryReply(size_t n) {
  wire::QueryReply q;
  q.entities.reserve(n);
  for (size_t i = 0; i < n; i++) q.entities.push_back(SampleEntity(i));
  q.next_pk = "Sales";
  q.next_rk = "row-" + std::to_string(100000 + n);
  q.plan = "partition scan";
  q.examined = n;
  return q;
}

ChangeRecord SampleChangeRecord() {
  ChangeRecord r;
  r.lsn = 123456;
  r.kind = ChangeKind::kEntities;
  r.commit_time = 638'000'000'000'000'000;
  r.table = "Employees";
  r.table_id = 3;
  r.partition_key = "Sales";
  r.caller = "hr-app";
  ChangeOp op;
  op.kind = OpKind::kMerge;
  op.before = SampleEntity(0);
  op.after = SampleEntity(0);
  op.after->Set("Age", Value::Int32(37));
  op.row_key = op.after->row_key;
  op.version = 123456;
  op.etag = op.after->etag;
  r.ops.push_back(std::move(op));
  return r;
}

}  // namespace sidetable::bench::codecs
