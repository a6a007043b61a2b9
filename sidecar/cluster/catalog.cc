// The cluster topic reader: members, the owner map and the table catalog,
// in topic order; and CreateTable / DeleteTable through it.
#include <spdlog/spdlog.h>

#include "sidecar/cluster/cluster_impl.h"

namespace sidetable::cluster {
namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Status Cluster::Impl::ApplyAdmitted(const ChangeRecord& record) {
  if (record.kind == ChangeKind::kEntities && !TableLive(record.table)) {
    deleted_table_records_++;
    return Status::OK();
  }
  return hooks_.apply(record);
}

bool Cluster::Impl::TableLive(const std::string& table) {
  const TableKey key(table);
  const auto now = std::chrono::steady_clock::now();
  {
    std::lock_guard l(table_mu_);
    if (tables_.count(key)) return true;
    auto it = absent_tables_.find(key);
    if (it != absent_tables_.end() && now - it->second < std::chrono::seconds(1)) return false;
  }
  // A record is only admitted after its table was created on the cluster
  // topic: read the catalog up to its end before calling it deleted.
  CatchUpCatalog(std::chrono::seconds(2));
  std::lock_guard l(table_mu_);
  if (tables_.count(key)) return true;
  absent_tables_[key] = now;
  return false;
}

void Cluster::Impl::CatalogLoop() {
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, cluster_topic_.c_str(), 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_resp_err_t e = rd_kafka_assign(catalog_, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) log_->error("reading {}: {}", cluster_topic_, rd_kafka_err2str(e));
  while (!catalog_stop_.load()) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(catalog_, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::string_view key(static_cast<const char*>(m->key), m->key ? m->key_len : 0);
      std::string_view value(static_cast<const char*>(m->payload), m->payload ? m->len : 0);
      HandleClusterRecord(key, value);
      std::lock_guard l(table_mu_);
      catalog_offset_ = m->offset;
      table_cv_.notify_all();
    } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      log_->warn("reading {}: {}", cluster_topic_, rd_kafka_message_errstr(m));
    }
    rd_kafka_message_destroy(m);
  }
}

void Cluster::Impl::HandleClusterRecord(std::string_view key, std::string_view value) {
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return;
  const std::string_view kind = key.substr(0, slash), name = key.substr(slash + 1);
  if (kind == "member") {
    MemberRecord member;
    if (Status s = DecodeMember(value, &member); !s.ok()) {
      log_->warn("cluster topic: member record of {} skipped: {}", name, s.message());
      return;
    }
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
    const std::string table(name);
    const TableKey tk(table);
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
      outcome = hooks_.apply_table(table, record.created);
      if (!outcome.ok()) log_->error("applying table {} ({}): {}", table, record.created ? "created" : "deleted",
                                     outcome.ToString());
    }
    std::lock_guard l(table_mu_);
    // The topic decides: the catalog follows it even when a local apply failed.
    if (record.created) {
      tables_.insert(tk);
    } else if (exists) {
      tables_.erase(tk);
    }
    if (auto it = table_waits_.find(record.request); it != table_waits_.end()) it->second = outcome;
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
  auto offset = ProduceWait(cluster_topic_, 0, "table/" + table, EncodeTable(record));
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
