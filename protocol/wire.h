// The sidetable wire protocol, version 1 (docs/protocol.md is normative).
//
// One ZeroMQ message frame per request and per reply:
//   16-byte header | MessagePack body (a map)
// The header carries the protocol version, the operation, the reply status
// and a request id the client chooses; replies may come back in any order
// and are matched by id. Entity property values keep their Edm type exactly:
// Int64, DateTime and Guid travel as MessagePack ext values.
//
// DecodeRequest() is the server's trust boundary: any byte string yields
// either a Request or an InvalidInput status (TooManyProperties for an
// entity declaring more than 252), never a crash
// (tests/fuzz/request_fuzz.cc). Declared counts are checked against the
// limits and against what the bytes left can hold before anything is
// allocated for them, so a decoded request is never much larger than its
// frame.
//
// Thread safety: stateless functions over values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/batch.h"
#include "engine/change_record.h"
#include "engine/edm.h"
#include "engine/row_view.h"
#include "engine/status.h"
#include "protocol/msgpack.h"
#include "protocol/token.h"

namespace sidetable::wire {

inline constexpr uint8_t kVersion = 1;
inline constexpr size_t kHeaderBytes = 16;

enum class Op : uint8_t {
  kPing = 1,
  kCreateTable = 2,
  kDeleteTable = 3,
  kListTables = 4,
  kWrite = 5,  // an EGT (a single operation is an EGT of one)
  kGet = 6,
  kQuery = 7,
  kReadChanges = 8,
  kRequestArchive = 9,      // record an archive move for the archive pattern's workers
  kAdvanceWatermarks = 10,  // a worker's applied watermarks (docs/consistency.md)
  kReadWatermarks = 11,
  kWriteMany = 12,         // independent EGTs in one request, each committed on its own
  kSetTablePolicies = 13,  // replace a table's stored access policies (docs/security.md)
  kGetTablePolicies = 14,
  kIssueToken = 15,  // sign a token within the caller's own scope (docs/security.md)
  kBackup = 16,  // a checkpoint of the data directory into storage.backup_dir (docs/operations.md)
  kForgetWatermarks = 17,  // stop counting a table as derived: an operator's (docs/consistency.md)
};
inline constexpr uint8_t kMaxOp = 17;
// WriteMany carries at most this many EGTs.
inline constexpr size_t kMaxWriteManyBatches = 1000;
std::string_view OpName(Op op);  // "Write", ... ("Unknown" otherwise)

// MessagePack ext type codes for the Edm types MessagePack lacks.
inline constexpr int8_t kExtInt64 = 1;     // 8 bytes, big-endian two's complement
inline constexpr int8_t kExtDateTime = 2;  // 8 bytes, big-endian ticks (100 ns since 0001-01-01)
inline constexpr int8_t kExtGuid = 3;      // 16 bytes

struct Header {
  uint8_t version = kVersion;
  uint8_t op = 0;
  uint16_t status = 0;  // 0 in requests; the HTTP status in replies
  uint64_t request_id = 0;
};
bool ParseHeader(std::string_view frame, Header* h);
void AppendHeader(std::string* out, const Header& h);
// Rewrites the request id of an encoded frame in place (a client's retry is
// the same bytes under a new id). The frame must hold a whole header.
void SetRequestId(std::string* frame, uint64_t request_id);

// ---- values and entities ------------------------------------------------------
void WriteValue(msgpack::Writer& w, const Value& v);
Status ReadValue(msgpack::Reader& r, std::string_view name, Value* v);
// The same value read in place: strings, binaries and Guids point into the
// reader's bytes. ReadValue is this plus PropertyView::ToValue.
Status ReadValueView(msgpack::Reader& r, std::string_view name, PropertyView* v);
// {"pk","rk","props"} plus "ts" and "etag" when with_meta.
void WriteEntity(msgpack::Writer& w, const Entity& e, bool with_meta);
// An entity read with $select, as Azure answers it: "pk", "rk" and "ts" only
// when PartitionKey, RowKey, Timestamp are selected; "etag" always; in
// "props" the selected properties the entity has, and nil for each selected
// one it lacks. `e` holds only selected properties already.
void WriteSelectedEntity(msgpack::Writer& w, const Entity& e, const std::vector<std::string>& select);
// Requests: pk and rk are required and a nil value is InvalidInput. Replies
// (kReply): pk and rk may be absent (not selected) and a nil value (a
// selected property the entity lacks) is left out of e->properties.
enum class EntityRead : uint8_t { kRequest, kReply };
Status ReadEntity(msgpack::Reader& r, Entity* e, EntityRead mode = EntityRead::kRequest);

// ---- watermarks and read-your-writes (docs/consistency.md) -----------------------
inline constexpr size_t kMaxWatermarkEntries = 1000;   // per AdvanceWatermarks
inline constexpr int32_t kMaxWatermarkPartitions = 10000;
inline constexpr size_t kMaxAfterTokens = 64;          // per Get or Query
inline constexpr uint64_t kMaxWaitMs = 60000;
inline constexpr uint64_t kDefaultWaitMs = 5000;       // when `after` is sent without waitMs

// How far `derived` has applied the change records of `source` that travel
// on Kafka partition `partition` of `partitions`: every record up to `lsn`.
struct WatermarkEntry {
  std::string derived;
  std::string source;
  int32_t partition = 0;
  int32_t partitions = 1;
  uint64_t lsn = 0;   // 0: only registers that derived is derived from source
  int64_t time = 0;   // commit time of record `lsn`, DateTime ticks (0 = unknown)
};

// A session token: the reader wrote `source` up to `lsn`.
struct AfterToken {
  std::string source;
  uint64_t lsn = 0;
};

// ---- requests -----------------------------------------------------------------
// One EGT of a WriteMany request.
struct WriteItem {
  std::string table;
  std::vector<Operation> ops;
  std::string client_request_id;  // "" = none
  // Encoding only: these operations instead of `ops`, read in place (the
  // client encodes its caller's Batch without copying it). Must outlive the
  // EncodeRequest call; DecodeRequest never sets it.
  const std::vector<Operation>* borrowed_ops = nullptr;
  const std::vector<Operation>& encoded_ops() const { return borrowed_ops != nullptr ? *borrowed_ops : ops; }
};

struct Request {
  uint64_t id = 0;
  Op op = Op::kPing;
  std::string table;
  std::string caller;
  std::vector<Operation> ops;        // kWrite
  // kWrite, encoding only: as WriteItem::borrowed_ops. An EGT of 100
  // entities copied into `ops` was 8% of a client's CPU per EGT.
  const std::vector<Operation>* borrowed_ops = nullptr;
  const std::vector<Operation>& encoded_ops() const { return borrowed_ops != nullptr ? *borrowed_ops : ops; }
  std::string pk, rk;  // kGet (pk also kRequestArchive)
  // Decoding only: whether the frame had the field ("" is a valid key).
  bool has_pk = false, has_rk = false;
  std::vector<std::string> select;   // kGet, kQuery
  std::string filter;                // kQuery, kListTables
  std::optional<int64_t> top;        // kQuery, kListTables
  std::optional<std::string> next_pk, next_rk;  // kQuery continuation
  std::optional<std::string> next_table;        // kListTables continuation
  uint64_t from_lsn = 0;             // kReadChanges
  uint64_t max_records = 1000;
  uint64_t max_bytes = 4 << 20;
  // kReadChanges: reply with a raw page (the change log's own record
  // encoding, EncodeRawChanges) instead of MessagePack records. Sidecars
  // before it skip the field and reply as before; DecodeChanges reads both.
  bool raw_changes = false;
  std::vector<std::string> rks;      // kRequestArchive
  std::string target;                // kRequestArchive: the archive table
  std::vector<WriteItem> writes;     // kWriteMany (the caller applies to each)
  bool no_content = false;           // kWrite: leave the inserted entity out of the reply
  // kWrite: the client's id for the write, the same on every retry; a
  // committed id is answered with its first outcome (docs/protocol.md).
  std::string client_request_id;
  std::vector<WatermarkEntry> watermarks;  // kAdvanceWatermarks
  // kReadWatermarks: only this derived table ("" = all); kForgetWatermarks: the table
  std::string derived;
  std::vector<AfterToken> after;           // kGet, kQuery: wait until these are covered
  std::optional<uint64_t> wait_ms;         // with `after`: at most this long (else kDefaultWaitMs)
  // Every operation: the signed access token (docs/security.md), "" = none.
  // With authentication on, the sidecar verifies it and records its
  // identity in the change log instead of `caller`.
  std::string token;
  std::vector<token::StoredPolicy> policies;  // kSetTablePolicies (empty: remove all)
  std::optional<token::TokenSpec> issue;      // kIssueToken: the token wanted (`spec`)
  // Not on the wire: set by the receiving sidecar for a request another
  // sidecar of its cluster forwarded (docs/scale-out.md): it runs here or is
  // refused, never forwarded again.
  bool forwarded = false;

