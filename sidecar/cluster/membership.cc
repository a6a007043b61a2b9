// The owners' group: the rebalance callback, and restoring a gained shard
// (drop, claim, replay up to the claim, publish owner/<shard>, serve).
#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <cstring>

#include "common/kafka/headers.h"
#include "sidecar/cluster/cluster_impl.h"
#include "sidecar/cluster/shard_replayer.h"

namespace sidetable::cluster {
namespace {

constexpr std::chrono::milliseconds kRetryBackoff(500);

// The group generation this client is in (-1 outside the group). librdkafka
// 2.0 has no getter; the serialized group metadata holds it right after its
// 7-byte magic "CGMDv2:" (rd_kafka_consumer_group_metadata_write).
int64_t GroupGeneration(rd_kafka_t* rk) {
  rd_kafka_consumer_group_metadata_t* md = rd_kafka_consumer_group_metadata(rk);
  if (md == nullptr) return -1;
  void* buf = nullptr;
  size_t size = 0;
  int64_t generation = -1;
  rd_kafka_error_t* e = rd_kafka_consumer_group_metadata_write(md, &buf, &size);
  if (e == nullptr && size >= 11 && std::memcmp(buf, "CGMDv2:", 7) == 0) {
    int32_t g;
    std::memcpy(&g, static_cast<char*>(buf) + 7, sizeof g);
    generation = g;
  }
  if (e != nullptr) rd_kafka_error_destroy(e);
  if (buf != nullptr) rd_kafka_mem_free(nullptr, buf);
  rd_kafka_consumer_group_metadata_destroy(md);
  return generation;
}

}  // namespace

void Cluster::Impl::OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                                void* opaque) {
  auto* self = static_cast<Impl*>(opaque);
  const bool cooperative = std::strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_assign(rk, parts)) {
        self->log_->error("incremental assign: {}", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
      }
    } else {
      rd_kafka_assign(rk, parts);
    }
    // Ownership only: nothing is consumed through the group.
    rd_kafka_pause_partitions(rk, parts);
    self->RefreshGeneration();
    self->Gained(parts);
    // Not the (often empty) assignment that closes the revoking round: the
    // one of the round after it, in a newer generation.
    if (self->rejoining_.load() && GroupGeneration(rk) != self->revoked_in_) self->rejoining_ = false;
    // This client finished its part of a round: fence commits may go again.
    self->rebalancing_since_ms_ = 0;
    self->assigns_++;
  } else if (self->stop_.load()) {
    // Closing (rd_kafka_consumer_close, Stop): the group handle answers no
    // queries any more (rd_kafka_memberid or the group metadata would wait
    // forever), so only let go.
    self->Lost(parts);
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk, parts)) rd_kafka_error_destroy(e);
    } else {
      rd_kafka_assign(rk, nullptr);
    }
  } else {
    // A cooperative revocation is the first of two rounds: this client
    // rejoins at once and the generation moves again. Fence checks hold off
    // until the next assignment (fence.cc).
    if (cooperative) {
      self->revoked_in_ = GroupGeneration(rk);
      self->rejoining_ = true;
    }
    // Lost rather than revoked: the session timed out (Kafka did not
    // answer this member, or its poll thread stalled), and the group may
    // have handed the shards to others already.
    self->Lost(parts, rd_kafka_assignment_lost(rk) == 1);
    if (cooperative) {
      if (rd_kafka_error_t* e = rd_kafka_incremental_unassign(rk, parts)) rd_kafka_error_destroy(e);
    } else {
      rd_kafka_assign(rk, nullptr);
    }
    self->RefreshGeneration();
  }
}

void Cluster::Impl::RefreshGeneration() {
  const int64_t g = GroupGeneration(group_);
  {
    std::unique_lock l(routes_mu_);
    generation_ = g;
  }
  // A rejoin (a new member id from the coordinator, e.g. after a pause past
  // the session timeout) is announced again on the cluster topic. Not waited
  // for: this is the poll thread.
  char* id = rd_kafka_memberid(group_);
  const std::string member_id = id ? id : "";
  if (id) rd_kafka_mem_free(group_, id);
  if (!member_id.empty() && member_id != group_member_id_) {
    if (!group_member_id_.empty()) ProduceAsync(cluster_topic_, 0, "member/" + member_, MemberValue(NowMs()));
    group_member_id_ = member_id;
  }
}

