// The calls, synchronous and pipelined, and the query iterator, on top of
// the pipeline: each encodes its wire request and decodes its reply into the
// client's own types.
#include "client/client.h"

#include <algorithm>

#include "protocol/wire.h"

namespace sidetable::client {
namespace {

wire::Request Make(wire::Op op, const std::string& table = "") {
  wire::Request r;
  r.op = op;
  r.table = table;
  return r;
}

// The id is set when the frame is sent. Every request carries the caller
// (the change log records it for writes and table operations) and the
// token, when there is one (an authenticating sidecar records the token's
// identity instead of the caller).
std::string Encode(wire::Request r, const ClientOptions& o) {
  if (r.caller.empty()) r.caller = o.caller;
  r.token = o.token;
  std::string frame;
  wire::EncodeRequest(r, &frame);
  return frame;
}

// `id`: the batch's own client request id, or the one the client drew.
wire::Request WriteRequest(const Batch& batch, std::string id) {
  wire::Request r = Make(wire::Op::kWrite, batch.table());
  r.caller = batch.caller();
  r.borrowed_ops = &batch.operations();  // encoded right away, in Encode(): no copy
  r.client_request_id = batch.client_request_id().empty() ? std::move(id) : batch.client_request_id();
  return r;
}

// How long the server may hold a read that carries session tokens.
std::chrono::milliseconds WaitAllowance(const ReadOptions& read) {
  if (read.after.empty()) return std::chrono::milliseconds(0);
  return read.wait.value_or(std::chrono::milliseconds(wire::kDefaultWaitMs));
}

void SetRead(const ReadOptions& read, wire::Request* r) {
  if (read.after.empty()) return;
  r->after.reserve(read.after.size());
  for (const auto& t : read.after) r->after.push_back(wire::AfterToken{t.source_table, t.lsn});
  if (read.wait) r->wait_ms = static_cast<uint64_t>(std::max<int64_t>(read.wait->count(), 0));
}

wire::Request GetRequest(const std::string& table, const std::string& pk, const std::string& rk,
                         const std::vector<std::string>& select, const ReadOptions& read = {}) {
  wire::Request r = Make(wire::Op::kGet, table);
  r.pk = pk;
  r.rk = rk;
  r.select = select;
  SetRead(read, &r);
  return r;
}

wire::Request WatermarksRequest(const std::vector<Watermark>& watermarks) {
  wire::Request r = Make(wire::Op::kAdvanceWatermarks);
  r.watermarks.reserve(watermarks.size());
  for (const auto& w : watermarks) {
    r.watermarks.push_back(wire::WatermarkEntry{w.derived_table, w.source_table, w.partition,
                                                w.partitions, w.lsn, w.commit_time});
  }
  return r;
}

wire::Request QueryRequest(const QueryOptions& q, const std::optional<Continuation>& next) {
  wire::Request r = Make(wire::Op::kQuery, q.table);
  r.filter = q.filter;
  r.select = q.select;
  if (q.top) r.top = *q.top;
  if (next) {
    r.next_pk = next->first;
    r.next_rk = next->second;
  }
  SetRead(q.read, &r);
  return r;
}

wire::Request ChangesRequest(uint64_t from_lsn, uint32_t max_records, uint64_t max_bytes, bool raw) {
  wire::Request r = Make(wire::Op::kReadChanges);
  r.from_lsn = from_lsn;
  r.max_records = max_records;
  r.max_bytes = max_bytes;
  // Pages in the change log's own encoding: the sidecar does not decode
  // them and this side decodes each record once (a sidecar that predates
  // the option replies with MessagePack records, which decode the same).
  r.raw_changes = raw;
  return r;
}

Status DecodePage(std::string_view body, Page* page) {
  wire::QueryReply reply;
  ST_RETURN_IF_ERROR(wire::DecodeQuery(body, &reply));
  page->entities = std::move(reply.entities);
  if (reply.next_pk) page->next = Continuation(*reply.next_pk, reply.next_rk.value_or(""));
  page->plan = std::move(reply.plan);
  page->examined = reply.examined;
  return Status::OK();
}

// A pipelined reply decoded by `decode` into a T for `done`.
template <typename T, typename Decode>
auto Decoded(Done<T> done, Decode decode) {
  return [done = std::move(done), decode](const Status& s, std::string_view body) {
    if (!s.ok()) return done(s);
    T value{};
    if (Status d = decode(body, &value); !d.ok()) return done(d);
    done(std::move(value));
  };
}

}  // namespace

Result<ServerInfo> Client::Ping() {
  std::string body;
  ST_RETURN_IF_ERROR(Call(Encode(Make(wire::Op::kPing), options_), &body));
  wire::PingReply p;
  ST_RETURN_IF_ERROR(wire::DecodePing(body, &p));
  return ServerInfo{p.version, std::move(p.sidecar_id), p.last_lsn};
}

Status Client::CreateTable(const std::string& table) {
  std::string body;
  return Call(Encode(Make(wire::Op::kCreateTable, table), options_), &body);
}

Status Client::DeleteTable(const std::string& table) {
  std::string body;
  return Call(Encode(Make(wire::Op::kDeleteTable, table), options_), &body);
}

Result<std::vector<std::string>> Client::ListTables(const std::string& filter) {
  std::vector<std::string> all;
  std::optional<std::string> next;
  do {
    wire::Request r = Make(wire::Op::kListTables);
    r.filter = filter;
    r.next_table = next;
    std::string body;
    ST_RETURN_IF_ERROR(Call(Encode(r, options_), &body));
    wire::TablesReply t;
    ST_RETURN_IF_ERROR(wire::DecodeTables(body, &t));
    all.insert(all.end(), t.tables.begin(), t.tables.end());
    next = t.next_table;
  } while (next);
  return all;
}

Result<WriteResult> Client::Execute(const Batch& batch) {
  std::string body;
  ST_RETURN_IF_ERROR(Call(Encode(WriteRequest(batch, NewClientRequestId()), options_), &body));
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

Result<WriteResult> Client::Insert(const std::string& table, Entity e, bool return_entity) {
  Batch b(table);
  b.Insert(std::move(e));
  wire::Request r = WriteRequest(b, NewClientRequestId());
  r.no_content = !return_entity;
  std::string body;
  ST_RETURN_IF_ERROR(Call(Encode(std::move(r), options_), &body));
  WriteResult w;
  ST_RETURN_IF_ERROR(wire::DecodeWrite(body, &w));
  return w;
}
namespace {
// The entity's own ETag unless the caller chose; "*" for an entity without one.
std::string IfMatchFor(const Entity& e, std::optional<std::string> if_match) {
  if (if_match) return std::move(*if_match);
  return e.etag.empty() ? std::string("*") : e.etag;
}
}  // namespace

Result<WriteResult> Client::Update(const std::string& table, Entity e, std::optional<std::string> if_match) {
  std::string condition = IfMatchFor(e, std::move(if_match));
  return WriteOne(table, OpKind::kUpdate, std::move(e), std::move(condition));
}
Result<WriteResult> Client::Merge(const std::string& table, Entity e, std::optional<std::string> if_match) {
  std::string condition = IfMatchFor(e, std::move(if_match));
  return WriteOne(table, OpKind::kMerge, std::move(e), std::move(condition));
}
Result<WriteResult> Client::Delete(const std::string& table, const Entity& e, std::optional<std::string> if_match) {
  return Delete(table, e.partition_key, e.row_key, IfMatchFor(e, std::move(if_match)));
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
  std::string body;
  ST_RETURN_IF_ERROR(Call(Encode(GetRequest(table, pk, rk, select), options_), &body));
  Entity e;
  ST_RETURN_IF_ERROR(wire::DecodeEntityReply(body, &e));
  return e;
}

Result<Page> Client::QueryPage(const QueryOptions& q, const std::optional<Continuation>& next) {
  std::string body;
  ST_RETURN_IF_ERROR(Call(Encode(QueryRequest(q, next), options_), &body, WaitAllowance(q.read)));
  Page page;
  ST_RETURN_IF_ERROR(DecodePage(body, &page));
  return page;
}

Result<Entity> Client::Get(const std::string& table, const std::string& pk, const std::string& rk,
                           const std::vector<std::string>& select, const ReadOptions& read) {
  std::string body;
  ST_RETURN_IF_ERROR(Call(Encode(GetRequest(table, pk, rk, select, read), options_), &body,
                          WaitAllowance(read)));
  Entity e;
  ST_RETURN_IF_ERROR(wire::DecodeEntityReply(body, &e));
  return e;
}

QueryIterator Client::Query(const QueryOptions& q) { return QueryIterator(this, q); }

ChangeIterator Client::Changes(uint64_t from_lsn, uint32_t page_records) {
  return ChangeIterator(this, from_lsn, page_records == 0 ? 1 : page_records);
}

Status Client::AdvanceWatermarks(const std::vector<Watermark>& watermarks) {
  std::string body;
  return Call(Encode(WatermarksRequest(watermarks), options_), &body);
}

Result<std::vector<Watermark>> Client::ReadWatermarks(const std::string& derived_table) {
  wire::Request r = Make(wire::Op::kReadWatermarks);
  r.derived = derived_table;
  std::string body;
  ST_RETURN_IF_ERROR(Call(Encode(r, options_), &body));
  std::vector<wire::WatermarkEntry> entries;
  ST_RETURN_IF_ERROR(wire::DecodeWatermarks(body, &entries));
  std::vector<Watermark> out;
  out.reserve(entries.size());
  for (auto& e : entries) {
    out.push_back(Watermark{std::move(e.derived), std::move(e.source), e.partition, e.partitions, e.lsn, e.time});
  }
  return out;
}

Status Client::ForgetWatermarks(const std::string& derived_table) {
  wire::Request r = Make(wire::Op::kForgetWatermarks);
  r.derived = derived_table;
  std::string body;
  return Call(Encode(r, options_), &body);
}

Status Client::SetTablePolicies(const std::string& table, const std::vector<tokens::StoredPolicy>& policies) {
  wire::Request r = Make(wire::Op::kSetTablePolicies, table);
  r.policies = policies;
  std::string body;
  return Call(Encode(std::move(r), options_), &body);
}

Result<std::vector<tokens::StoredPolicy>> Client::GetTablePolicies(const std::string& table) {
  std::string body;
  ST_RETURN_IF_ERROR(Call(Encode(Make(wire::Op::kGetTablePolicies, table), options_), &body));
  std::vector<tokens::StoredPolicy> out;
  ST_RETURN_IF_ERROR(wire::DecodePolicies(body, &out));
  return out;
}

Result<std::string> Client::IssueToken(const tokens::TokenSpec& spec) {
  wire::Request r = Make(wire::Op::kIssueToken, "");
  r.issue = spec;
  std::string body;
  ST_RETURN_IF_ERROR(Call(Encode(std::move(r), options_), &body));
  std::string text;
  ST_RETURN_IF_ERROR(wire::DecodeIssuedToken(body, &text));
  return text;
}

Result<BackupInfo> Client::Backup(std::chrono::milliseconds wait) {
  std::string body;
  ST_RETURN_IF_ERROR(Call(Encode(Make(wire::Op::kBackup), options_), &body, wait));
  wire::BackupReply r;
  ST_RETURN_IF_ERROR(wire::DecodeBackup(body, &r));
  BackupInfo info;
  info.name = std::move(r.name);
  info.path = std::move(r.path);
  info.first_lsn = r.first_lsn;
  info.last_lsn = r.last_lsn;
  info.tables = r.tables;
  info.files = r.files;
  info.bytes = r.bytes;
  info.took = std::chrono::microseconds(r.micros);
  info.removed = std::move(r.removed);
  return info;
}

Result<ChangeBatch> Client::ReadChanges(uint64_t from_lsn, uint32_t max_records, uint64_t max_bytes, bool raw) {
  std::string body;
  ST_RETURN_IF_ERROR(Call(Encode(ChangesRequest(from_lsn, max_records, max_bytes, raw), options_), &body));
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
  ST_RETURN_IF_ERROR(Call(Encode(r, options_), &body));
  uint64_t lsn = 0;
  ST_RETURN_IF_ERROR(wire::DecodeLsn(body, &lsn));
  return lsn;
}

void Client::SendWrite(const Batch& batch, Done<WriteResult> done, bool return_entity) {
  wire::Request r = WriteRequest(batch, NewClientRequestId());
  r.no_content = !return_entity;
  SendFrame(Encode(std::move(r), options_), Decoded<WriteResult>(std::move(done), wire::DecodeWrite));
}

void Client::SendWriteMany(const std::vector<Batch>& batches, Done<std::vector<Result<WriteResult>>> done) {
  wire::Request r = Make(wire::Op::kWriteMany);
  r.caller = batches.empty() ? std::string() : batches.front().caller();
  r.writes.reserve(batches.size());
  for (const Batch& b : batches) {
    wire::WriteItem& item = r.writes.emplace_back();
    item.table = b.table();
    item.borrowed_ops = &b.operations();  // encoded right away: no copy
    item.client_request_id = b.client_request_id().empty() ? NewClientRequestId() : b.client_request_id();
  }
  SendFrame(Encode(std::move(r), options_),
            Decoded<std::vector<Result<WriteResult>>>(std::move(done), wire::DecodeWriteMany));
}

void Client::SendGet(const std::string& table, const std::string& pk, const std::string& rk, Done<Entity> done,
                     const std::vector<std::string>& select, const ReadOptions& read) {
  SendFrame(Encode(GetRequest(table, pk, rk, select, read), options_),
            Decoded<Entity>(std::move(done), wire::DecodeEntityReply), WaitAllowance(read));
}

void Client::SendAdvanceWatermarks(const std::vector<Watermark>& watermarks, std::function<void(Status)> done) {
  SendFrame(Encode(WatermarksRequest(watermarks), options_),
            [done = std::move(done)](const Status& s, std::string_view) { done(s); });
}

void Client::SendQuery(const QueryOptions& q, const std::optional<Continuation>& next, Done<Page> done) {
  SendFrame(Encode(QueryRequest(q, next), options_), Decoded<Page>(std::move(done), DecodePage),
            WaitAllowance(q.read));
}

// One SendQueryPages or SendQueryPageViews call, shared by the callbacks of
// its page requests. For each reply the continuation is peeked first (the
// body's "tailAt" field points at it), the next page is asked for, and only
// then is the page decoded (or read in place) and handed over.
struct QueryPages {
  QueryOptions q;
  // Decodes the body, checks its continuation against the one peeked, hands
  // the page to the caller; false: the caller stopped.
  std::function<Result<bool>(std::string_view body, const std::optional<Continuation>& peeked)> hand_over;
  std::function<void(Status)> done;
  bool finished = false;

  void Finish(Status s) {
    if (finished) return;
    finished = true;
    done(std::move(s));
  }
};

namespace {

// The page's own continuation must be the one the next request was sent
// with: a body whose "tailAt" pointed elsewhere is refused, never followed.
Status SameContinuation(const std::optional<Continuation>& decoded, const std::optional<Continuation>& peeked) {
  if (decoded == peeked) return Status::OK();
  return Status(Code::kInternal, "malformed reply: the page's continuation is not where its tailAt points");
}

}  // namespace

void Client::SendQueryPages(const QueryOptions& q, std::function<bool(Page& page)> on_page,
                            std::function<void(Status)> done) {
  auto state = std::make_shared<QueryPages>();
  state->q = q;
  state->hand_over = [on_page = std::move(on_page)](std::string_view body,
                                                    const std::optional<Continuation>& peeked) -> Result<bool> {
    Page page;
    ST_RETURN_IF_ERROR(DecodePage(body, &page));
    ST_RETURN_IF_ERROR(SameContinuation(page.next, peeked));
    return on_page(page);
  };
  state->done = std::move(done);
  SendQueryPage(std::move(state), std::nullopt);
}

void Client::SendQueryPageViews(const QueryOptions& q, std::function<bool(PageView& page)> on_page,
                                std::function<void(Status)> done) {
  auto state = std::make_shared<QueryPages>();
  state->q = q;
  state->hand_over = [on_page = std::move(on_page)](std::string_view body,
                                                    const std::optional<Continuation>& peeked) -> Result<bool> {
    PageView page;
    ST_RETURN_IF_ERROR(PageView::Parse(body, &page));
    ST_RETURN_IF_ERROR(SameContinuation(page.next(), peeked));
    return on_page(page);
  };
  state->done = std::move(done);
  SendQueryPage(std::move(state), std::nullopt);
}

void Client::SendQueryPage(std::shared_ptr<QueryPages> state, const std::optional<Continuation>& next) {
  std::string frame = Encode(QueryRequest(state->q, next), options_);
  const auto wait = WaitAllowance(state->q.read);
  SendFrame(
      std::move(frame),
      [this, state](const Status& s, std::string_view body) {
        if (state->finished) return;  // the caller stopped: a page read ahead
        if (!s.ok()) return state->Finish(s);
        std::optional<std::string> npk, nrk;
        if (Status p = wire::PeekQueryContinuation(body, &npk, &nrk); !p.ok()) return state->Finish(p);
        std::optional<Continuation> next;
        if (npk) {
          next = Continuation(std::move(*npk), nrk.value_or(""));
          SendQueryPage(state, next);  // ahead, before this page is decoded
        }
        Result<bool> go_on = state->hand_over(body, next);
        if (!go_on.ok()) return state->Finish(go_on.status());
        if (!*go_on || !next) state->Finish(Status::OK());
      },
      wait);
}

Status PageView::Parse(std::string_view body, PageView* out) {
  // The bytes first: the index's views must point into the page's own copy.
  auto bytes = std::make_unique<std::string>(body);
  wire::QueryIndex index;
  ST_RETURN_IF_ERROR(wire::IndexQuery(*bytes, &index));
  out->entities_.resize(index.entities.size());
  for (size_t i = 0; i < index.entities.size(); i++) {
    const wire::EntityRef& from = index.entities[i];
    EntityView& to = out->entities_[i];
    to.pk_ = from.pk;
    to.rk_ = from.rk;
    to.etag_ = from.etag;
    to.props_ = from.props;
    to.timestamp_ = from.timestamp;
    to.prop_entries_ = from.prop_entries;
  }
  out->next_.reset();
  if (index.next_pk) out->next_ = Continuation(std::move(*index.next_pk), index.next_rk.value_or(""));
  out->plan_ = std::move(index.plan);
  out->examined_ = index.examined;
  out->bytes_ = std::move(bytes);
  return Status::OK();
}

namespace {
wire::EntityRef RefOf(std::string_view pk, std::string_view rk, std::string_view etag, int64_t ts,
                      std::string_view props, uint32_t entries) {
  return wire::EntityRef{pk, rk, etag, ts, props, entries};
}
}  // namespace

bool EntityView::Find(std::string_view name, PropertyView* out) const {
  return wire::FindProperty(RefOf(pk_, rk_, etag_, timestamp_, props_, prop_entries_), name, out);
}

Entity EntityView::ToEntity() const {
  Entity e;
  // The page's values were checked when it arrived: this cannot fail.
  (void)wire::EntityFromRef(RefOf(pk_, rk_, etag_, timestamp_, props_, prop_entries_), &e);
  return e;
}

void Client::SendReadChanges(uint64_t from_lsn, uint32_t max_records, uint64_t max_bytes, Done<ChangeBatch> done,
                             bool raw) {
  SendFrame(Encode(ChangesRequest(from_lsn, max_records, max_bytes, raw), options_),
            Decoded<ChangeBatch>(std::move(done), wire::DecodeChanges));
}

struct QueryIterator::Ahead {
  bool pending = false;  // asked for, not yet taken by Next
  bool arrived = false;
  Status status;
  Page page;
};

QueryIterator::QueryIterator(Client* client, QueryOptions q)
    : client_(client), q_(std::move(q)), ahead_(std::make_shared<Ahead>()) {}

void QueryIterator::Request() {
  ahead_->pending = true;
  ahead_->arrived = false;
  client_->SendQuery(q_, next_, [ahead = ahead_](Result<Page> page) {
    ahead->arrived = true;
    if (page.ok()) {
      ahead->page = std::move(*page);
    } else {
      ahead->status = page.status();
    }
  });
}

bool QueryIterator::Next(Entity* out) {
  while (pos_ >= page_.size()) {
    if (done_) return false;
    if (!ahead_->pending) {
      if (started_ && !next_) {
        done_ = true;
        return false;
      }
      Request();
    }
    while (!ahead_->arrived) client_->Poll(std::chrono::milliseconds(100));
    ahead_->pending = false;
    started_ = true;
    pages_++;
    if (!ahead_->status.ok()) {
      status_ = ahead_->status;
      done_ = true;
      return false;
    }
    page_ = std::move(ahead_->page.entities);
    next_ = std::move(ahead_->page.next);
    ahead_->page = Page{};
    pos_ = 0;
    if (next_) Request();  // ahead: the sidecar reads it while the caller uses this page
  }
  *out = std::move(page_[pos_++]);
  return true;
}

bool ChangeIterator::Next(ChangeRecord* out) {
  while (pos_ >= page_.size()) {
    if (done_) return false;
    auto batch = client_->ReadChanges(next_lsn_, page_records_);
    if (!batch.ok()) {
      status_ = batch.status();
      done_ = true;
      return false;
    }
    if (batch->first_available_lsn > next_lsn_ && next_lsn_ > 0) gap_ = true;
    page_ = std::move(batch->records);
    pos_ = 0;
    if (page_.empty()) {
      done_ = true;
      return false;
    }
    next_lsn_ = page_.back().lsn + 1;
  }
  *out = std::move(page_[pos_++]);
  return true;
}

}  // namespace sidetable::client