  // The Batch a kWrite request describes. ToBatch copies the operations;
  // TakeBatch moves them out, leaving `ops` empty, for a request that is
  // done with once executed (an EGT of 100 entities is thousands of
  // allocations to copy and free).
  Batch ToBatch() const;
  Batch TakeBatch();
  // The Batches of a kWriteMany request (TakeBatches leaves `writes` empty).
  std::vector<Batch> ToBatches() const;
  std::vector<Batch> TakeBatches();
};

Status DecodeRequest(std::string_view frame, Request* out);
void EncodeRequest(const Request& r, std::string* out);

// ---- replies --------------------------------------------------------------------
// An error reply's message is valid UTF-8 and at most this long, whatever
// input it quotes.
inline constexpr size_t kMaxErrorMessageBytes = 2048;

// An error reply: {"code", "message", "index"?}.
void EncodeError(const Header& request, const Status& s, std::string* out);

// Reply bodies, encoded by the server after AppendHeader() and decoded by clients.
struct PingReply {
  int64_t version = kVersion;
  std::string sidecar_id;
  uint64_t last_lsn = 0;
};
struct TablesReply {
  std::vector<std::string> tables;
  std::optional<std::string> next_table;
};
struct QueryReply {
  std::vector<Entity> entities;
  std::vector<std::string> select;  // the query's $select (empty: whole entities)
  std::optional<std::string> next_pk, next_rk;
  std::string plan;
  uint64_t examined = 0;
};

void EncodePing(const PingReply& r, std::string* out);
void EncodeEmpty(std::string* out);
void EncodeTables(const TablesReply& r, std::string* out);
void EncodeWrite(const WriteResult& r, std::string* out);
// `select`: the Get's $select (null or empty: the whole entity).
void EncodeEntityReply(const Entity& e, std::string* out, const std::vector<std::string>* select = nullptr);
// Every Query reply body starts with {"tailAt": uint32, ...}: the offset, in
// the body, of the fields after the entities array (npk, nrk, plan,
// examined), as a fixed-width uint32 so it can be written once the page is
// complete. PeekQueryContinuation jumps there instead of walking the page;
// readers that do not know the field skip it.
void EncodeQuery(const QueryReply& r, std::string* out);
// One entity written straight from its stored row with a $select applied:
// the bytes WriteEntity / WriteSelectedEntity write for the decoded entity.
// Built once per request (it resolves $select), then Write() per row.
class RowEncoder {
 public:
  explicit RowEncoder(const std::vector<std::string>& select);  // kept by reference
  // A corrupt row is kInternal, with *out left unusable.
  Status Write(const RowView& row, std::string* out);

