// The cluster topic reader: members, the owner map and the table catalog,
// in topic order; and CreateTable / DeleteTable through it.
#include <spdlog/spdlog.h>

#include "sidecar/cluster/cluster_impl.h"

namespace sidetable::cluster {

Status Cluster::Impl::ApplyAdmitted(const ChangeRecord& record) {
  // The cluster topic is the service's catalog: every member applies its
  // table records there, in its order. A table event on the change topic
  // (published by one member, and admitted after claims) is for the
  // workers and replay; applied here it could delete a table that was
  // created again since.
  if (record.kind == ChangeKind::kTableCreated || record.kind == ChangeKind::kTableDeleted)
    return Status::OK();
  if (record.kind == ChangeKind::kEntities) {
    bool behind = false;
    const uint64_t live = LiveIncarnation(record.table, record.table_incarnation, &behind);
    if (live == 0) {
      deleted_table_records_++;
      return Status::OK();
    }
    // Stamped by a create this member's catalog may not have read (its
    // catch-up did not finish): neither skipped (it may be the current
    // table's) nor applied (the local table may be its predecessor); the
    // caller reads it again.
    if (behind && record.table_incarnation > live) {
      return Status(Code::kServerBusy, "cluster: a record of table " + record.table + " is stamped with incarnation " +
                                           std::to_string(record.table_incarnation) +
                                           ", which the cluster catalog has not read yet (it has " +
                                           std::to_string(live) + ")");
    }
    // Written to an earlier incarnation of the table (deleted and created
    // again since): the new table must not get its predecessor's rows.
    if (record.table_incarnation != 0 && record.table_incarnation != live) {
      stale_table_records_++;
      return Status::OK();
    }
  }
  return hooks_.apply(record);
}

uint64_t Cluster::Impl::LiveIncarnation(const std::string& table, uint64_t at_least, bool* behind) {
  const TableKey key(table);
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard l(table_mu_);
    auto live = tables_.find(key);
    if (live != tables_.end() && live->second >= at_least) return live->second;
    auto it = absent_tables_.find(key);
    if (live == tables_.end() && it != absent_tables_.end() && now - it->second < std::chrono::seconds(1)) return 0;
  }
  // A record is only admitted after its table was created on the cluster
  // topic: read the catalog up to its end before calling it deleted, or
  // its stamp (a create the catalog has not read yet) stale.
  const bool caught_up = CatchUpCatalog(std::chrono::seconds(2));
  if (behind != nullptr) *behind = !caught_up;
  std::lock_guard l(table_mu_);
  if (auto live = tables_.find(key); live != tables_.end()) return live->second;
  absent_tables_[key] = now;
  return 0;
}

void Cluster::Impl::CatalogLoop() {
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, cluster_topic_.c_str(), 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_resp_err_t e = rd_kafka_assign(catalog_, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) log_->error("reading {}: {}", cluster_topic_, rd_kafka_err2str(e));
  // What the records taught (known_offsets.h) is written every few seconds.
  auto next_flush = std::chrono::steady_clock::now();
  while (!catalog_stop_.load()) {
    HealthTick();
    if (std::chrono::steady_clock::now() >= next_flush) {
      if (Status s = known_offsets_->Flush(); !s.ok()) log_->warn("{}", s.message());
      next_flush = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(catalog_, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      kafka_ok_steady_ms_ = SteadyMs();
      std::string_view key(static_cast<const char*>(m->key), m->key ? m->key_len : 0);
      std::string_view value(static_cast<const char*>(m->payload), m->payload ? m->len : 0);
      HandleClusterRecord(key, value, m->offset);
      std::lock_guard l(table_mu_);
      catalog_offset_ = m->offset;
      table_cv_.notify_all();
    } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      log_->warn("reading {}: {}", cluster_topic_, rd_kafka_message_errstr(m));
    }
    rd_kafka_message_destroy(m);
  }
}

