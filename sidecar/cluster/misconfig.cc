// A change topic that is not this service's, or no longer holds what this
// member knew was on it (docs/scale-out.md, "Failure cases"): another
// service's claims never fence this service's records and are reported;
// a start is refused when the topics already carry another service; a
// shard whose partition lost records is held with its rows, not dropped.
#include <spdlog/spdlog.h>

#include "common/kafka/headers.h"
#include "sidecar/cluster/cluster_impl.h"

namespace sidetable::cluster {
namespace {

std::string DescribeClaim(const std::string& topic, int32_t shard, int64_t offset,
                          const ChangeRecord& claim) {
  return "the change topic " + topic + " partition " + std::to_string(shard) + " offset " +
         std::to_string(offset) + " holds a claim of service '" + claim.service + "' (member '" +
         claim.caller + "', epoch " + std::to_string(claim.epoch) + ")";
}

}  // namespace

std::unique_ptr<ShardReplayer> Cluster::Impl::NewReplayer(
    int32_t shard, std::function<Status(const ChangeRecord&)> apply) {
  return std::make_unique<ShardReplayer>(shard, std::move(apply), log_, options_.service,
                                         [this, shard](int64_t offset, const ChangeRecord& claim) {
                                           ReportForeignClaim(shard, offset, claim);
                                         });
}

void Cluster::Impl::ReportForeignClaim(int32_t shard, int64_t offset, const ChangeRecord& claim) {
  std::string what = DescribeClaim(change_topic_, shard, offset, claim);
  {
    std::lock_guard l(problems_mu_);
    if (!foreign_.emplace(std::pair{shard, offset}, what).second) return;  // reported already
  }
  log_->error(
      "{}, but this member is of service '{}': another service is configured with this "
      "change topic (kafka.topic). Its claims fence nothing here; give each service its own "
      "change topic",
      what, options_.service);
}

Status Cluster::Impl::CheckServiceAtStartUp() {
  {
    std::shared_lock l(routes_mu_);
    for (const auto& [id, record] : members_) {
      if (!record.service.empty() && record.service != options_.service) {
        return Status(Code::kInvalidInput,
                      "cluster: the cluster topic " + cluster_topic_ + " holds member '" + id +
                          "' of service '" + record.service + "', this member is of service '" +
                          options_.service + "': give each service its own cluster.topic");
      }
    }
  }
  // Claims are read from where a restore would start reading (the best
  // state mark's replay point): one before it was read by this service's
  // state writer, which fences with its own service too.
  for (int32_t shard = 0; shard < shards_; shard++) {
    int64_t low = 0, high = 0;
    rd_kafka_resp_err_t e =
        rd_kafka_query_watermark_offsets(reader_, change_topic_.c_str(), shard, &low, &high, 10000);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      return Status(Code::kUnavailable,
                    "cluster: watermarks of " + change_topic_ + ": " + rd_kafka_err2str(e));
    }
    const StateMark mark = BestStateMark(shard);
    const int64_t first = std::max(low, mark.valid() ? mark.resume_offset() : 0);
    std::string found;
    Status scanned = ScanPartition(
        shard, first, high - 1,
        [&](const rd_kafka_message_t* m) {
          auto h = kafka::HeaderValue(m, kClaimHeader);
          if (!h) return Status::OK();
          ChangeRecord claim;
          std::string_view value(static_cast<const char*>(m->payload), m->payload ? m->len : 0);
          if (DecodeClaim(*h, value, &claim).ok() && !claim.service.empty() &&
              claim.service != options_.service) {
            found = DescribeClaim(change_topic_, shard, m->offset, claim);
            return Status(Code::kInvalidInput, found);  // ends the scan
          }
          return Status::OK();
        },
        [&] { return !stop_.load(); });
    if (!found.empty()) {
      return Status(Code::kInvalidInput,
                    "cluster: " + found + ", this member is of service '" + options_.service +
                        "': another service uses this change topic; give each service its own "
                        "kafka.topic (sidetable.{service}.changes)");
    }
    ST_RETURN_IF_ERROR(scanned);
  }
  return Status::OK();
}

Status Cluster::Impl::CheckShardHistory(int32_t shard) {
  int64_t low = 0, high = 0;
  rd_kafka_resp_err_t e =
      rd_kafka_query_watermark_offsets(reader_, change_topic_.c_str(), shard, &low, &high, 10000);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status(Code::kServerBusy,
                  std::string("cluster: watermarks of shard: ") + rd_kafka_err2str(e));
  }
  auto lost = LostHistory(change_topic_, shard, known_offsets_->Of(shard), low, high);
  if (!lost) {
    {
      std::lock_guard l(problems_mu_);
      held_.erase(shard);
    }
    if (known_offsets_->Note(shard, high)) {
      if (Status s = known_offsets_->Flush(); !s.ok()) log_->warn("{}", s.message());
    }
    return Status::OK();
  }
  bool first_time;
  {
    std::lock_guard l(problems_mu_);
    auto [it, inserted] = held_.emplace(shard, *lost);
    first_time = inserted || it->second != *lost;
    it->second = *lost;
  }
  if (first_time) {
    log_->error("shard {}: {}", shard, *lost);
    restore_gaps_++;
  }
  return Status(Code::kUnavailable, "cluster: shard " + std::to_string(shard) + " held: " + *lost);
}

bool Cluster::Impl::Held(int32_t shard) const {
  std::lock_guard l(problems_mu_);
  return held_.count(shard) > 0;
}

std::vector<std::string> Cluster::Impl::Problems() const {
  std::vector<std::string> out;
  std::lock_guard l(problems_mu_);
  for (const auto& [shard, why] : held_)
    out.push_back("shard " + std::to_string(shard) + ": " + why);
  // The first few name where; the count says how many (the metric too).
  constexpr size_t kListed = 5;
  size_t listed = 0;
  for (const auto& [where, what] : foreign_) {
    if (listed++ == kListed) {
      out.push_back(std::to_string(foreign_.size() - kListed) + " more claims of another service");
      break;
    }
    out.push_back(what + ", but this member is of service '" + options_.service +
                  "': another service uses this change topic");
  }
  return out;
}

}  // namespace sidetable::cluster