 private:
  const std::vector<std::string>& select_;
  bool pk_ = true, rk_ = true, ts_ = true;   // system fields written
  std::vector<std::string_view> user_;       // selected user names, each once, in $select order
  std::vector<uint8_t> found_;               // per user_ name: in the current row
};
// The Get reply {"entity": row} from the stored row: the bytes
// EncodeEntityReply writes for the decoded entity and the same $select.
Status EncodeRowReply(const RowView& row, const std::vector<std::string>& select, std::string* out);
// The Query reply written straight from stored rows, one Add() per entity
// (the sidecar's page, no Entity built): the same bytes EncodeQuery writes
// for the same entities and $select. Appends to *out from construction on;
// the body is complete after Finish(). An Add() that fails (a corrupt row,
// kInternal) leaves *out unusable: the caller answers with the error.
class QueryReplyWriter {
 public:
  // `select`: the query's $select (empty: whole entities); kept by reference.
  QueryReplyWriter(std::string* out, const std::vector<std::string>& select);
  Status Add(const RowView& row);
  void Finish(const std::optional<std::string>& next_pk, const std::optional<std::string>& next_rk,
              std::string_view plan, uint64_t examined);
  uint32_t count() const { return count_; }
  // The body's bytes so far (what query::Query::max_bytes bounds).
  uint64_t bytes() const { return out_->size() - map_at_; }