void Cluster::Impl::Gained(const rd_kafka_topic_partition_list_t* parts) {
  std::vector<int32_t> gained;
  int64_t generation;
  {
    std::unique_lock l(routes_mu_);
    generation = generation_;
    for (int i = 0; i < parts->cnt; i++) {
      const int32_t shard = parts->elems[i].partition;
      if (change_topic_ != parts->elems[i].topic || shard < 0 || shard >= shards_) continue;
      owned_[shard] = generation_;
      serving_.erase(shard);
      gained.push_back(shard);
    }
  }
  if (gained.empty()) return;
  log_->info("gained shards {} in generation {}", fmt::join(gained, ","), generation);
  std::lock_guard l(restore_mu_);
  for (int32_t s : gained) restore_queue_.push_back(s);
  restore_cv_.notify_all();
}

void Cluster::Impl::Lost(const rd_kafka_topic_partition_list_t* parts, bool session_lost) {
  std::vector<int32_t> lost;
  {
    std::unique_lock l(routes_mu_);
    for (int i = 0; i < parts->cnt; i++) {
      const int32_t shard = parts->elems[i].partition;
      if (owned_.erase(shard)) {
        lost.push_back(shard);
        lost_at_[shard] = std::chrono::steady_clock::now();
      }
      serving_.erase(shard);
      commit_offsets_.erase(shard);
    }
  }
  routes_cv_.notify_all();
  if (lost.empty()) return;
  if (!session_lost) {
    log_->info("lost shards {}", fmt::join(lost, ","));
  } else {
    const std::string kafka = KafkaProblem();
    log_->warn(
        "lost shards {}: the owners' group session timed out ({}); they are not served here until "
        "the group assigns them again",
        fmt::join(lost, ","),
        kafka.empty() ? "this member's poll thread stalled, or Kafka did not answer it" : kafka);
  }
}

void Cluster::Impl::PollLoop() {
  auto next_refresh = std::chrono::steady_clock::now();
  while (!stop_.load()) {
    if (poll_paused_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    // A round that leaves this member's assignment as it was may end
    // without a callback here: the generation in Stats() and /cluster would
    // then stay behind the one its commits use. Read it twice a second.
    if (std::chrono::steady_clock::now() >= next_refresh) {
      RefreshGeneration();
      next_refresh = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(group_, 100);
    if (m == nullptr) continue;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      log_->warn("owners' group: {}", rd_kafka_message_errstr(m));
    }
    rd_kafka_message_destroy(m);
  }
}

bool Cluster::Impl::StillOwned(int32_t shard, int64_t generation) const {
  std::shared_lock l(routes_mu_);
  auto it = owned_.find(shard);
  return !stop_.load() && it != owned_.end() && it->second == generation;
}

void Cluster::Impl::RestoreLoop() {
  for (;;) {
    int32_t shard;
    {
      std::unique_lock l(restore_mu_);
      restore_cv_.wait(l, [&] { return stop_.load() || !restore_queue_.empty(); });
      if (stop_.load()) return;
      shard = restore_queue_.front();
      restore_queue_.pop_front();
    }
    int64_t generation;
    {
      std::shared_lock l(routes_mu_);
      auto it = owned_.find(shard);
      if (it == owned_.end() || serving_.count(shard)) continue;  // lost again, or a duplicate
      generation = it->second;
    }
    const auto t0 = std::chrono::steady_clock::now();
    Status s = Restore(shard, generation);
    if (!s.ok() && Held(shard)) continue;  // logged; held until its next assignment
    if (s.ok()) {
      last_restore_seconds_ =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      routes_cv_.notify_all();
      continue;
    }
    if (!StillOwned(shard, generation)) continue;
    log_->warn("restoring shard {}: {}; retrying", shard, s.message());
    std::unique_lock l(restore_mu_);
    restore_queue_.push_back(shard);
    restore_cv_.wait_for(l, kRetryBackoff, [&] { return stop_.load(); });
  }
}

Status Cluster::Impl::ScanPartition(int32_t shard, int64_t first, int64_t last,
                                    const std::function<Status(const rd_kafka_message_t*)>& fn,
                                    const std::function<bool()>& keep_going) {
  return ScanTopic(reader_, change_topic_, shard, first, last, fn, keep_going);
}

Status Cluster::Impl::ScanTopic(rd_kafka_t* reader, const std::string& topic, int32_t shard, int64_t first,
                                int64_t last, const std::function<Status(const rd_kafka_message_t*)>& fn,
                                const std::function<bool()>& keep_going) {
  if (last < 0 || last < first) return Status::OK();
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, topic.c_str(), shard)->offset =
      first > 0 ? first : RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_resp_err_t e = rd_kafka_assign(reader, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status(Code::kServerBusy, std::string("cluster: reading shard: ") + rd_kafka_err2str(e));
  }
  Status result;
  for (;;) {
    if (!keep_going()) {
      result = Status(Code::kServerBusy, "cluster: restore of shard " + std::to_string(shard) + " abandoned");
      break;
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(reader, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      rd_kafka_message_destroy(m);
      continue;
    }
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      log_->warn("reading {} partition {}: {}", topic, shard, rd_kafka_message_errstr(m));
      rd_kafka_message_destroy(m);
      continue;
    }
    const int64_t offset = m->offset;
    result = offset <= last ? fn(m) : Status::OK();
    rd_kafka_message_destroy(m);
    if (!result.ok() || offset >= last) break;
  }
  rd_kafka_assign(reader, nullptr);
  return result;
}