void Cluster::Impl::HandleClusterRecord(std::string_view key, std::string_view value, int64_t offset) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return;
  const std::string_view kind = key.substr(0, slash), name = key.substr(slash + 1);
  if (kind == "member") {
    MemberRecord member;
    if (Status s = DecodeMember(value, &member); !s.ok()) {
      log_->warn("cluster topic: member record of {} skipped: {}", name, s.message());
      return;
    }
    if (name == member_) NoteOwnMemberRecord(member, offset);
    std::unique_lock l(routes_mu_);
    members_[std::string(name)] = std::move(member);
  } else if (kind == "owner") {
    OwnerRecord owner;
    int32_t shard = -1;
    try {
      shard = std::stoi(std::string(name));
    } catch (...) {
      return;
    }
    if (shard < 0 || shard >= shards_ || !DecodeOwner(value, &owner).ok()) return;
    // Every member learns how far each partition reached (known_offsets.h).
    if (owner.claim_offset >= 0) known_offsets_->Note(shard, owner.claim_offset + 1);
    {
      std::unique_lock l(routes_mu_);
      // An owner record older than what we know (a slow old owner) is ignored.
      if (owner.epoch < owners_[shard].epoch) return;
      owners_[shard] = std::move(owner);
    }
    routes_cv_.notify_all();
  } else if (kind == "state") {
    StateMark mark;
    int32_t shard = -1;
    try {
      shard = std::stoi(std::string(name));
    } catch (...) {
      return;
    }
    if (shard < 0 || shard >= shards_ || !DecodeStateMark(value, &mark).ok()) return;
    known_offsets_->Note(shard, mark.offset + 1);
    std::unique_lock l(routes_mu_);
    // The newest writer's latest mark; an older writer's (a replaced owner
    // still marking) is ignored.
    StateMark& best = state_marks_[shard];
    if (!best.valid() || best.writer < mark.writer || (best.writer == mark.writer && best.offset <= mark.offset)) {
      best = std::move(mark);
    }
  } else if (kind == "table") {
    TableRecord record;
    if (!DecodeTable(value, &record).ok()) {
      log_->warn("cluster topic: a malformed table record for {} is skipped", name);
      return;
    }
    // "table/<name>/<request>" (TableOp), or "table/<name>" as written
    // before table records had keys of their own. Table names hold no '/'.
    const std::string table(name.substr(0, name.find('/')));
    const TableKey tk(table);
    const uint64_t incarnation = static_cast<uint64_t>(offset) + 1;
    Status outcome;
    bool exists;
    {
      std::lock_guard l(table_mu_);
      exists = tables_.count(tk) > 0;
    }
    if (record.created && exists) {
      outcome = Status(Code::kTableAlreadyExists, "The table specified already exists.");
    } else if (!record.created && !exists) {
      outcome = Status(Code::kTableNotFound, "The table specified does not exist.");
    } else {
      // A table this member has already (from before a restart) may be
      // another incarnation than this create's.
      const uint32_t had_id = record.created && hooks_.table_id ? hooks_.table_id(table) : 0;
      outcome = hooks_.apply_table(table, record.created, TableEventStampFor(record));
      if (!outcome.ok()) {
        log_->error("applying table {} ({}): {}", table, record.created ? "created" : "deleted", outcome.ToString());
      } else if (record.created) {
        MapLocalTable(table, had_id, incarnation);
      }
    }
    std::lock_guard l(table_mu_);
    // The topic decides: the catalog follows it even when a local apply failed.
    if (record.created) {
      if (!exists) tables_[tk] = incarnation;
    } else if (exists) {
      tables_.erase(tk);
    }
    if (auto it = table_waits_.find(record.request); it != table_waits_.end()) it->second = outcome;
  }
}

TableEventStamp Cluster::Impl::TableEventStampFor(const TableRecord& record) const {
  // Every member writes the same request id into its table event; the
  // publisher sends only the event of the member whose request it is, so
  // the change topic gets one event per table record, not one per member.
  // Its epoch is the highest owner epoch this member has read before the
  // record (at least 1): readers admit a table event with an epoch after
  // any claim, and the workers clear a deleted table's derived rows up to
  // it (docs/scale-out.md, "Table events in a cluster").
  TableEventStamp stamp;
  if (record.request.empty())
    return stamp;  // a record written before requests: nobody publishes it
  stamp.client_request_id = record.request;
  stamp.epoch = 1;
  std::shared_lock l(routes_mu_);
  for (const OwnerRecord& owner : owners_) stamp.epoch = std::max(stamp.epoch, owner.epoch);
  return stamp;
}