 private:
  std::string* out_;
  RowEncoder row_;
  size_t map_at_ = 0, tail_at_ = 0, array_at_ = 0;
  uint32_t count_ = 0;
};
void EncodeChanges(const ChangeBatch& b, std::string* out);
// The raw form of a ReadChanges reply, {"raw": bin, "n", "first", "last"},
// written around a page appended in place (no copy): BeginRawChanges writes
// the map and a placeholder for the page's length and returns where;
// the caller appends the page; FinishRawChanges sets the length and writes
// the rest.
size_t BeginRawChanges(std::string* out);
void FinishRawChanges(const RawChangePage& page, size_t begin, std::string* out);
void EncodeLsn(uint64_t lsn, std::string* out);  // {"lsn": n}
// {"results": [write result | {"code","message","index"?}, ...]}, in order.
void EncodeWriteMany(const std::vector<Result<WriteResult>>& results, std::string* out);
void EncodeWatermarks(const std::vector<WatermarkEntry>& entries, std::string* out);  // {"watermarks": [...]}
// {"policies": [{"id", "start"?, "expiry"?, "sp"?}, ...]}: GetTablePolicies.
void EncodePolicies(const std::vector<token::StoredPolicy>& policies, std::string* out);

// Splits a reply frame. A reply whose status is not 2xx becomes the error
// Status it carries (code, message, operation index).
Status DecodeReply(std::string_view frame, Header* h, std::string_view* body);
Status DecodePing(std::string_view body, PingReply* r);
Status DecodeTables(std::string_view body, TablesReply* r);
Status DecodeWrite(std::string_view body, WriteResult* r);
Status DecodeEntityReply(std::string_view body, Entity* e);
Status DecodeQuery(std::string_view body, QueryReply* r);
// A query reply's continuation alone: its entities are skipped, not
// decoded, so a client can ask for the next page before it decodes this
// one (Client::SendQueryPages). A malformed body is refused as DecodeQuery
// refuses it (kInternal, "malformed reply").
Status PeekQueryContinuation(std::string_view body, std::optional<std::string>* next_pk,
                             std::optional<std::string>* next_rk);
// A query reply read in place (wire_reply.cc, wire_values.cc): one pass finds each entity's
// keys, ETag, timestamp and properties as views into `body` and checks every
// value as DecodeQuery would, without building Entity values. The views are
// valid while `body` is.
struct EntityRef {
  std::string_view pk, rk, etag;  // "" when not selected
  int64_t timestamp = 0;          // 0 when not selected
  std::string_view props;         // the "props" map's entries, after its header
  uint32_t prop_entries = 0;      // entries in `props` (nil ones included)
};
struct QueryIndex {
  std::vector<EntityRef> entities;
  std::optional<std::string> next_pk, next_rk;
  std::string plan;
  uint64_t examined = 0;
};
Status IndexQuery(std::string_view body, QueryIndex* out);
// The property `name` of an indexed entity; false when it is absent (or nil:
// selected, and the entity lacks it).
bool FindProperty(const EntityRef& e, std::string_view name, PropertyView* out);
// The Entity an indexed entity describes (allocates, as DecodeQuery does).
Status EntityFromRef(const EntityRef& e, Entity* out);
// Either form of the reply: MessagePack records or a raw page.
Status DecodeChanges(std::string_view body, ChangeBatch* b);
Status DecodeLsn(std::string_view body, uint64_t* lsn);
Status DecodeWriteMany(std::string_view body, std::vector<Result<WriteResult>>* results);
Status DecodeWatermarks(std::string_view body, std::vector<WatermarkEntry>* entries);
Status DecodePolicies(std::string_view body, std::vector<token::StoredPolicy>* policies);

// IssueToken (wire_issue.cc): the request's `spec`, a map of the token text
// format's fields ("tn" or "tp", "spk", "srk", "epk", "erk", "sp", "st",
// "se", "tenant", "caller", "si"; string values written as in a token,
// unescaped), and the reply {"token": "<token text>"}. ReadTokenSpec
// refuses an unknown or repeated field, a non-string value, more than
// kMaxTokenSpecFields entries, a value over the token's limits, bad
// permission letters or times (InvalidInput); the rest of the token rules
// are checked when it is signed (token::IssueToken).
inline constexpr uint32_t kMaxTokenSpecFields = 11;
Status ReadTokenSpec(msgpack::Reader& r, token::TokenSpec* out);
void WriteTokenSpec(msgpack::Writer& w, const token::TokenSpec& spec);
void EncodeIssuedToken(std::string_view token, std::string* out);
Status DecodeIssuedToken(std::string_view body, std::string* token);

// Backup (wire_backup.cc): the request has no fields of its own; the reply
// {"name", "path", "firstLsn", "lastLsn", "tables", "files", "bytes",
// "micros", "removed": [names]} says what was made and which older backups
// storage.backup_keep removed.
struct BackupReply {
  std::string name;                      // the backup's directory name in storage.backup_dir
  std::string path;                      // its absolute path on the sidecar's host
  uint64_t first_lsn = 1, last_lsn = 0;  // the change log it holds
  uint64_t tables = 0, files = 0, bytes = 0, micros = 0;
  std::vector<std::string> removed;
};
void EncodeBackup(const BackupReply& r, std::string* out);
Status DecodeBackup(std::string_view body, BackupReply* r);

// Stored access policies as a request field and a reply body
// (wire_policy.cc): at most token::kMaxPoliciesPerTable, each checked
// (token::ValidatePolicies) before it is accepted.
Status ReadPolicies(msgpack::Reader& r, std::vector<token::StoredPolicy>* out);
void WritePolicies(msgpack::Writer& w, const std::vector<token::StoredPolicy>& policies);

// The request fields of watermarks and session tokens (wire_session.cc),
// used by DecodeRequest and EncodeRequest: counts are checked before
// anything is allocated, names against the table-name rules.
Status ReadWatermarkEntries(msgpack::Reader& r, std::vector<WatermarkEntry>* out);
Status ReadAfterTokens(msgpack::Reader& r, std::vector<AfterToken>* out);
void WriteWatermarkEntries(msgpack::Writer& w, const std::vector<WatermarkEntry>& entries);
void WriteAfterTokens(msgpack::Writer& w, const std::vector<AfterToken>& tokens);

}  // namespace sidetable::wire
