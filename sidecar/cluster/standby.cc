// Standby copies (cluster.standby_replicas, docs/scale-out.md "Hand-over:
// restore and standbys"): this sidecar keeps a warm copy of the shards whose
// owner it follows on the ring of owners, by applying their partitions of
// the change topic as the owner writes them, so that a hand-over to it only
// reads the tail after the copy's position.
//
// A copy is trusted because it is built from the topic alone: its local
// rows are dropped before its first record, and nothing else writes to a
// shard this sidecar does not serve. A shard lost here becomes eligible
// only kStandbySettle later, so that a write that passed its ownership check
// just before the loss has committed before the drop (such a write's record
// is fenced on the topic: it must not survive in the copy).
#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "sidecar/cluster/cluster_impl.h"

namespace sidetable::cluster {
namespace {

constexpr auto kStandbySettle = std::chrono::seconds(10);
constexpr auto kRefreshEvery = std::chrono::milliseconds(500);
// After an apply failed (a full disk, say), the copy starts again from the
// beginning, but not sooner than this.
constexpr auto kRetryAfter = std::chrono::seconds(5);

}  // namespace

std::set<int32_t> Cluster::Impl::WantedStandbys() const {
  std::set<int32_t> wanted;
  const int replicas = options_.standby_replicas;
  if (replicas <= 0) return wanted;
  const auto now = std::chrono::steady_clock::now();
  std::shared_lock l(routes_mu_);
  std::vector<std::string> ring{member_};
  for (const OwnerRecord& o : owners_) {
    if (!o.member.empty()) ring.push_back(o.member);
  }
  std::sort(ring.begin(), ring.end());
  ring.erase(std::unique(ring.begin(), ring.end()), ring.end());
  const auto place = [&](const std::string& m) {
    return static_cast<size_t>(std::lower_bound(ring.begin(), ring.end(), m) - ring.begin());
  };
  const size_t me = place(member_);
  const size_t followers = std::min<size_t>(static_cast<size_t>(replicas), ring.size() - 1);
  for (int32_t shard = 0; shard < shards_; shard++) {
    const std::string& owner = owners_[static_cast<size_t>(shard)].member;
    if (owner.empty() || owner == member_ || owned_.count(shard)) continue;
    if (auto lost = lost_at_.find(shard); lost != lost_at_.end() && now - lost->second < kStandbySettle) continue;
    const size_t o = place(owner);
    for (size_t i = 1; i <= followers; i++) {
      if ((o + i) % ring.size() == me) wanted.insert(shard);
    }
  }
  return wanted;
}

void Cluster::Impl::RefreshStandbys(std::map<int32_t, uint64_t>* assigned) {
  std::set<int32_t> wanted = WantedStandbys();
  const auto now = std::chrono::steady_clock::now();
  std::map<int32_t, uint64_t> want_assigned;  // shard -> copy id
  std::map<int32_t, int64_t> from;            // shard -> the copy's position
  std::vector<int32_t> started, stopped;
  {
    std::lock_guard l(standby_mu_);
    std::set<int32_t> owned;
    {
      std::shared_lock r(routes_mu_);
      for (const auto& [shard, generation] : owned_) owned.insert(shard);
    }
    for (auto it = standbys_.begin(); it != standbys_.end();) {
      // A copy of a shard owned here belongs to its restore (ReturnStandby).
      if (wanted.count(it->first) || owned.count(it->first)) {
        ++it;
        continue;
      }
      stopped.push_back(it->first);
      it = standbys_.erase(it);
    }
    for (int32_t shard : wanted) {
      if (standbys_.count(shard)) continue;
      if (auto f = standby_failed_at_.find(shard); f != standby_failed_at_.end() && now - f->second < kRetryAfter) {
        continue;
      }
      StandbyCopy copy;
      copy.replayer = NewReplayer(shard, apply_admitted_);
      copy.id = ++next_standby_id_;
      standbys_.emplace(shard, std::move(copy));
      started.push_back(shard);
    }
  }
  // A new copy starts from the state topic's projection, when there is
  // one, and reads the change topic only after its mark.
  if (!state_topic_.empty()) {
    for (int32_t shard : started) {
      if (LoadStandbyState(shard)) assigned->clear();  // the reader was used: assign afresh
    }
  }
  {
    std::lock_guard l(standby_mu_);
    for (const auto& [shard, copy] : standbys_) {
      if (!wanted.count(shard)) continue;
      want_assigned[shard] = copy.id;
      from[shard] = copy.next_offset;
    }
  }
  if (!started.empty()) log_->info("standby copies of shards {} started", fmt::join(started, ","));
  if (!stopped.empty()) log_->info("standby copies of shards {} stopped", fmt::join(stopped, ","));
  // The same copies as assigned: the reader goes on where it is. A new copy
  // of a shard (after a failure, a restore, a loss) must start at its own
  // position, never where the reader happens to be.
  if (want_assigned == *assigned) return;
  // Otherwise every copy restarts from its own position (a chunk run it was
  // in the middle of is read again from its first chunk).
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(want_assigned.size()));
  for (const auto& [shard, offset] : from) {
    rd_kafka_topic_partition_list_add(list, change_topic_.c_str(), shard)->offset =
        offset > 0 ? offset : RD_KAFKA_OFFSET_BEGINNING;
  }
  rd_kafka_resp_err_t e = rd_kafka_assign(standby_reader_, want_assigned.empty() ? nullptr : list);
  rd_kafka_topic_partition_list_destroy(list);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    log_->warn("standby reader: assigning: {}", rd_kafka_err2str(e));
    return;  // tried again at the next refresh
  }
  // A copy's replayer may hold part of a chunk run that is now read again.
  {
    std::lock_guard l(standby_mu_);
    for (auto& [shard, copy] : standbys_) {
      const uint64_t floor = copy.replayer->floor();
      copy.replayer = NewReplayer(shard, apply_admitted_);
      copy.replayer->SeedFloor(floor);
    }
  }
  *assigned = std::move(want_assigned);
}