void Cluster::Impl::MapLocalTable(const std::string& table, uint32_t had_id, uint64_t incarnation) {
  if (!hooks_.table_id) return;
  if (had_id != 0) {
    const uint64_t mapped = incarnations_->Of(had_id);
    switch (CheckLocalTable(mapped, incarnation)) {
      case LocalTableCheck::kKeep:
        return;
      case LocalTableCheck::kMap:
        break;  // a table from before incarnations were kept: it is taken to be this one
      case LocalTableCheck::kRecreate: {
        // The member was away while the table was deleted and created
        // again: its local table is the predecessor. Its unpublished
        // records keep their stamp (the old id stays mapped).
        log_->warn("table {}: the local table (id {}, incarnation {}) predates the catalog's (incarnation {}): "
                   "deleting and creating it again",
                   table, had_id, mapped, incarnation);
        Status s = hooks_.apply_table(table, false, {});
        if (s.ok()) s = hooks_.apply_table(table, true, {});
        if (!s.ok()) {
          log_->error("table {}: creating it again: {}", table, s.ToString());
          return;
        }
        break;
      }
    }
  }
  const uint32_t id = hooks_.table_id(table);
  if (id == 0) {
    log_->error("table {}: created, but not found locally: its records stay unstamped", table);
    return;
  }
  if (Status s = incarnations_->Set(id, incarnation); !s.ok()) {
    // Kept in memory: records are stamped until a restart; after one the
    // table is taken to be the catalog's incarnation (as before this map).
    log_->error("table {}: persisting its incarnation: {}", table, s.ToString());
  }
}

bool Cluster::Impl::CatchUpCatalog(std::chrono::milliseconds wait) {
  int64_t low = 0, high = 0;
  const int timeout = static_cast<int>(std::max<int64_t>(1, wait.count()));
  if (rd_kafka_query_watermark_offsets(catalog_, cluster_topic_.c_str(), 0, &low, &high, timeout) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    return false;
  }
  std::unique_lock l(table_mu_);
  return table_cv_.wait_for(l, wait, [&] { return catalog_offset_ + 1 >= high || stop_.load(); }) && !stop_.load();
}

Status Cluster::Impl::TableOp(const std::string& table, bool create, const std::string& caller,
                              std::chrono::milliseconds wait) {
  // A create of a table the catalog holds is refused here, without a
  // record (one record fewer; two creates racing through two members still
  // both write one, and readers refuse the second).
  if (create && CatchUpCatalog(wait)) {
    std::lock_guard l(table_mu_);
    if (tables_.count(TableKey(table))) {
      return Status(Code::kTableAlreadyExists, "The table specified already exists.");
    }
  }
  std::string request;
  {
    std::lock_guard l(table_mu_);
    request = member_ + "/" + std::to_string(NowMs()) + "/" + std::to_string(++table_seq_);
    table_waits_[request] = std::nullopt;
  }
  auto forget = [&] {
    std::lock_guard l(table_mu_);
    table_waits_.erase(request);
  };
  TableRecord record{create, request, caller, NowMs()};
  // A key of its own for every table record: the cluster topic is
  // compacted, and under one key per table a refused create (two racing
  // through two members, as replicas starting together do) would replace
  // the accepted one, so a member reading the topic later would take the
  // refused one's offset for the table's incarnation and skip the rows the
  // others stamped. With keys of their own, compaction keeps every table
  // record, in order: every member reads the same history.
  auto offset = ProduceWait(cluster_topic_, 0, "table/" + table + "/" + request, EncodeTable(record));
  if (!offset.ok()) {
    forget();
    return offset.status();
  }
  std::unique_lock l(table_mu_);
  const bool done = table_cv_.wait_for(l, wait, [&] { return catalog_offset_ >= *offset || stop_.load(); });
  auto it = table_waits_.find(request);
  std::optional<Status> outcome = it->second;
  table_waits_.erase(it);
  if (!done || !outcome) {
    return Status(Code::kServerBusy, "cluster: the table record was written but not read back in time; "
                                     "outcome unknown, retry");
  }
  return *outcome;
}

}  // namespace sidetable::cluster
