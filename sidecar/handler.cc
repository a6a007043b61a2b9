#include "sidecar/handler.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>

#include "engine/limits.h"
#include "engine/query/query.h"
#include "sidecar/auth/authorize.h"
#include "sidecar/backup.h"

namespace sidetable::sidecar {

namespace {

// The operations that leave an entity (all but the deletes): the
// sidetable_table_* "entities written" count.
size_t EntitiesWritten(const std::vector<Operation>& ops) {
  size_t n = 0;
  for (const Operation& op : ops) n += op.kind != OpKind::kDelete && op.kind != OpKind::kFencedDelete;
  return n;
}

}  // namespace

void Handler::RecordWrite(const Batch& batch, const WriteResult& result) const {
  if (result.replayed) {
    metrics_->RecordReplayedWrite();
    spdlog::info("write {} by '{}' on {}: a retry of a committed request, answered with its "
                 "first outcome (LSN {})",
                 batch.client_request_id(), batch.caller(), batch.table(), result.lsn);
    return;
  }
  metrics_->RecordTableWrite(batch.table(), batch.size(), EntitiesWritten(batch.operations()));
}

Handler::TableWrite Handler::TableWriteOf(const wire::Request& write) {
  return TableWrite{write.table, write.ops.size(), EntitiesWritten(write.ops)};
}

void Handler::RecordTableWrite(const TableWrite& w) const {
  metrics_->RecordTableWrite(w.table, w.operations, w.written);
}

void Handler::FinishDeferredWrites(uint64_t n) const {
  if (publisher_ != nullptr && n > 0) publisher_->FinishWrite(n);
}

Result<uint64_t> Handler::EpochFor(std::string_view table, std::string_view pk, Written* written) const {
  if (routing_ == nullptr) return uint64_t{0};
  auto se = routing_->LocalShard(table, pk);
  if (!se.ok()) return se.status();
  if (std::find(written->shards.begin(), written->shards.end(), *se) == written->shards.end()) {
    written->shards.push_back(*se);
  }
  return se->epoch;
}

Status Handler::Run(const wire::Request& r, wire::Request* consumable, const token::Token* principal,
                    std::string* body, uint16_t* http, uint64_t* entities, uint64_t* await_lsn, Written* written,
                    WriteGroup* group) const {
  using wire::Op;
  *http = 200;
  // Before anything is admitted or read: a refusal changes nothing.
  if (principal != nullptr) ST_RETURN_IF_ERROR(auth::Authorize(*principal, r));
  const bool writes = r.op == Op::kWrite || r.op == Op::kCreateTable ||
                      r.op == Op::kDeleteTable || r.op == Op::kRequestArchive || r.op == Op::kWriteMany;
  // Never drop events: refuse new changes while the change log holds
  // max_backlog_events unpublished ones. Admitted here, counted until done,
  // so concurrent workers cannot overshoot the bound (publisher.h).
  struct Admitted {
    changestream::Publisher* p = nullptr;
    uint64_t n = 1;
    ~Admitted() {
      if (p) p->FinishWrite(n);
    }
  } admitted;
  if (writes && publisher_ != nullptr) {
    admitted.n = r.op == Op::kWriteMany ? std::max<uint64_t>(1, r.writes.size()) : 1;
    if (!publisher_->TryAdmitWrite(admitted.n)) {
      return Status(Code::kServerBusy,
                    "the change stream backlog is full (is Kafka reachable?); retry later");
    }
    admitted.p = publisher_;
  }
  switch (r.op) {
    case Op::kPing: {
      wire::PingReply p;
      p.sidecar_id = config_->id;
      p.last_lsn = engine_->Stats().last_lsn;
      wire::EncodePing(p, body);
      return Status::OK();
    }
    case Op::kSetTablePolicies:
      ST_RETURN_IF_ERROR(engine_->GetTable(r.table).status());
      ST_RETURN_IF_ERROR(policies_->Set(r.table, r.policies));
      spdlog::info("stored access policies of {} set by '{}': {} policies", r.table, r.caller, r.policies.size());
      *http = 204;
      wire::EncodeEmpty(body);
      return Status::OK();
    case Op::kGetTablePolicies:
      ST_RETURN_IF_ERROR(engine_->GetTable(r.table).status());
      wire::EncodePolicies(policies_->Get(r.table), body);
      return Status::OK();
    case Op::kIssueToken:
      return IssueToken(r, principal, body);
    case Op::kBackup:
      return Backup(r, principal, body);
    case Op::kCreateTable:
      if (routing_ != nullptr) {
        // Every sidecar of the cluster holds the table: the cluster topic
        // orders creations and deletions (docs/scale-out.md).
        ST_RETURN_IF_ERROR(ValidateTableName(r.table));
        ST_RETURN_IF_ERROR(routing_->cluster()->CreateTable(r.table, r.caller, std::max(routing_->rebalance_wait(), std::chrono::milliseconds(5000))));
      } else {
        ST_RETURN_IF_ERROR(engine_->CreateTable(r.table, r.caller));
      }
      metrics_->NameTable(r.table);
      *http = 201;
      wire::EncodeEmpty(body);
      return Status::OK();
    case Op::kDeleteTable:
      if (routing_ != nullptr) {
        ST_RETURN_IF_ERROR(ValidateTableName(r.table));
        ST_RETURN_IF_ERROR(routing_->cluster()->DeleteTable(r.table, r.caller, std::max(routing_->rebalance_wait(), std::chrono::milliseconds(5000))));
      } else {
        ST_RETURN_IF_ERROR(engine_->DeleteTable(r.table, r.caller));
      }
      metrics_->ForgetTable(r.table);
      // A table created again under the name starts without policies, so
      // tokens issued under the old ones stay revoked.
      if (Status s = policies_->Set(r.table, {}); !s.ok()) {
        spdlog::warn("deleting the stored access policies of {}: {}", r.table, s.ToString());
      }
      // A deleted derived table is applied by nobody: left registered, it
      // would hold the embedded Kafka's republish and `lag` back for good.
      if (Status s = watermarks_->ForgetDerived(r.table); !s.ok()) {
        spdlog::warn("forgetting the applied watermarks of {}: {}", r.table, s.ToString());
      }
      *http = 204;
      wire::EncodeEmpty(body);
      return Status::OK();
    case Op::kListTables: {
      query::TableQuery q;
      q.filter = r.filter;
      if (r.top) {
        if (*r.top < 1 || *r.top > query::kMaxPageSize) {
          return Status(Code::kInvalidInput, "top must be between 1 and 1000");
        }
        q.top = static_cast<int>(*r.top);
      }
      q.next_table_name = r.next_table;
      if (principal != nullptr) {
        q.visible = [principal](std::string_view table) { return token::MaySeeTable(*principal, table); };
      }
      auto page = query::QueryTables(*engine_, q);
      if (!page.ok()) return page.status();
      wire::TablesReply reply;
      for (const auto& t : page->tables) reply.tables.push_back(t.name);
      reply.next_table = page->next_table_name;
      wire::EncodeTables(reply, body);
      return Status::OK();
    }
    case Op::kWrite: {
      Batch batch = consumable != nullptr ? consumable->TakeBatch() : r.ToBatch();
      if (routing_ != nullptr && !batch.operations().empty()) {
        auto epoch = EpochFor(batch.table(), batch.operations()[0].entity.partition_key, written);
        if (!epoch.ok()) return epoch.status();
        batch.SetEpoch(*epoch);
      }
      const uint64_t ticket = group != nullptr ? group->deferred() : 0;
      auto result = group != nullptr && await_lsn != nullptr
                        ? engine_->Execute(batch, group)
                        : engine_->Execute(batch, /*wait_durable=*/await_lsn == nullptr);
      // Deferred: its record reaches the change log only at the group's
      // flush, so the backlog admission stays taken until then; the caller
      // gives it back (FinishDeferredWrites), or the bound would be
      // overshot by a group.
      const bool deferred = group != nullptr && group->deferred() > ticket;
      if (deferred) admitted.p = nullptr;
      if (!result.ok()) return result.status();
      if (await_lsn != nullptr) *await_lsn = result->lsn;
      written->lsn = std::max(written->lsn, result->lsn);
      *entities = batch.size();
      // A deferred write is counted by the caller once its group is
      // written (TableWrite), not here: the flush may still fail.
      if (!deferred) RecordWrite(batch, *result);
      if (batch.size() == 1 && batch.operations()[0].kind == OpKind::kInsert) {
        // Azure's Insert Entity: 201 with the entity as stored, or 204
        // without it when the caller asked for no content.
        *http = r.no_content ? 204 : 201;
        if (!r.no_content) {
          result->entity = batch.operations()[0].entity;
          result->entity->timestamp = result->timestamp;
          result->entity->etag = result->etags[0];
        }
      }
      wire::EncodeWrite(*result, body);
      return Status::OK();
    }
    case Op::kWriteMany: {
      // Each EGT on its own: one failing does not stop the others, and the
      // reply says per EGT what happened (a pattern worker's grouped writes).
      // They are deferred into one WriteGroup (engine/write_group.h), so the
      // request costs one RocksDB write, not one per EGT; an EGT's result
      // stands once its ticket's flush succeeded.
      std::vector<Result<WriteResult>> results;
      results.reserve(r.writes.size());
      std::vector<std::optional<uint64_t>> tickets;
      tickets.reserve(r.writes.size());
      std::vector<Batch> batches = consumable != nullptr ? consumable->TakeBatches() : r.ToBatches();
      {
        WriteGroup group(engine_);
        for (Batch& batch : batches) {
          tickets.emplace_back();
          // Authorised per EGT: one out of the token's scope gets its own
          // refusal and is not executed; the others are.
          if (principal != nullptr) {
            Status allowed = auth::AuthorizeOperations(*principal, batch.table(), batch.operations());
            if (!allowed.ok()) {
              results.push_back(allowed);
              continue;
            }
          }
          if (routing_ != nullptr && !batch.operations().empty()) {
            auto epoch = EpochFor(batch.table(), batch.operations()[0].entity.partition_key, written);
            if (!epoch.ok()) {
              results.push_back(epoch.status());
              continue;
            }
            batch.SetEpoch(*epoch);
          }
          const uint64_t ticket = group.deferred();
          results.push_back(engine_->Execute(batch, &group));
          if (group.deferred() > ticket) tickets.back() = ticket;
        }
        (void)group.Flush();
        for (size_t i = 0; i < results.size(); i++) {
          if (!tickets[i]) continue;
          if (Status outcome = group.Outcome(*tickets[i]); !outcome.ok()) results[i] = std::move(outcome);
        }
      }
      uint64_t newest = 0;
      for (size_t i = 0; i < results.size(); i++) {
        if (!results[i].ok()) continue;
        newest = std::max(newest, results[i]->lsn);
        *entities += batches[i].size();
        RecordWrite(batches[i], *results[i]);
      }
      written->lsn = std::max(written->lsn, newest);
      if (await_lsn != nullptr) {
        // The reply waits for one fsync covering all of them (the newest LSN).
        *await_lsn = std::max(*await_lsn, newest);
      } else if (Status durable = engine_->WaitDurable(newest); !durable.ok()) {
        for (auto& one : results) {
          if (one.ok()) one = durable;
        }
      }
      for (const auto& one : results) {
        if (!one.ok()) metrics_->RecordBatchError(one.status().code());
      }
      wire::EncodeWriteMany(results, body);
      return Status::OK();
    }
    case Op::kGet: {
      // The same names a Query's $select may hold (docs/queries.md).
      if (!r.select.empty()) ST_RETURN_IF_ERROR(ValidateSelect(r.select));
      if (routing_ != nullptr) ST_RETURN_IF_ERROR(routing_->LocalShard(r.table, r.pk).status());
      // From the stored bytes straight into the reply: no Entity.
      ST_RETURN_IF_ERROR(engine_->GetRow(r.table, r.pk, r.rk, [&](const RowView& row) {
        return wire::EncodeRowReply(row, r.select, body);
      }));
      *entities = 1;
      return Status::OK();
    }
    case Op::kQuery: {
      query::Query q;
      q.table = r.table;
      q.filter = r.filter;
      q.select = r.select;
      if (r.top) {
        if (*r.top < 1 || *r.top > query::kMaxPageSize) {
          return Status(Code::kInvalidInput, "top must be between 1 and 1000");
        }
        q.top = static_cast<int>(*r.top);
      }
      if (r.next_pk) q.continuation = query::Continuation{*r.next_pk, r.next_rk.value_or("")};
      q.max_examined = config_->query_max_examined;
      if (principal != nullptr) {
        // The scan itself is confined to the token's range: rows outside
        // are never read, and a continuation cannot lead outside.
        auto confine = auth::QueryConfinement(*principal, r.table);
        if (!confine.ok()) return confine.status();
        q.confine = *confine;
      }
      // Each entity goes from its stored bytes straight into the reply, with
      // only the selected properties: no Entity per row.
      // In a cluster only the rows of shards served here: this sidecar may
      // still hold rows of a shard it no longer owns (docs/scale-out.md).
      std::vector<char> serving;
      std::string created;
      if (routing_ != nullptr) {
        serving = routing_->ServingMask();
        created = routing_->CreatedName(r.table);
        if (auto pk = ClusterRouting::QueryPartition(r)) {
          const int32_t shard = routing_->ShardOfCreated(created, *pk);
          if (shard < 0 || shard >= static_cast<int32_t>(serving.size()) || !serving[static_cast<size_t>(shard)]) {
            return Status(Code::kServerBusy, std::string(kNotOwnerMessage) + ": shard " + std::to_string(shard) +
                                                 " is not served by this sidecar now; retry");
          }
        }
      }
      struct Encode : query::RowVisitor {
        wire::QueryReplyWriter* out;
        const std::vector<char>* serving = nullptr;
        const ClusterRouting* routing = nullptr;
        const std::string* created = nullptr;
        Status Visit(const RowView& row) override {
          if (routing != nullptr) {
            const int32_t shard = routing->ShardOfCreated(*created, row.partition_key());
            if (shard < 0 || shard >= static_cast<int32_t>(serving->size()) || !(*serving)[static_cast<size_t>(shard)]) {
              return Status::OK();
            }
          }
          return out->Add(row);
        }
        // The page ends at query::kMaxPageBytes of encoded reply.
        uint64_t bytes() const override { return out->bytes(); }
      };
      wire::QueryReplyWriter writer(body, r.select);
      Encode encode;
      encode.out = &writer;
      if (routing_ != nullptr) {
        encode.serving = &serving;
        encode.routing = routing_;
        encode.created = &created;
      }
      auto page = query::VisitQuery(*engine_, q, encode);
      if (!page.ok()) return page.status();
      metrics_->RecordQuerySkipped(page->stats.skipped, page->stats.stopped_at_deleted);
      *entities = writer.count();
      std::optional<std::string> next_pk, next_rk;
      if (page->continuation) {
        next_pk = std::move(page->continuation->next_partition_key);
        next_rk = std::move(page->continuation->next_row_key);
      }
      std::string plan(query::PlanKindName(page->stats.plan));
      // A fan-out's part says which shards it covered (cluster_routing.h).
      if (routing_ != nullptr && r.forwarded) plan = ClusterRouting::PlanWithShards(plan, serving);
      writer.Finish(next_pk, next_rk, plan, page->stats.examined);
      return Status::OK();
    }
    case Op::kRequestArchive: {
      uint64_t epoch = 0;
      if (routing_ != nullptr) {
        auto e = EpochFor(r.table, r.pk, written);
        if (!e.ok()) return e.status();
        epoch = *e;
      }
      auto lsn = engine_->RequestArchive(r.table, r.pk, r.rks, r.target, r.caller, epoch);
      if (!lsn.ok()) return lsn.status();
      written->lsn = std::max(written->lsn, *lsn);
      wire::EncodeLsn(*lsn, body);
      return Status::OK();
    }
    case Op::kAdvanceWatermarks:
      ST_RETURN_IF_ERROR(watermarks_->Advance(r.watermarks));
      wire::EncodeEmpty(body);
      return Status::OK();
    case Op::kForgetWatermarks:
      // A derived table nobody derives any more whose table is kept (its
      // pattern taken out of the workers' configuration), or one deleted
      // under a build before session 42, which kept its watermarks: left
      // registered, it holds the embedded Kafka's republish and `lag` back.
      // A worker still deriving it registers it again with its next report.
      ST_RETURN_IF_ERROR(ValidateTableName(r.derived));
      ST_RETURN_IF_ERROR(watermarks_->ForgetDerived(r.derived));
      wire::EncodeEmpty(body);
      return Status::OK();
    case Op::kReadWatermarks:
      if (!r.derived.empty()) ST_RETURN_IF_ERROR(ValidateTableName(r.derived));
      {
        std::vector<wire::WatermarkEntry> entries = watermarks_->Read(r.derived);
        if (principal != nullptr) {
          std::erase_if(entries, [&](const wire::WatermarkEntry& e) {
            return !token::CheckTable(*principal, token::Permission::kRead, e.derived).ok();
          });
        }
        wire::EncodeWatermarks(entries, body);
      }
      return Status::OK();
    case Op::kReadChanges: {
      if (r.max_records < 1 || r.max_records > 10'000) {
        return Status(Code::kInvalidInput, "max must be between 1 and 10000");
      }
      const uint64_t max_bytes = std::min<uint64_t>(r.max_bytes, config_->max_request_bytes);
      if (r.raw_changes) {
        // The records go out as they are stored, appended straight into the
        // reply: no decoding, no MessagePack, no copy but this one.
        const size_t begin = wire::BeginRawChanges(body);
        auto page = engine_->ReadRawChanges(r.from_lsn, r.max_records, max_bytes, body);
        if (!page.ok()) return page.status();
        wire::FinishRawChanges(*page, begin, body);
        return Status::OK();
      }
      auto changes = engine_->ReadChanges(r.from_lsn, r.max_records, max_bytes);
      if (!changes.ok()) return changes.status();
      wire::EncodeChanges(*changes, body);
      return Status::OK();
    }
  }
  return Status(Code::kInvalidInput, "unknown operation");
}

Status Handler::Backup(const wire::Request& r, const token::Token* principal,
                       std::string* body) const {
  BackupSettings settings;
  settings.dir = config_->backup_dir;
  settings.keep = config_->backup_keep;
  settings.data_dir = config_->data_dir;
  settings.sidecar_id = config_->id;
  if (publisher_ != nullptr)
    settings.kafka_topic = changestream::TopicFor(config_->kafka.topic, config_->id, "{table}");
  const std::string who = principal != nullptr ? principal->spec.identity : r.caller;
  auto made = TakeBackup(engine_, settings);
  if (!made.ok()) {
    metrics_->RecordBackup(false);
    // Backups off is the caller's mistake; anything else is the operator's to see.
    spdlog::log(
        made.status().code() == Code::kInvalidInput ? spdlog::level::warn : spdlog::level::err,
        "backup asked by '{}' failed: {}", who, made.status().ToString());
    return made.status();
  }
  metrics_->RecordBackup(true, (NowTicks() - kUnixEpochTicks) / kTicksPerSecond, made->last_lsn,
                         made->bytes);
  spdlog::info(
      "backup {} made for '{}': change log {}..{}, {} tables, {} files, {} bytes in {} ms{}",
      made->path, who, made->first_lsn, made->last_lsn, made->tables, made->files, made->bytes,
      made->micros / 1000,
      made->removed.empty() ? std::string()
                            : "; removed " + std::to_string(made->removed.size()) + " older");
  wire::EncodeBackup(*made, body);
  return Status::OK();
}

Status Handler::IssueToken(const wire::Request& r, const token::Token* principal, std::string* body) const {
  if (principal == nullptr || authenticator_ == nullptr) {
    return Status(Code::kInvalidInput,
                  "IssueToken needs auth.mode: tokens: with authentication off there is no caller to delegate "
                  "from and no key to sign with");
  }
  const token::TokenSpec& want = *r.issue;
  std::vector<token::StoredPolicy> table_policies;
  if (!want.policy_id.empty() && !want.table_is_prefix) table_policies = policies_->Get(want.table);
  // Nothing is signed unless the wanted token lies within the caller's.
  ST_RETURN_IF_ERROR(token::CheckDelegation(*principal, want, table_policies));
  // The identity is what the change log will record for the new token.
  if (Status s = ValidateCaller(want.identity); !s.ok()) {
    return Status(Code::kInvalidInput, "token identity: " + s.message());
  }
  auto text = authenticator_->Sign(want);
  if (!text.ok()) return text.status();
  // Never the token text or its signature: it is a bearer credential.
  spdlog::info("token issued by '{}' for '{}': tenant {}, table {}{}, expiry {}, key {}", principal->spec.identity,
               want.identity, want.tenant, want.table_is_prefix ? "prefix " : "", want.table,
               token::FormatTime(*want.expiry), authenticator_->signing_key_id());
  wire::EncodeIssuedToken(*text, body);
  return Status::OK();
}

Result<std::string> Handler::ForwardToken(const token::Token& principal) const {
  token::TokenSpec spec = principal.spec;
  // Its start was checked here (a SAS's st is allowed 5 minutes of clock
  // skew, which the owner's check would not allow).
  spec.start.reset();
  // Valid for the forward only (a SharedKey principal has no expiry), and
  // rounded up to the minute so that one caller's forwards share a token
  // text, which the owner's authenticator verifies once (its cache).
  const auto until = std::chrono::ceil<std::chrono::minutes>(
      std::chrono::floor<std::chrono::seconds>(std::chrono::system_clock::now()) +
      std::chrono::minutes(5));
  if (!spec.expiry || *spec.expiry > until) spec.expiry = token::TimePoint(until);
  if (authenticator_ != nullptr) return authenticator_->Sign(spec);
  static constexpr std::string_view kUncheckedKey =
      "forwarded with authentication off: never verified";
  return token::IssueToken(spec, kUncheckedForwardKeyId, kUncheckedKey);
}

Code Handler::Handle(const wire::Request& r, const token::Token* principal, std::string* out,
                     uint64_t* entities, uint64_t* await_lsn, std::vector<ShardEpoch>* fence,
                     WriteGroup* group) const {
  return HandleImpl(r, nullptr, principal, out, entities, await_lsn, fence, group);
}

Code Handler::HandleConsuming(wire::Request& r, const token::Token* principal, std::string* out,
                              uint64_t* entities, uint64_t* await_lsn, std::vector<ShardEpoch>* fence,
                              WriteGroup* group) const {
  // In a cluster a write may run twice (the TableNotFound retry below) or
  // be forwarded whole: its operations must stay.
  return HandleImpl(r, routing_ == nullptr ? &r : nullptr, principal, out, entities, await_lsn, fence, group);
}

Code Handler::HandleImpl(const wire::Request& r, wire::Request* consumable, const token::Token* principal,
                         std::string* out, uint64_t* entities, uint64_t* await_lsn,
                         std::vector<ShardEpoch>* fence, WriteGroup* group) const {
  if (await_lsn != nullptr) *await_lsn = 0;
  if (routing_ != nullptr) {
    // A principal verified here without a token text (the REST gateway's
    // SharedKey with auth.mode tokens, or a SAS in any mode) must hold
    // where the request runs. Before session 46 a request forwarded to its
    // owner carried no token: the owner, with authentication off, ran it
    // with full access (a read-only or key-range SAS wrote, read and
    // listed outside its scope on every shard another member owned), and
    // with auth.mode tokens refused it (AuthenticationFailed, no token).
    // So it is checked here first (a refusal without a hop) and forwarded
    // with a token the owner enforces (tests/scale_out/rest_cluster_test.py).
    std::string forward_token;
    if (principal != nullptr && r.token.empty() && !r.forwarded) {
      Status s = auth::Authorize(*principal, r);
      if (s.ok()) {
        auto t = ForwardToken(*principal);
        if (t.ok())
          forward_token = std::move(t).value();
        else
          s = t.status();
      }
      if (!s.ok()) {
        wire::EncodeError(wire::Header{wire::kVersion, static_cast<uint8_t>(r.op), 0, r.id}, s,
                          out);
        return s.code();
      }
    }
    // Another sidecar's shard: forwarded, fanned out or split, and answered
    // whole (cluster_routing.h). Parts that run here come back through
    // Handle as forwarded requests.
    Code code = Code::kOk;
    uint64_t n = 0;
    auto local = [&](const wire::Request& sub, std::string* sub_out, uint64_t* sub_n) {
      return Handle(sub, principal, sub_out, sub_n);
    };
    if (routing_->Intercept(r, local, out, &code, &n, forward_token)) {
      if (entities != nullptr) *entities = n;
      return code;
    }
  }
  // The body is encoded straight after a header written last, so a large
  // reply (a query page, a page of the change log) is not copied once more.
  const size_t start = out->size();
  out->append(wire::kHeaderBytes, '\0');
  uint16_t http = 200;
  uint64_t counted = 0;
  Written written;
  Status s = Run(r, consumable, principal, out, &http, &counted, await_lsn, &written, group);
  if (s.code() == Code::kTableNotFound && routing_ != nullptr && r.op != wire::Op::kCreateTable &&
      r.op != wire::Op::kDeleteTable && routing_->cluster()->CatchUpCatalog(routing_->rebalance_wait())) {
    // Created through another member, whose CreateTable has returned, but
    // not read from the cluster topic here yet: read up to its end, then
    // once more (cluster.h, CatchUpCatalog).
    out->resize(start + wire::kHeaderBytes);
    http = 200;
    counted = 0;
    written = Written{};
    s = Run(r, nullptr, principal, out, &http, &counted, await_lsn, &written, group);
  }
  if (entities != nullptr) *entities = counted;
  if (s.ok() && routing_ != nullptr && routing_->replicated_acks() && !written.shards.empty()) {
    if (fence != nullptr) {
      // The caller holds the reply until AwaitReplicated (durable_acks.cc).
      *fence = std::move(written.shards);
      if (await_lsn != nullptr) *await_lsn = std::max(*await_lsn, written.lsn);
    } else {
      if (publisher_ != nullptr) publisher_->Notify();
      s = routing_->AwaitReplicated(written.lsn, written.shards,
                                    std::chrono::steady_clock::now() + routing_->ack_timeout());
    }
  }
  // A write still waiting for its fsync is not in the change log yet: the
  // acknowledger wakes the publisher once it is (durable_acks.cc).
  const bool readable = await_lsn == nullptr || *await_lsn <= engine_->durable_lsn();
  if (s.ok() && publisher_ != nullptr && readable &&
      (r.op == wire::Op::kWrite || r.op == wire::Op::kCreateTable || r.op == wire::Op::kWriteMany ||
       r.op == wire::Op::kDeleteTable || r.op == wire::Op::kRequestArchive)) {
    publisher_->Notify();
  }
  wire::Header h{wire::kVersion, static_cast<uint8_t>(r.op), http, r.id};
  if (!s.ok()) {
    out->resize(start);
    wire::EncodeError(h, s, out);
    return s.code();
  }
  std::string header;
  wire::AppendHeader(&header, h);
  out->replace(start, wire::kHeaderBytes, header);
  return Code::kOk;
}

}  // namespace sidetable::sidecar