bool Cluster::Impl::LoadStandbyState(int32_t shard) {
  // Under standby_mu_ throughout: a restore of the shard (TakeStandby)
  // waits rather than find half-loaded rows.
  std::lock_guard l(standby_mu_);
  auto it = standbys_.find(shard);
  if (it == standbys_.end() || it->second.dropped) return false;
  auto owned_here = [&] {
    std::shared_lock r(routes_mu_);
    return owned_.count(shard) > 0;
  };
  if (owned_here()) return false;
  auto fail = [&](const Status& s, const char* what) {
    log_->warn("standby copy of shard {}: {}: {}; starting it again later", shard, what, s.message());
    standby_failed_at_[shard] = std::chrono::steady_clock::now();
    standbys_.erase(it);
  };
  // The rows are this shard's history only while the partition still holds it.
  if (Status held = CheckShardHistory(shard); !held.ok()) {
    fail(held, "keeping the local rows");
    return false;
  }
  auto dropped = hooks_.drop_shards({shard});
  if (!dropped.ok()) {
    fail(dropped.status(), "dropping the local rows");
    return false;
  }
  it->second.dropped = true;
  uint64_t loaded = 0;
  auto mark = LoadState(standby_reader_, shard, [&] { return !stop_.load() && !owned_here(); }, &loaded);
  if (!mark.ok()) {
    fail(mark.status(), "loading the state topic");
    return true;
  }
  state_loaded_records_ += loaded;
  if (mark->valid()) {
    it->second.next_offset = mark->resume_offset();
    it->second.replayer->SeedFloor(mark->resume_floor());
    log_->info("standby copy of shard {}: {} records from the state topic, the change topic from offset {}", shard,
               loaded, it->second.next_offset);
  }
  return true;
}

void Cluster::Impl::ApplyStandby(const rd_kafka_message_t* m) {
  const int32_t shard = m->partition;
  std::lock_guard l(standby_mu_);
  auto it = standbys_.find(shard);
  if (it == standbys_.end()) return;  // stopped, or taken by a restore
  StandbyCopy& copy = it->second;
  if (m->offset < copy.next_offset) return;  // read again after a re-assignment: applied
  {
    // Owned here now: the restore takes over (it waits for standby_mu_).
    std::shared_lock r(routes_mu_);
    if (owned_.count(shard)) return;
  }
  auto fail = [&](const Status& s, const char* what) {
    log_->warn("standby copy of shard {}: {}: {}; starting it again from the beginning", shard, what, s.message());
    standby_failed_at_[shard] = std::chrono::steady_clock::now();
    standbys_.erase(it);
  };
  if (!copy.dropped) {
    if (Status held = CheckShardHistory(shard); !held.ok())
      return fail(held, "keeping the local rows");
    auto dropped = hooks_.drop_shards({shard});
    if (!dropped.ok()) return fail(dropped.status(), "dropping the local rows");
    copy.dropped = true;
  }
  auto fed = copy.replayer->Feed(m);
  if (!fed.ok()) return fail(fed.status(), "applying a record");
  if (*fed == ShardReplayer::Outcome::kApplied) standby_records_++;
  if (copy.replayer->between_events()) copy.next_offset = m->offset + 1;
}

std::optional<StandbyPosition> Cluster::Impl::TakeStandby(int32_t shard) {
  std::lock_guard l(standby_mu_);
  auto it = standbys_.find(shard);
  if (it == standbys_.end()) return std::nullopt;
  std::optional<StandbyPosition> position;
  if (it->second.dropped) {
    position = StandbyPosition{it->second.next_offset, it->second.replayer->floor(), it->second.from_standby};
  }
  standbys_.erase(it);
  return position;
}

void Cluster::Impl::ReturnStandby(int32_t shard, StandbyPosition position) {
  std::lock_guard l(standby_mu_);
  if (standbys_.count(shard)) return;
  StandbyCopy copy;
  copy.id = ++next_standby_id_;
  copy.replayer = NewReplayer(shard, apply_admitted_);
  copy.replayer->SeedFloor(position.floor);
  copy.next_offset = position.next_offset;
  copy.dropped = true;
  copy.from_standby = position.from_standby;
  standbys_.emplace(shard, std::move(copy));
}

void Cluster::Impl::StandbyLoop() {
  std::map<int32_t, uint64_t> assigned;
  auto next_refresh = std::chrono::steady_clock::now();
  while (!stop_.load()) {
    if (std::chrono::steady_clock::now() >= next_refresh) {
      RefreshStandbys(&assigned);
      next_refresh = std::chrono::steady_clock::now() + kRefreshEvery;
    }
    if (assigned.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(standby_reader_, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ApplyStandby(m);
    } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      log_->warn("standby reader: {}", rd_kafka_message_errstr(m));
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_assign(standby_reader_, nullptr);
}

}  // namespace sidetable::cluster
