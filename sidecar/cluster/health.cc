// Whether this member can serve as it should: Kafka answering it, and its
// member id its own (docs/scale-out.md, "Failure cases").
//
// Kafka: the catalog thread asks for the cluster topic's metadata once a
// second. librdkafka alone says little here: the owners'
// group only reports a lost session after cluster.session_timeout_ms, and
// until then nothing says why writes time out.
//
// Member id: every member record carries a random instance id. A record of
// this member id with another instance, read after this process announced
// itself, was written by another process using the same id.
#include <spdlog/spdlog.h>

#include <cstdio>
#include <random>

#include "sidecar/cluster/cluster_impl.h"

namespace sidetable::cluster {
namespace {

constexpr int64_t kProbeIntervalMs = 1000;
constexpr int kProbeTimeoutMs = 1000;
// Unanswered this long, Kafka is called unreachable (a probe or two lost
// to a leader's move is not an outage).
constexpr int64_t kKafkaUnreachableAfterMs = 3000;
// How long a starting member waits for a live holder of its id to answer
// its announcement. The holder reads it on its catalog thread (polled
// every 100 ms) and produces its own record at once: well under a second.
constexpr std::chrono::milliseconds kDuplicateMemberWait(2000);
// Two live processes with one id would otherwise answer each other at once,
// for ever: at most one re-announcement per this interval.
constexpr int64_t kReannounceIntervalMs = 5000;
// /health names a conflict this long after the last foreign record.
constexpr int64_t kConflictMemoryMs = 60000;

}  // namespace

std::string Cluster::Impl::NewInstance() {
  std::random_device rd;
  const uint64_t v = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

void Cluster::Impl::HealthTick() {
  const int64_t now = SteadyMs();
  if (now >= next_probe_steady_ms_) {
    next_probe_steady_ms_ = now + kProbeIntervalMs;
    // A metadata request: it keeps to its time-out when no broker is up
    // (a watermark query waited for a leader for as long as the outage).
    rd_kafka_topic_t* t = rd_kafka_topic_new(catalog_, cluster_topic_.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t e = rd_kafka_metadata(catalog_, 0, t, &md, kProbeTimeoutMs);
    if (md != nullptr) rd_kafka_metadata_destroy(md);
    if (t != nullptr) rd_kafka_topic_destroy(t);
    const int64_t after = SteadyMs();
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
      kafka_ok_steady_ms_ = after;
      if (const int64_t since = kafka_down_since_ms_.exchange(0); since != 0) {
        log_->warn("Kafka answers again (unreachable for {} s)", (NowMs() - since) / 1000);
      }
    } else {
      {
        std::lock_guard l(health_mu_);
        kafka_error_ = rd_kafka_err2str(e);
      }
      const int64_t silent = after - kafka_ok_steady_ms_.load();
      int64_t none = 0;
      if (silent >= kKafkaUnreachableAfterMs &&
          kafka_down_since_ms_.compare_exchange_strong(none, NowMs() - silent)) {
        log_->error(
            "Kafka is unreachable from this member ({} s without an answer: {}): replicated writes "
            "cannot be acknowledged, and after cluster.session_timeout_ms ({} ms) the owners' "
            "group drops this member and it serves no shard until Kafka answers again",
            silent / 1000, rd_kafka_err2str(e), options_.session_timeout_ms);
      }
    }
  }
  bool due = false;
  {
    std::lock_guard l(health_mu_);
    if (reannounce_due_ && now - last_reannounce_steady_ms_ >= kReannounceIntervalMs) {
      reannounce_due_ = false;
      due = true;
    }
  }
  if (due) {
    last_reannounce_steady_ms_ = now;
    ProduceAsync(cluster_topic_, 0, "member/" + member_, MemberValue(NowMs()));
    log_->warn("announced member {} at {} again (another process had announced this member id)",
               member_, advertise_);
  }
}

void Cluster::Impl::NoteOwnMemberRecord(const MemberRecord& record, int64_t offset) {
  // Ours, or written before this process started.
  if (record.instance == instance_ || offset < announce_from_) return;
  std::lock_guard l(health_mu_);
  foreign_records_.emplace_back(offset, record.endpoint);
  if (foreign_records_.size() > 16) foreign_records_.erase(foreign_records_.begin());
  // Before our own record, or during start-up: CheckMemberIdUnused decides.
  if (!answering_.load() || offset <= own_announce_offset_.load()) return;
  member_id_conflicts_++;
  conflict_seen_steady_ms_ = SteadyMs();
  conflict_endpoint_ = record.endpoint;
  reannounce_due_ = true;
  log_->error(
      "another process announced itself as member {} (at {}; this one is at {}): two sidecars "
      "share cluster.member_id {}, and routing to either is unreliable; give each its own. "
      "Announcing this one again.",
      member_, record.endpoint, advertise_, member_);
}

Status Cluster::Impl::CheckMemberIdUnused(const std::string& previous_endpoint) {
  const int64_t own = own_announce_offset_.load();
  const auto deadline = std::chrono::steady_clock::now() + kDuplicateMemberWait;
  {
    // The window, and at least our own record read back (records after it
    // are in the catalog then).
    std::unique_lock l(table_mu_);
    table_cv_.wait_until(l, deadline, [&] { return stop_.load(); });
    table_cv_.wait_for(l, std::chrono::seconds(5),
                       [&] { return stop_.load() || catalog_offset_ >= own; });
  }
  std::lock_guard l(health_mu_);
  for (const auto& [offset, endpoint] : foreign_records_) {
    if (offset <= own) continue;
    return Status(Code::kInvalidInput,
                  "cluster: cluster.member_id '" + member_ + "' is in use: a live sidecar at " +
                      endpoint + " answered this one's announcement as member " + member_ +
                      " (this one advertises " + advertise_ + "); every sidecar of service '" +
                      options_.service + "' needs its own member id");
  }
  log_->info("member {} was last announced at {}; no live process answered for it", member_,
             previous_endpoint);
  return Status::OK();
}

void Cluster::Impl::StartAnsweringForeignAnnouncements() {
  std::lock_guard l(health_mu_);
  answering_ = true;
  // Read between the check and now: answered like any later one.
  for (const auto& [offset, endpoint] : foreign_records_) {
    if (offset <= own_announce_offset_.load()) continue;
    member_id_conflicts_++;
    conflict_seen_steady_ms_ = SteadyMs();
    conflict_endpoint_ = endpoint;
    reannounce_due_ = true;
  }
}

std::string Cluster::Impl::KafkaProblem() const {
  const int64_t since = kafka_down_since_ms_.load();
  if (since == 0) return "";
  std::lock_guard l(health_mu_);
  return "Kafka is unreachable from this sidecar (" +
         std::to_string(std::max<int64_t>(0, NowMs() - since) / 1000) +
         " s without an answer: " + kafka_error_ + ")";
}

std::string Cluster::Impl::MemberIdProblem() const {
  std::lock_guard l(health_mu_);
  const int64_t ago = SteadyMs() - conflict_seen_steady_ms_;
  if (conflict_seen_steady_ms_ == 0 || ago > kConflictMemoryMs) return "";
  return "another process announced itself as member " + member_ + " at " + conflict_endpoint_ +
         " " + std::to_string(ago / 1000) + " s ago: two sidecars share cluster.member_id " +
         member_ + "; give each its own";
}

}  // namespace sidetable::cluster