Status Cluster::Impl::Restore(int32_t shard, int64_t generation) {
  // First: when the partition lost records this member knew of, the rows
  // here may be all that is left of the shard's history. Kept, not served.
  ST_RETURN_IF_ERROR(CheckShardHistory(shard));
  // A standby copy of the shard (standby.cc) is the partition applied up
  // to its position: only the tail after it is read. Anything else local
  // may hold this sidecar's own unpublished writes from an earlier
  // ownership: dropped, and the whole partition is read.
  const std::optional<StandbyPosition> warm = TakeStandby(shard);
  StandbyPosition reached = warm.value_or(StandbyPosition{});
  last_state_loaded_records_ = 0;
  if (!warm) {
    auto dropped = hooks_.drop_shards({shard});
    if (!dropped.ok()) return dropped.status();
    // The state topic's projection, when there is one: the partition up to
    // its mark, so only the change topic's tail after it is read.
    if (!state_topic_.empty()) {
      uint64_t loaded = 0;
      auto mark = LoadState(reader_, shard, [&] { return StillOwned(shard, generation); }, &loaded);
      if (!mark.ok()) return mark.status();  // the retry drops what was loaded
      state_loaded_records_ += loaded;
      last_state_loaded_records_ = loaded;
      // From the replay point: the retry window's outcomes come back too.
      if (mark->valid()) {
        reached = StandbyPosition{mark->resume_offset(), mark->resume_floor(), false};
        log_->info("shard {}: {} records loaded from the state topic ({}), the change topic from offset {}", shard,
                   loaded, StatePrefix(mark->writer), reached.next_offset);
      }
    }
  }
  // From here the local rows are the partition applied up to `reached`:
  // a restore that fails hands that back as a standby copy, so that its
  // retry (a rebalance often takes two rounds) reads only what is left.
  Status s = RestoreFrom(shard, generation, &reached);
  if (!s.ok()) ReturnStandby(shard, reached);
  return s;
}

