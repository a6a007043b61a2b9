// Handler: executes one decoded request against the engine and encodes the
// reply frame. The only place that maps protocol operations to engine calls.
//
// Thread safety: Handle() may run on many worker threads at once (the
// engine is thread-safe; the handler has no mutable state of its own).
#pragma once

#include <string>

#include "engine/engine.h"
#include "protocol/token.h"
#include "protocol/wire.h"
#include "sidecar/auth/authenticator.h"
#include "sidecar/auth/policy_store.h"
#include "sidecar/changestream/publisher.h"
#include "sidecar/cluster_routing.h"
#include "sidecar/config.h"
#include "sidecar/metrics.h"
#include "sidecar/watermarks.h"

namespace sidetable::sidecar {

class Handler {
 public:
  // `publisher` may be null (no change stream); `authenticator` is null
  // with auth.mode off (it signs the tokens IssueToken hands out).
  Handler(Engine* engine, Metrics* metrics, const ServerConfig* config,
          changestream::Publisher* publisher, Watermarks* watermarks, auth::PolicyStore* policies,
          const auth::Authenticator* authenticator = nullptr)
      : engine_(engine), metrics_(metrics), config_(config), publisher_(publisher),
        watermarks_(watermarks), policies_(policies), authenticator_(authenticator) {}

  // Appends the whole reply frame (header and body) to *out and returns the
  // outcome (Code::kOk or the error code sent). `principal` is the request's
  // verified token (null: authentication off): every operation is checked
  // against it before it touches data (sidecar/auth/authorize.h).
  // *entities, when given, gets the entities written or returned.
  // With `await_lsn` given, a Write returns as soon as it is written and
  // visible and sets *await_lsn to the LSN that must be durable
  // (Engine::WaitDurable) before the reply may be sent (0: none); without
  // it, Handle waits for durability itself.
  //
  // In a cluster (SetRouting) a request may be forwarded to the owner of its
  // shard, fanned out or split (cluster_routing.h). Writes executed here
  // carry their shard's epoch; with replicated acknowledgement and
  // `fence` given, the (shard, epoch) pairs go to *fence and the caller
  // holds the reply until ClusterRouting::AwaitReplicated (with await_lsn)
  // says so; without `fence`, Handle waits for that itself.
  //
  // With `group` (and await_lsn), a single write (Op::kWrite) is deferred
  // into it (engine/write_group.h): its reply is final but may leave only
  // after the group's flush, and only if its ticket's outcome is OK.
  Code Handle(const wire::Request& request, const token::Token* principal, std::string* out,
              uint64_t* entities = nullptr, uint64_t* await_lsn = nullptr,
              std::vector<ShardEpoch>* fence = nullptr, WriteGroup* group = nullptr) const;
  // The same, for a request the caller is done with: a write's operations
  // are moved into the engine's Batch instead of copied (wire::Request::
  // TakeBatch; an EGT of 100 entities is thousands of allocations). Its
  // `ops` and `writes` may be empty afterwards; every other field stays.
  // (In a cluster they are copied: a write may run twice, cluster.h
  // CatchUpCatalog.)
  Code HandleConsuming(wire::Request& request, const token::Token* principal, std::string* out,
                       uint64_t* entities = nullptr, uint64_t* await_lsn = nullptr,
                       std::vector<ShardEpoch>* fence = nullptr, WriteGroup* group = nullptr) const;

  // After flushing the group a Handle deferred `n` writes into: gives back
  // their change-stream backlog admission, which Handle kept for them.
  void FinishDeferredWrites(uint64_t n) const;

  // A deferred write's table counters (sidetable_table_*): Handle does not
  // count a write it deferred into a group, since the group's flush may yet
  // fail; the caller takes these from the request before Handle (which may
  // consume its operations) and records them once the write's ticket is OK.
  struct TableWrite {
    std::string table;
    size_t operations = 0;
    size_t written = 0;  // operations that leave an entity (not deletes)
  };
  static TableWrite TableWriteOf(const wire::Request& write);
  void RecordTableWrite(const TableWrite& w) const;

  // Scale-out routing (null: one sidecar, its own tables). Set before serving.
  void SetRouting(ClusterRouting* routing) { routing_ = routing; }
  ClusterRouting* routing() const { return routing_; }

  // The token a request forwarded to another member carries for a
  // principal this sidecar verified without a token text (the REST
  // gateway's SharedKey and SAS): the owner enforces it (cluster_routing.h
  // Intercept). Signed with auth.keys[0] with authentication on (every
  // member has the same keys); with it off, signed with a key no one
  // checks, since an owner with authentication off applies a forwarded
  // token's scope unverified (frontend.cc).
  Result<std::string> ForwardToken(const token::Token& principal) const;
  // The key id of ForwardToken's tokens with authentication off.
  static constexpr std::string_view kUncheckedForwardKeyId = "forwarded-unchecked";

 private:
  // What the writes of one request did, for replicated acknowledgement.
  struct Written {
    uint64_t lsn = 0;                // the newest LSN committed
    std::vector<ShardEpoch> shards;  // each (shard, epoch) written here
  };
  // `consumable`: r itself, when its operations may be moved out; or null.
  Code HandleImpl(const wire::Request& r, wire::Request* consumable, const token::Token* principal,
                  std::string* out, uint64_t* entities, uint64_t* await_lsn, std::vector<ShardEpoch>* fence,
                  WriteGroup* group) const;
  Status Run(const wire::Request& r, wire::Request* consumable, const token::Token* principal, std::string* body,
             uint16_t* http_status, uint64_t* entities, uint64_t* await_lsn, Written* written,
             WriteGroup* group) const;
  // Cluster mode: the epoch a write on (table, pk) runs with here (also
  // noted in *written), or ServerBusy (NotOwner).
  Result<uint64_t> EpochFor(std::string_view table, std::string_view pk, Written* written) const;
  // Signs r.issue when `principal` may delegate it (docs/security.md).
  Status IssueToken(const wire::Request& r, const token::Token* principal, std::string* body) const;
  // Makes a backup in storage.backup_dir (sidecar/backup.h).
  Status Backup(const wire::Request& r, const token::Token* principal, std::string* body) const;
  // After a committed (or replayed) EGT: the table's write counters, or the
  // replay counter and log line with the client request id.
  void RecordWrite(const Batch& batch, const WriteResult& result) const;

  Engine* engine_;
  Metrics* metrics_;
  const ServerConfig* config_;
  changestream::Publisher* publisher_;
  Watermarks* watermarks_;
  auth::PolicyStore* policies_;
  const auth::Authenticator* authenticator_;
  ClusterRouting* routing_ = nullptr;
};

}  // namespace sidetable::sidecar
