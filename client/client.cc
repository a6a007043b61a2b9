// The synchronous calls and the query iterator, on top of the pipeline.
#include "client/client.h"

namespace sidetable::client {
namespace {

wire::Request Make(wire::Op op, const std::string& table = "") {
  wire::Request r;
  r.op = op;
  r.table = table;
  return r;
}

}  // namespace

Result<wire::PingReply> Client::Ping() {
  std::string body;
  ST_RETURN_IF_ERROR(Call(Make(wire::Op::kPing), &body));
  wire::PingReply p;
  ST_RETURN_IF_ERROR(wire::DecodePing(body, &p));
  return p;
}

Status Client::CreateTable(const std::string& table) {
  std::string body;
  return Call(Make(wire::Op::kCreateTable, table), &body);
}

Status Client::DeleteTable(const std::string& table) {
  std::string body;
  return Call(Make(wire::Op::kDeleteTable, table), &body);
}

Result<std::vector<std::string>> Client::ListTables(const std::string& filter) {
  std::vector<std::string> all;
  std::optional<std::string> next;
  do {
    wire::Request r = Make(wire::Op::kListTables);
    r.filter = filter;
    r.next_table = next;
    std::string body;
    ST_RETURN_IF_ERROR(Call(std::move(r), &body));
    wire::TablesReply t;
    ST_RETURN_IF_ERROR(wire::DecodeTables(body, &t));
    all.insert(all.end(), t.tables.begin(), t.tables.end());
    next = t.next_table;
  } while (next);
  return all;
}

Result<WriteResult> Client::Execute(const Batch& batch) {
  wire::Request r = Make(wire::Op::kWrite, batch.table());
  r.caller = batch.caller();
  r.ops = batch.operations();
  std::string body;
  ST_RETURN_IF_ERROR(Call(std::move(r), &body));
  WriteResult w;
  ST_RETURN_IF_ERROR(wire::DecodeWrite(body, &w));
  return w;
}

Result<WriteResult> Client::WriteOne(const std::string& table, OpKind kind, Entity e,
                                     std::string if_match) {
  Batch b(table);
  b.Add(kind, std::move(e), std::move(if_match));
  return Execute(b);
}

Result<WriteResult> Client::Insert(const std::string& table, Entity e) {
  return WriteOne(table, OpKind::kInsert, std::move(e), "");
}
Result<WriteResult> Client::Update(const std::string& table, Entity e, std::string if_match) {
  return WriteOne(table, OpKind::kUpdate, std::move(e), std::move(if_match));
}
Result<WriteResult> Client::Merge(const std::string& table, Entity e, std::string if_match) {
  return WriteOne(table, OpKind::kMerge, std::move(e), std::move(if_match));
}
Result<WriteResult> Client::Delete(const std::string& table, std::string pk, std::string rk,
                                   std::string if_match) {
  Entity e;
  e.partition_key = std::move(pk);
  e.row_key = std::move(rk);
  return WriteOne(table, OpKind::kDelete, std::move(e), std::move(if_match));
}
Result<WriteResult> Client::InsertOrReplace(const std::string& table, Entity e) {
  return WriteOne(table, OpKind::kInsertOrReplace, std::move(e), "");
}
Result<WriteResult> Client::InsertOrMerge(const std::string& table, Entity e) {
  return WriteOne(table, OpKind::kInsertOrMerge, std::move(e), "");
}

Result<Entity> Client::Get(const std::string& table, const std::string& pk, const std::string& rk,
                           const std::vector<std::string>& select) {
  wire::Request r = Make(wire::Op::kGet, table);
  r.pk = pk;
  r.rk = rk;
  r.select = select;
  std::string body;
  ST_RETURN_IF_ERROR(Call(std::move(r), &body));
  Entity e;
  ST_RETURN_IF_ERROR(wire::DecodeEntityReply(body, &e));
  return e;
}

Result<wire::QueryReply> Client::QueryPage(
    const QueryOptions& q, const std::optional<std::pair<std::string, std::string>>& next) {
  wire::Request r = Make(wire::Op::kQuery, q.table);
  r.filter = q.filter;
  r.select = q.select;
  if (q.top) r.top = *q.top;
  if (next) {
    r.next_pk = next->first;
    r.next_rk = next->second;
  }
  std::string body;
  ST_RETURN_IF_ERROR(Call(std::move(r), &body));
  wire::QueryReply reply;
  ST_RETURN_IF_ERROR(wire::DecodeQuery(body, &reply));
  return reply;
}

QueryIterator Client::Query(const QueryOptions& q) { return QueryIterator(this, q); }

Result<ChangeBatch> Client::ReadChanges(uint64_t from_lsn, uint32_t max_records, uint64_t max_bytes) {
  wire::Request r = Make(wire::Op::kReadChanges);
  r.from_lsn = from_lsn;
  r.max_records = max_records;
  r.max_bytes = max_bytes;
  std::string body;
  ST_RETURN_IF_ERROR(Call(std::move(r), &body));
  ChangeBatch b;
  ST_RETURN_IF_ERROR(wire::DecodeChanges(body, &b));
  return b;
}

Result<uint64_t> Client::RequestArchive(const std::string& table, const std::string& pk,
                                        const std::vector<std::string>& row_keys,
                                        const std::string& archive_table) {
  wire::Request r = Make(wire::Op::kRequestArchive, table);
  r.pk = pk;
  r.rks = row_keys;
  r.target = archive_table;
  std::string body;
  ST_RETURN_IF_ERROR(Call(std::move(r), &body));
  uint64_t lsn = 0;
  ST_RETURN_IF_ERROR(wire::DecodeLsn(body, &lsn));
  return lsn;
}

bool QueryIterator::Next(Entity* out) {
  while (pos_ >= page_.size()) {
    if (done_ || (started_ && !next_)) return false;
    auto page = client_->QueryPage(q_, next_);
    started_ = true;
    pages_++;
    if (!page.ok()) {
      status_ = page.status();
      done_ = true;
      return false;
    }
    page_ = std::move(page->entities);
    pos_ = 0;
    if (page->next_pk) next_ = std::make_pair(*page->next_pk, page->next_rk.value_or(""));
    else next_.reset();
  }
  *out = std::move(page_[pos_++]);
  return true;
}

}  // namespace sidetable::client