Status Cluster::Impl::RestoreFrom(int32_t shard, int64_t generation, StandbyPosition* reached) {
  auto keep_going = [&] { return StillOwned(shard, generation); };
  const int64_t first = reached->next_offset;
  const bool warm = reached->from_standby;  // resumed from a copy the standby thread built

  // 1. The last claim on the partition (after the standby's position: the
  //    floor holds the ones before it).
  int64_t low = 0, high = 0;
  rd_kafka_resp_err_t e =
      rd_kafka_query_watermark_offsets(reader_, change_topic_.c_str(), shard, &low, &high, 10000);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status(Code::kServerBusy, std::string("cluster: watermarks of shard: ") + rd_kafka_err2str(e));
  }
  if (low > first) {
    // Retention removed records no projection or copy holds: their rows are
    // lost here. Loud, counted, and the restore goes on (the shard must
    // serve); docs/scale-out.md says what a cluster must keep.
    log_->error("shard {}: the change topic starts at offset {}, the restore needs it from offset {}: "
                "records {}..{} are lost to retention",
                shard, low, first, first, low - 1);
    restore_gaps_++;
  }
  uint64_t last_claim = reached->floor;
  ST_RETURN_IF_ERROR(ScanPartition(
      shard, first, high > low ? high - 1 : -1,
      [&](const rd_kafka_message_t* m) {
        if (auto h = kafka::HeaderValue(m, kClaimHeader)) {
          ChangeRecord claim;
          std::string_view value(static_cast<const char*>(m->payload), m->payload ? m->len : 0);
          if (!DecodeClaim(*h, value, &claim).ok()) return Status::OK();
          // Another service's epochs are not ours to follow (nor to fence with).
          if (!claim.service.empty() && claim.service != options_.service) {
            ReportForeignClaim(shard, m->offset, claim);
          } else {
            last_claim = std::max(last_claim, claim.epoch);
          }
        }
        return Status::OK();
      },
      keep_going));

  // 2. The claim.
  const uint64_t epoch = std::max<uint64_t>(generation > 0 ? generation : 0, last_claim + 1);
  // Logged before the wait for its delivery: a restore stuck there shows it.
  log_->info("shard {}: claiming it with epoch {} (the change topic read from offset {} to {})", shard, epoch, first,
             high - 1);
  {
    std::unique_lock l(routes_mu_);
    claimed_[shard] = std::max(claimed_[shard], epoch);
  }
  auto claim_offset = ProduceWait(change_topic_, shard, ClaimKey(shard),
                                  EncodeClaimEvent(member_, epoch, shard, options_.service),
                                  kClaimHeader, std::to_string(epoch), keep_going);
  if (!claim_offset.ok()) return claim_offset.status();
  if (known_offsets_->Note(shard, *claim_offset + 1)) {
    if (Status f = known_offsets_->Flush(); !f.ok()) log_->warn("{}", f.message());
  }

  // 3. Replay up to and including the claim.
  std::unique_ptr<ShardReplayer> replayer_owner = NewReplayer(shard, apply_admitted_);
  ShardReplayer& replayer = *replayer_owner;
  replayer.SeedFloor(reached->floor);
  uint64_t concurrent_claim = 0;
  ST_RETURN_IF_ERROR(ScanPartition(
      shard, first, *claim_offset,
      [&](const rd_kafka_message_t* m) -> Status {
        uint64_t claim_epoch = 0;
        auto fed = replayer.Feed(m, &claim_epoch);
        if (!fed.ok()) return fed.status();
        if (replayer.between_events()) *reached = StandbyPosition{m->offset + 1, replayer.floor(), warm};
        // A claim between our look for the last one and our own, with an
        // epoch not below ours (a previous owner's late restore, or one
        // after the group's generations restarted): ours would not fence
        // its writes. Claim again, above it.
        if (*fed == ShardReplayer::Outcome::kClaim && m->offset != *claim_offset && claim_epoch >= epoch) {
          concurrent_claim = claim_epoch;
        }
        return Status::OK();
      },
      keep_going));
  if (concurrent_claim != 0) {
    return Status(Code::kServerBusy, "cluster: shard " + std::to_string(shard) + " was claimed with epoch " +
                                         std::to_string(concurrent_claim) + " while claiming it with epoch " +
                                         std::to_string(epoch));
  }
  restored_records_ += replayer.applied();
  fenced_records_ += replayer.fenced();
  last_restore_records_ = replayer.applied();

  // 4. Publish the ownership, then serve.
  OwnerRecord owner{member_, advertise_, epoch, *claim_offset};
  auto published = ProduceWait(cluster_topic_, 0, "owner/" + std::to_string(shard), EncodeOwner(owner), nullptr, "",
                               keep_going);
  if (!published.ok()) return published.status();
  {
    std::unique_lock l(routes_mu_);
    auto it = owned_.find(shard);
    if (stop_.load() || it == owned_.end() || it->second != generation) {
      return Status(Code::kServerBusy, "cluster: shard " + std::to_string(shard) + " lost while restoring");
    }
    serving_[shard] = epoch;
    commit_offsets_[shard] = *claim_offset + 1;
    // Counted with the shard's serving, under the same lock: counted after
    // Restore() returned, Stats() could show every shard served and one
    // restore fewer (ClusterTest.StopHandsShardsOverAndTheyAreRestored
    // failed so once in CI, session 46).
    restores_++;
    if (warm) warm_restores_++;
  }
  log_->info("serving shard {} with epoch {} ({} records restored from offset {}{}, {} fenced, claim at offset {})",
             shard, epoch, replayer.applied(), first, warm ? " (standby copy)" : "", replayer.fenced(),
             *claim_offset);
  return Status::OK();
}

}  // namespace sidetable::cluster
