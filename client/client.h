// Client: the C++ library applications, workers, tools and tests use to talk
// to a sidetable sidecar over ZeroMQ (docs/protocol.md).
//
// Thread safety: a Client is NOT thread-safe, like the ZeroMQ socket it owns:
// use one per thread. Within a thread it pipelines: SendWrite(), SendGet(),
// SendQuery(), SendReadChanges() any number of requests, then Poll()/Drain()
// runs each callback as its reply arrives, in whatever order the server
// answers.
//
// Its public types are its own (ServerInfo, Page, Continuation, Watermark,
// SessionToken, ReadOptions) and the
// entity model's (Entity, Batch, WriteResult, ChangeBatch, Status): the wire
// format (protocol/) stays inside the library.
//
// Retries: a request answered ServerBusy (never executed) or not answered
// within `timeout` is sent again after an exponential back-off with jitter,
// up to `max_attempts` in all. Every write carries a client request id (the
// Batch's own, or a random one the client draws), the same on each attempt:
// a retry of a write that did commit is answered with its first outcome
// (WriteResult::replayed), never applied twice, within the sidecar's
// request-id window (docs/protocol.md). Set max_attempts = 1 to opt out of
// retries.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/batch.h"
#include "engine/change_record.h"
#include "engine/edm.h"
#include "engine/row_view.h"
#include "engine/status.h"
#include "client/tokens.h"

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace sidetable::client {

class ConnectionWatch;

// Empty: a plain connection.
struct CurveClientKeys {
  std::string server_public_key;
  std::string public_key;
  std::string secret_key;
  bool enabled() const { return !server_public_key.empty(); }
};

struct ClientOptions {
  std::string endpoint = "tcp://127.0.0.1:5555";
  std::chrono::milliseconds timeout{5000};       // per attempt
  int max_attempts = 5;                          // first try included
  std::chrono::milliseconds backoff_initial{5};
  std::chrono::milliseconds backoff_max{1000};
  std::string caller;                            // recorded in the change log
  // A signed access token (docs/security.md), sent with every request; an
  // authenticating sidecar (auth.mode: tokens) refuses requests without
  // one, and records the token's identity in the change log instead of
  // `caller`. Issue one with client/tokens.h; replace it with SetToken().
  std::string token;
  // Give writes without their own client request id a unique one (128
  // bits, hex: this client's random 64 bits, then a counter). Off only
  // where writes are idempotent by construction (the pattern workers'
  // fenced writes), to save the sidecar remembering them.
  bool client_request_ids = true;
  // The sidecar's sidecar.max_request_bytes (its default here). A request
  // frame over twice this is refused here, RequestBodyTooLarge at the next
  // Poll(), never sent: the sidecar's ZeroMQ drops such a frame with the
  // connection (maxmsgsize), so it could only time out, attempt after
  // attempt. Frames up to twice this are sent, and one over the sidecar's
  // limit gets its own 413. Raise it with the sidecar's; 0: no check.
  size_t max_request_bytes = 6 << 20;
  // ZeroMQ CURVE (docs/security.md, "Transport"): the sidecar's public key
  // and this client's key pair, Z85 text (40 characters each); all three or
  // none. client/curve.h reads them from key files (LoadCurveKeys). A
  // sidecar that does not allow this client's public key refuses it at the
  // handshake: requests then go unanswered (Code::kNoReply), never reaching it.
  CurveClientKeys curve;
  // When set and *abandon becomes true, every pending request finishes at
  // once (within ~20 ms) with Code::kNoReply, as if its time had run out,
  // and no retry is sent: a process that is stopping does not wait out
  // `timeout` x `max_attempts` on a sidecar that does not answer (a frozen
  // one). Whether an abandoned request was executed is unknown, as with any
  // kNoReply. Requests sent while it is true are abandoned the same way.
  // Not owned; must outlive the client.
  const std::atomic<bool>* abandon = nullptr;
};

// Read your own writes (docs/consistency.md): a session token says "I wrote
// `source_table` up to change `lsn`". A read carrying tokens is answered
// only once the table read (a derived table: an index, an archive) covers
// every token of a source it is derived from; tokens of other tables have
// nothing to wait for. Get them from WriteResult::lsn, or let a
// client::Session (client/session.h) keep them.
struct SessionToken {
  std::string source_table;
  uint64_t lsn = 0;
  friend bool operator==(const SessionToken&, const SessionToken&) = default;
};

// Tokens for one read and how long the sidecar may wait for them (0..60 s;
// unset: the sidecar's default, 5 s). Not covered in time:
// Code::kReadSessionNotAvailable, never stale data.
struct ReadOptions {
  std::vector<SessionToken> after;
  std::optional<std::chrono::milliseconds> wait;
};

struct QueryOptions {
  std::string table;
  std::string filter;
  std::vector<std::string> select;
  std::optional<int> top;  // page size (1..1000)
  ReadOptions read;        // session tokens (every page waits for them)
};

// How far derived_table has applied source_table's change records that
// travel on Kafka partition `partition` of `partitions`: every one up to
// `lsn` (0: only registers the pair). Pattern workers report them.
struct Watermark {
  std::string derived_table;
  std::string source_table;
  int32_t partition = 0;
  int32_t partitions = 1;
  uint64_t lsn = 0;
  int64_t commit_time = 0;  // DateTime ticks of record `lsn` (0 = unknown)
  friend bool operator==(const Watermark&, const Watermark&) = default;
};

// What Ping() learns about the sidecar.
struct ServerInfo {
  int64_t protocol_version = 0;
  std::string sidecar_id;
  uint64_t last_lsn = 0;  // the newest committed change
};

// What Backup() made: a directory on the sidecar's host (docs/operations.md,
// "Backup and restore").
struct BackupInfo {
  std::string name;  // in the sidecar's storage.backup_dir
  std::string path;  // absolute, on the sidecar's host
  // The change log it holds; every commit up to last_lsn is in it.
  uint64_t first_lsn = 1;
  uint64_t last_lsn = 0;
  uint64_t tables = 0;
  uint64_t files = 0;
  uint64_t bytes = 0;
  std::chrono::microseconds took{0};
  std::vector<std::string> removed;  // older backups storage.backup_keep removed
};

// Where the next page of a query starts: (NextPartitionKey, NextRowKey), as
// Azure's continuation headers carry them.
using Continuation = std::pair<std::string, std::string>;

// One page of a query.
struct Page {
  std::vector<Entity> entities;
  std::optional<Continuation> next;  // nullopt: this was the last page
  std::string plan;                  // how the sidecar ran it ("partition-scan", ...)
  uint64_t examined = 0;             // entities read to fill the page
};

// One entity of a PageView, read in place: its strings point into the
// page's bytes, so it is valid as long as that PageView (moves included).
class EntityView {
 public:
  std::string_view partition_key() const { return pk_; }  // "" when not selected
  std::string_view row_key() const { return rk_; }         // "" when not selected
  std::string_view etag() const { return etag_; }
  int64_t timestamp() const { return timestamp_; }          // 0 when not selected
  // The property `name`, its bytes in the page; false when the entity lacks it.
  bool Find(std::string_view name, PropertyView* out) const;
  // The whole entity as an Entity value (allocates, as Page's decoding does).
  Entity ToEntity() const;

 private:
  friend class PageView;
  std::string_view pk_, rk_, etag_, props_;
  int64_t timestamp_ = 0;
  uint32_t prop_entries_ = 0;
};

// One page of a query read in place (SendQueryPageViews): the reply's bytes,
// kept, and a view per entity, every value checked when the page arrived.
// Nothing becomes an Entity unless asked (EntityView::ToEntity), so a caller
// that maps entities into its own types, or reads a few properties, does
// not pay for an allocation per string. Movable; the views stay valid.
class PageView {
 public:
  const std::vector<EntityView>& entities() const { return entities_; }
  const std::optional<Continuation>& next() const { return next_; }  // nullopt: the last page
  const std::string& plan() const { return plan_; }
  uint64_t examined() const { return examined_; }
  // A reply body read in place (it is copied into the page first).
  static Status Parse(std::string_view body, PageView* out);

 private:
  std::unique_ptr<std::string> bytes_;
  std::vector<EntityView> entities_;
  std::optional<Continuation> next_;
  std::string plan_;
  uint64_t examined_ = 0;
};

// Pipelined calls report their final outcome (after retries) through one of
// these; a reply that cannot be decoded arrives as an InvalidInput status.
template <typename T>
using Done = std::function<void(Result<T> result)>;

class QueryIterator;
class ChangeIterator;
struct QueryPages;  // client.cc: the state of one SendQueryPages or SendQueryPageViews

class Client {
 public:
  static Result<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // ---- synchronous calls -------------------------------------------------
  Result<ServerInfo> Ping();
  Status CreateTable(const std::string& table);
  Status DeleteTable(const std::string& table);
  // All tables (follows continuations), optionally filtered on TableName.
  Result<std::vector<std::string>> ListTables(const std::string& filter = "");
  Result<WriteResult> Execute(const Batch& batch);
  // The result's `entity` is the entity as stored (Timestamp, ETag), as
  // Azure's 201; `return_entity` false asks for no content (204).
  Result<WriteResult> Insert(const std::string& table, Entity e, bool return_entity = true);
  // Update, Merge and Delete of an entity take their If-Match from the
  // entity's ETag when none is given (as Azure's SDKs do for an entity read
  // back): a concurrent change answers UpdateConditionNotSatisfied instead
  // of being overwritten. Pass "*" for an unconditional write; an entity
  // without an ETag is written unconditionally.
  Result<WriteResult> Update(const std::string& table, Entity e, std::optional<std::string> if_match = {});
  Result<WriteResult> Merge(const std::string& table, Entity e, std::optional<std::string> if_match = {});
  Result<WriteResult> Delete(const std::string& table, const Entity& e, std::optional<std::string> if_match = {});
  // By keys alone: unconditional unless an ETag is given.
  Result<WriteResult> Delete(const std::string& table, std::string pk, std::string rk,
                             std::string if_match = "*");
  Result<WriteResult> InsertOrReplace(const std::string& table, Entity e);
  Result<WriteResult> InsertOrMerge(const std::string& table, Entity e);
  Result<Entity> Get(const std::string& table, const std::string& pk, const std::string& rk,
                     const std::vector<std::string>& select = {});
  // Waits (on the sidecar) until `read.after` is covered.
  Result<Entity> Get(const std::string& table, const std::string& pk, const std::string& rk,
                     const std::vector<std::string>& select, const ReadOptions& read);
  // One page; pass the previous reply's continuation to get the next.
  Result<Page> QueryPage(const QueryOptions& q, const std::optional<Continuation>& next = {});
  // Every matching entity, following continuations page by page.
  QueryIterator Query(const QueryOptions& q);
  // Pages travel in the change log's own record encoding (the sidecar ships
  // them undecoded, this side decodes each record once); `raw` false asks
  // for MessagePack records as sidecars before that option send. The
  // records are the same either way.
  Result<ChangeBatch> ReadChanges(uint64_t from_lsn, uint32_t max_records = 1000,
                                  uint64_t max_bytes = 4 << 20, bool raw = true);
  // Every change record from `from_lsn` on that exists now, page by page.
  ChangeIterator Changes(uint64_t from_lsn, uint32_t page_records = 1000);
  // Asks the archive pattern's workers to move these entities of one
  // partition to `archive_table`; returns the change record's LSN.
  Result<uint64_t> RequestArchive(const std::string& table, const std::string& pk,
                                  const std::vector<std::string>& row_keys,
                                  const std::string& archive_table);
  // Raises the stored watermarks to these (each only grows; durable). At
  // most 1,000 entries; an lsn above the sidecar's last LSN is InvalidInput.
  Status AdvanceWatermarks(const std::vector<Watermark>& watermarks);
  // Every stored watermark, or those of one derived table.
  Result<std::vector<Watermark>> ReadWatermarks(const std::string& derived_table = "");
  // Stops counting `derived_table` as derived: forgets its watermarks
  // (durable; nothing registered is not an error). For a table no worker
  // derives any more; a worker that still does registers it again.
  Status ForgetWatermarks(const std::string& derived_table);

  // ---- pipelined calls ---------------------------------------------------
  // Each sends now; `done` runs from Poll()/Drain() when the final reply
  // arrives (after retries) or the request fails.
  // A batch of one Insert is answered with the entity as stored (Azure's
  // default); return_entity false asks for no content (Azure's "Prefer:
  // return-no-content", what the SDKs' createEntity sends): the reply then
  // carries only the ETag, timestamp and LSN.
  void SendWrite(const Batch& batch, Done<WriteResult> done, bool return_entity = true);
  // Independent EGTs in one request (each commits on its own, in order; one
  // failing does not stop the others): `done` gets one result per batch, or
  // the request's own failure. All batches take the first one's caller.
  // At most 1,000 batches and sidecar.max_request_bytes in all. Ordered
  // with the requests sent before and after it on this client only for
  // its first batch's partition (docs/protocol.md, "Request ids").
  void SendWriteMany(const std::vector<Batch>& batches, Done<std::vector<Result<WriteResult>>> done);
  void SendGet(const std::string& table, const std::string& pk, const std::string& rk, Done<Entity> done,
               const std::vector<std::string>& select = {}, const ReadOptions& read = {});
  void SendQuery(const QueryOptions& q, const std::optional<Continuation>& next, Done<Page> done);
  // Every page of a query, read ahead: when a page arrives, its
  // continuation is read first (the entities skipped, not decoded) and the
  // next page is requested at once; only then is the page decoded and
  // handed to `on_page`. The sidecar reads page n+1 while this thread
  // decodes and uses page n. One request at most is ahead, so at most two
  // pages are held at a time. Pages reach `on_page` in order. `on_page`
  // returns false to stop; a page already asked for is then dropped when it
  // arrives. `done` runs once: with the first failure, or OK after the last
  // page (or after `on_page` stopped).
  void SendQueryPages(const QueryOptions& q, std::function<bool(Page& page)> on_page,
                      std::function<void(Status)> done);
  // The same, each page read in place instead of decoded into Entity values.
  void SendQueryPageViews(const QueryOptions& q, std::function<bool(PageView& page)> on_page,
                          std::function<void(Status)> done);
  void SendReadChanges(uint64_t from_lsn, uint32_t max_records, uint64_t max_bytes, Done<ChangeBatch> done,
                       bool raw = true);
  void SendAdvanceWatermarks(const std::vector<Watermark>& watermarks, std::function<void(Status)> done);
  // Receives and dispatches replies for up to `wait` (returns early once at
  // least one request completed). Handles back-off timers and time-outs.
  void Poll(std::chrono::milliseconds wait);
  // Polls until no request is pending.
  void Drain();
  size_t pending() const { return pending_.size(); }
  // Why requests to this endpoint go unanswered, as far as this client's
  // socket has seen ("the connect failed (3 times): nothing listens at
  // ...", client/connection_watch.h); "" when it saw nothing to say. The
  // message of every Code::kNoReply already ends with it.
  std::string WhyUnanswered();

  // Raw access for tests of the protocol itself: sends one frame as is and
  // returns the next reply frame (no retries, no id matching).
  Result<std::string> RawRoundTrip(const std::string& frame);

  const ClientOptions& options() const { return options_; }
  // Replaces the token for requests sent from now on (a refreshed token
  // before the old one expires); requests already pending keep theirs.
  void SetToken(std::string token) { options_.token = std::move(token); }

  // ---- stored access policies (needs permission m on the table) ----------
  // Replaces the table's policies (at most 5; an empty list removes all).
  // Changing or removing a policy revokes every token issued under it.
  Status SetTablePolicies(const std::string& table, const std::vector<tokens::StoredPolicy>& policies);
  Result<std::vector<tokens::StoredPolicy>> GetTablePolicies(const std::string& table);

  // ---- delegation (needs permission m; auth.mode: tokens) -----------------
  // Has the sidecar sign a token for `spec` with its own key: the valet-key
  // pattern without handing the application tier a key. The spec must lie
  // within this client's token (table or prefix inside its table scope, key
  // range inside its range, permissions a subset, its own expiry not after
  // this token's, the same tenant, a stored policy that exists); otherwise
  // AuthorizationFailure or AuthorizationPermissionMismatch and nothing is
  // issued. InvalidInput from a sidecar with authentication off.
  Result<std::string> IssueToken(const tokens::TokenSpec& spec);

  // ---- backup (needs r, c and m on every table with authentication on) ----
  // Has the sidecar make a backup of its whole data directory in its
  // storage.backup_dir: every write acknowledged before the call is in it.
  // The sidecar runs one at a time; it may take a while (a flush; copies
  // when the backup directory is on another filesystem), so each attempt
  // may take `wait` beyond the client's timeout while its connection is
  // up (a sidecar gone is NoReply after the timeout). InvalidInput when the
  // sidecar has no storage.backup_dir; InsufficientStorage when a disk is
  // full (nothing is left behind). A retry after no reply may make a
  // second backup.
  Result<BackupInfo> Backup(std::chrono::milliseconds wait = std::chrono::minutes(10));

 private:
  // The final status and the reply body (valid only during the call).
  using ReplyCallback = std::function<void(const Status& status, std::string_view body)>;

  struct Pending {
    std::string frame;  // header and body; a retry rewrites the id in the header
    ReplyCallback done;
    int attempts = 0;
    std::chrono::steady_clock::time_point deadline;   // of the current attempt
    std::chrono::steady_clock::time_point resend_at;  // when backing off
    std::chrono::milliseconds wait{0};                // the server may hold it this long
    std::chrono::steady_clock::time_point sent;       // the current attempt
    uint64_t drops = 0;  // the connection watch's drops() when it was sent
    bool waiting_to_resend = false;
    Status refused;  // not OK: never sent, finished with this at the next Poll()
  };

  explicit Client(const ClientOptions& options);
  // curve.cc: CURVE options on the socket, before it connects.
  Status SetCurve();
  // Sends an encoded request (its id is assigned here, in the header).
  // `wait`: how long the server may hold the request on purpose (a read
  // with session tokens); each attempt's deadline is timeout + wait.
  void SendFrame(std::string frame, ReplyCallback done, std::chrono::milliseconds wait = {});
  Status Call(std::string frame, std::string* body, std::chrono::milliseconds wait = {});
  void Transmit(Pending& p);
  // At an attempt's deadline: true (and a later deadline) when it may take
  // longer (`wait`) and its connection is still up.
  bool KeepWaiting(Pending& p, std::chrono::steady_clock::time_point now);
  // OK, or RequestBodyTooLarge for a frame no sidecar of this client's
  // max_request_bytes could answer.
  Status CheckFrameSize(size_t bytes) const;
  void Finish(uint64_t id, const Status& s, std::string_view body);
  void ScheduleRetry(uint64_t id, Pending& p);
  void OnFrame(std::string_view frame);
  void CheckTimers();
  // "no reply from <endpoint> after N attempt(s)", and why, when the
  // connection's events tell.
  std::string NoReplyMessage(int attempts);
  // ClientOptions::abandon is set: every pending request fails (kNoReply).
  bool Abandoning() const;
  void AbandonPending();
  // One page of SendQueryPages/SendQueryPageViews; its reply requests the next.
  void SendQueryPage(std::shared_ptr<QueryPages> state, const std::optional<Continuation>& next);
  Result<WriteResult> WriteOne(const std::string& table, OpKind kind, Entity e,
                               std::string if_match);

  ClientOptions options_;
  std::unique_ptr<zmq::context_t> ctx_;
  std::unique_ptr<zmq::socket_t> socket_;
  // Says why a request went unanswered (connection_watch.h); may be null.
  std::unique_ptr<ConnectionWatch> watch_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Pending> pending_;
  size_t completed_ = 0;
  std::mt19937_64 rng_{std::random_device{}()};
  // Client request ids: this client's 64 random bits (from the OS, drawn
  // when it is made) and a counter (NewClientRequestId).
  uint64_t id_prefix_ = 0;
  uint64_t id_count_ = 0;
  std::string NewClientRequestId();
};

// Iterates all entities of a query, page by page, one page ahead: when it
// moves to a page that has a continuation it asks for the next page at
// once, so the sidecar reads it while the caller works through this one.
// An iterator dropped before its end leaves that one request to finish (its
// page is discarded when it arrives, at the client's next Poll).
// Not copyable: the page read ahead belongs to one iterator.
class QueryIterator {
 public:
  QueryIterator(Client* client, QueryOptions q);
  QueryIterator(QueryIterator&&) = default;
  QueryIterator& operator=(QueryIterator&&) = default;
  // Next entity into *out; false at the end or on error (see status()).
  bool Next(Entity* out);
  const Status& status() const { return status_; }
  size_t pages() const { return pages_; }

 private:
  struct Ahead;  // client.cc: the page asked for, shared with its callback
  void Request();

  Client* client_;
  QueryOptions q_;
  std::vector<Entity> page_;
  size_t pos_ = 0;
  std::optional<Continuation> next_;
  bool started_ = false, done_ = false;
  size_t pages_ = 0;
  Status status_;
  std::shared_ptr<Ahead> ahead_;
};

// Iterates the change log; fetches pages lazily. It ends at the newest
// record that existed when its last page was read (call Changes() again from
// next_lsn() to follow later ones). Records trimmed before they were read
// are skipped: first_lsn() of the batch tells, and gap() says whether any were.
class ChangeIterator {
 public:
  ChangeIterator(Client* client, uint64_t from_lsn, uint32_t page_records)
      : client_(client), next_lsn_(from_lsn), page_records_(page_records) {}
  // Next record into *out; false at the end or on error (see status()).
  bool Next(ChangeRecord* out);
  const Status& status() const { return status_; }
  uint64_t next_lsn() const { return next_lsn_; }
  bool gap() const { return gap_; }  // records below the first available were asked for

 private:
  Client* client_;
  uint64_t next_lsn_;
  uint32_t page_records_;
  std::vector<ChangeRecord> page_;
  size_t pos_ = 0;
  bool done_ = false, gap_ = false;
  Status status_;
};

}  // namespace sidetable::client
