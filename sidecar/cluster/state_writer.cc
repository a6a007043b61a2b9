// The state topic (cluster.state_topic, docs/scale-out.md "Bounded restore:
// the state topic"): each owner projects the shards it serves from the
// change topic onto a compacted topic, one record per live entity, and
// records on the cluster topic how far each projection reaches (the mark).
// A restore then reads the projection and only the change topic's tail
// after the mark, instead of the whole partition.
//
// The projection is written by the change topic's reader, never on the
// write path: it goes through ShardReplayer, so a record fenced on the
// topic (a replaced owner's late write) never reaches it. Each writer keys
// its records under its own prefix (epoch.incarnation), so a replaced owner
// still writing for a while cannot overwrite the new owner's records.
#include <spdlog/spdlog.h>

#include <deque>

#include "common/kafka/headers.h"
#include "engine/edm.h"
#include "events/event.h"
#include "sidecar/cluster/cluster_impl.h"

namespace sidetable::cluster {
namespace {

// How long the begin record may take to be delivered.
constexpr auto kBeginTimeout = std::chrono::seconds(30);
// Older writers' records are tombstoned this long after the first mark of
// a new writer: a restore or copy that started from an older mark meanwhile
// sees the newer mark when it finishes and loads again (LoadState).
constexpr auto kCleanDelay = std::chrono::seconds(30);
// After a writer failed (or could not start), the next one after this.
constexpr auto kRestartAfter = std::chrono::seconds(1);

// The state partition's watermarks.
Status StateWatermarks(rd_kafka_t* reader, const std::string& topic, int32_t shard, int64_t* low, int64_t* high) {
  rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(reader, topic.c_str(), shard, low, high, 10000);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status(Code::kServerBusy, std::string("cluster: watermarks of the state topic: ") + rd_kafka_err2str(e));
  }
  return Status::OK();
}

// True when `m` is an entity record of `writer`'s projection: a value, or a
// delete's tombstone (its version in *version; 0 for a value). A begin
// record, another writer's record and a clean-up's tombstone (no version:
// not a delete) are not.
bool StateEntry(const rd_kafka_message_t* m, const StateWriterId& writer, StateKey* key, uint64_t* version) {
  std::string_view k(static_cast<const char*>(m->key), m->key ? m->key_len : 0);
  if (!DecodeStateKey(k, key).ok() || key->begin || !(key->writer == writer)) return false;
  *version = 0;
  if (m->payload != nullptr) return true;
  auto v = kafka::HeaderValue(m, kStateVersionHeader);
  if (!v) return false;
  *version = std::strtoull(std::string(*v).c_str(), nullptr, 10);
  return true;
}

int64_t NowSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct Cluster::Impl::StateWriter {
  int32_t shard = -1;
  StateWriterId id;
  int64_t from = -1;      // the state-topic offset of its begin record
  uint64_t token = 0;     // its entry in *deliveries, removed with the writer
  std::map<uint64_t, StateDeliveries>* deliveries = nullptr;
  ~StateWriter() {
    // Reports still in flight find no entry and are ignored (OnStateDelivery).
    if (deliveries != nullptr) deliveries->erase(token);
  }
  uint64_t produced = 0;  // records produced (the begin record included)
  std::function<Status(const ChangeRecord&)> apply;  // projects an admitted record
  std::unique_ptr<ShardReplayer> replayer;
  int64_t next_offset = 0;  // the change topic's next offset to read (after whole events)
  // The first record of each second of commit time within the retry
  // window: where a reader must start replaying to restore the outcomes of
  // the window's requests (StateMark::replay_from), and the floor there.
  struct Recent {
    int64_t second;  // Unix seconds of the record's commit
    int64_t offset;  // where its event starts
    uint64_t floor;
  };
  std::deque<Recent> recent;
  int64_t last_commit_ticks = 0;  // of the latest record projected (set by `apply`)
  struct Candidate {
    int64_t offset;
    uint64_t floor;
    int64_t replay_from;
    uint64_t replay_floor;
    uint64_t records;  // produced when the candidate was taken: all must be delivered
  };
  std::optional<Candidate> candidate;
  int64_t marked = -2;  // the offset of the last mark written (-2: none)
  int64_t marked_replay_from = -1;
  std::chrono::steady_clock::time_point last_mark{}, first_mark{};
  bool cleaned = false;
  Status error;  // set: the writer stops and a new one (incarnation) starts
};

StateMark Cluster::Impl::BestStateMark(int32_t shard) const {
  std::shared_lock l(routes_mu_);
  auto it = state_marks_.find(shard);
  return it == state_marks_.end() ? StateMark{} : it->second;
}

Status Cluster::Impl::ProduceState(StateWriter* w, const std::string& key, const char* value, size_t size,
                                   uint64_t version, uint64_t table_incarnation) {
  rd_kafka_headers_t* headers = nullptr;
  if ((value == nullptr && version != 0) || table_incarnation != 0) headers = rd_kafka_headers_new(2);
  if (value == nullptr && version != 0) {
    const std::string v = std::to_string(version);
    rd_kafka_header_add(headers, kStateVersionHeader, -1, v.data(), v.size());
  }
  if (table_incarnation != 0) {
    const std::string ti = std::to_string(table_incarnation);
    rd_kafka_header_add(headers, events::kTableIncarnationHeader, -1, ti.data(), ti.size());
  }
  for (;;) {
    rd_kafka_resp_err_t e = rd_kafka_producev(
        state_producer_, RD_KAFKA_V_TOPIC(state_topic_.c_str()), RD_KAFKA_V_PARTITION(w->shard),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key.data(), key.size()),
        RD_KAFKA_V_VALUE(const_cast<char*>(value), value ? size : 0), RD_KAFKA_V_HEADERS(headers),
        RD_KAFKA_V_OPAQUE(reinterpret_cast<void*>(static_cast<uintptr_t>(w->token))), RD_KAFKA_V_END);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
    // The producer's queue is bounded: wait for deliveries, never grow.
    if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL && !stop_.load()) {
      rd_kafka_poll(state_producer_, 50);
      continue;
    }
    if (headers) rd_kafka_headers_destroy(headers);
    return Status(Code::kServerBusy, "cluster: producing to " + state_topic_ + ": " + rd_kafka_err2str(e));
  }
  w->produced++;
  state_records_++;
  return Status::OK();
}

Result<std::unique_ptr<Cluster::Impl::StateWriter>> Cluster::Impl::StartStateWriter(int32_t shard, uint64_t epoch) {
  auto keep_going = [&] {
    std::shared_lock l(routes_mu_);
    auto it = serving_.find(shard);
    return !stop_.load() && it != serving_.end() && it->second == epoch;
  };
  for (int attempt = 0;; attempt++) {
    const StateMark source = BestStateMark(shard);
    if (source.valid() && source.writer.epoch > epoch) {
      return Status(Code::kServerBusy, "cluster: shard " + std::to_string(shard) + " has a newer owner's state (epoch " +
                                           std::to_string(source.writer.epoch) + ")");
    }
    auto w = std::make_unique<StateWriter>();
    w->shard = shard;
    w->id = StateWriterId{epoch, ++state_incarnations_[{shard, epoch}]};
    w->token = ++next_state_token_;
    state_deliveries_[w->token] = StateDeliveries{};
    w->deliveries = &state_deliveries_;
    ST_RETURN_IF_ERROR(ProduceState(w.get(), StateBeginKey(w->id), "{}", 2, 0));
    const auto deadline = std::chrono::steady_clock::now() + kBeginTimeout;
    while (state_deliveries_[w->token].delivered == 0 && !state_deliveries_[w->token].failed) {
      if (!keep_going() || std::chrono::steady_clock::now() >= deadline) {
        return Status(Code::kServerBusy, "cluster: the state writer of shard " + std::to_string(shard) +
                                             " did not start (no delivery of its begin record)");
      }
      rd_kafka_poll(state_producer_, 100);
    }
    if (state_deliveries_[w->token].failed) {
      return Status(Code::kServerBusy, "cluster: the begin record of shard " + std::to_string(shard) + " failed");
    }
    w->from = state_deliveries_[w->token].first_offset;

    // Copy the best projection under this writer's prefix, then follow the
    // change topic from its mark on.
    uint64_t floor = 0;
    w->next_offset = 0;
    if (source.valid()) {
      int64_t low = 0, high = 0;
      ST_RETURN_IF_ERROR(StateWatermarks(state_scan_, state_topic_, shard, &low, &high));
      // Retention may have removed the projection's beginning.
      const bool intact = low <= source.from;
      if (!intact) {
        // Retention removed the projection's beginning (the state topic
        // must be compacted, never expired): project from the change
        // topic's beginning instead.
        log_->error("shard {}: the state topic starts at offset {}, after the projection's beginning ({}): "
                    "projecting from the change topic's beginning",
                    shard, low, source.from);
        state_failures_++;
      }
      if (intact) ST_RETURN_IF_ERROR(ScanTopic(
          state_scan_, state_topic_, shard, source.from, std::min<int64_t>(high - 1, w->from - 1),
          [&](const rd_kafka_message_t* m) -> Status {
            StateKey key;
            uint64_t version = 0;
            if (!StateEntry(m, source.writer, &key, &version)) return Status::OK();
            if ((w->produced & 1023) == 0) rd_kafka_poll(state_producer_, 0);
            // Another writer's record, under this writer's key: its stamp stays.
            return ProduceState(w.get(), StateEntityKey(w->id, key.table, key.partition_key, key.row_key),
                                static_cast<const char*>(m->payload), m->len, version, TableIncarnationOf(m));
          },
          keep_going));
      // A newer writer's mark meanwhile (it may have cleaned the records
      // copied): start again from that one.
      CatchUpCatalog(std::chrono::seconds(5));
      if (!(BestStateMark(shard).writer == source.writer) && attempt < 3) {
        log_->info("shard {}: the state topic's newest writer changed while copying it; copying again", shard);
        continue;
      }
      if (intact) {
        // From the source's replay point: the records of the retry window
        // before its mark are projected again (the same values, in order),
        // and they stay in this writer's replay window.
        w->next_offset = source.resume_offset();
        floor = source.resume_floor();
      }
    }
    StateWriter* raw = w.get();
    w->apply = [this, raw](const ChangeRecord& r) -> Status {
          if (r.kind != ChangeKind::kEntities) return Status::OK();  // tables live on the cluster topic
          raw->last_commit_ticks = r.commit_time;
          for (const ChangeOp& op : r.ops) {
            const std::string key = StateEntityKey(raw->id, r.table, r.partition_key, op.row_key);
            if (!op.after) {
              ST_RETURN_IF_ERROR(ProduceState(raw, key, nullptr, 0, op.version, r.table_incarnation));
              continue;
            }
            ChangeRecord one;
            one.lsn = r.lsn;
            one.kind = ChangeKind::kEntities;
            one.commit_time = r.commit_time;
            one.table = r.table;
            one.table_id = r.table_id;
            one.partition_key = r.partition_key;
            one.caller = r.caller;
            one.epoch = r.epoch;
            ChangeOp copy;
            copy.row_key = op.row_key;
            copy.kind = op.kind;
            copy.after = op.after;
            copy.version = op.version;
            copy.etag = op.etag;
            one.ops.push_back(std::move(copy));
            const std::string value = events::EncodeEvent(one, member_);
            ST_RETURN_IF_ERROR(ProduceState(raw, key, value.data(), value.size(), 0, r.table_incarnation));
          }
          return Status::OK();
        };
    w->replayer = NewReplayer(shard, w->apply);
    w->replayer->SeedFloor(floor);
    w->candidate = StateWriter::Candidate{w->next_offset - 1, floor, w->next_offset, floor, w->produced};
    log_->info("shard {}: state writer {} started at state offset {} (copied {} records of writer {}.{}), "
               "following the change topic from offset {}",
               shard, StatePrefix(w->id), w->from, w->produced - 1, source.writer.epoch, source.writer.incarnation,
               w->next_offset);
    return w;
  }
}

void Cluster::Impl::MaybeMark(StateWriter* w, bool force) {
  const StateDeliveries& d = state_deliveries_[w->token];
  if (d.failed) {
    w->error = Status(Code::kServerBusy, "a state record was not delivered");
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  // Records older than the retry window need no replay any more.
  const int64_t window_start = NowSeconds() - options_.retry_window_seconds;
  while (!w->recent.empty() && w->recent.front().second < window_start) w->recent.pop_front();
  const int64_t replay_from = w->recent.empty() ? w->next_offset : w->recent.front().offset;
  // A mark when the projection moved on, or the replay point did (the
  // window passed records by), at most every interval.
  if (!w->candidate && w->replayer->between_events() &&
      (w->next_offset - 1 > w->marked || replay_from > w->marked_replay_from) &&
      (force || now - w->last_mark >= std::chrono::milliseconds(options_.state_mark_interval_ms))) {
    const uint64_t floor = w->replayer->floor();
    w->candidate = StateWriter::Candidate{w->next_offset - 1, floor, replay_from,
                                          w->recent.empty() ? floor : w->recent.front().floor, w->produced};
  }
  if (!w->candidate || d.delivered < w->candidate->records) return;
  StateMark mark;
  mark.writer = w->id;
  mark.from = w->from;
  mark.offset = w->candidate->offset;
  mark.floor = w->candidate->floor;
  mark.replay_from = std::min(w->candidate->replay_from, w->candidate->offset + 1);
  mark.replay_floor = w->candidate->replay_floor;  // read through StateMark::resume_floor()
  mark.member = member_;
  ProduceAsync(cluster_topic_, 0, StateMarkKey(w->shard), EncodeStateMark(mark));
  if (w->marked == -2) w->first_mark = now;
  w->marked = w->candidate->offset;
  w->marked_replay_from = mark.replay_from;
  w->last_mark = now;
  w->candidate.reset();
  state_marks_written_++;
}

void Cluster::Impl::CleanOldState(StateWriter* w) {
  // Tombstones (without a version header: not deletes) for every record of
  // an older writer before this writer's begin record. A newer writer's
  // records are never touched (this one may be the replaced owner).
  w->cleaned = true;
  uint64_t cleaned = 0;
  auto keep_going = [&] { return !stop_.load(); };
  Status s = ScanTopic(
      state_scan_, state_topic_, w->shard, 0, w->from - 1,
      [&](const rd_kafka_message_t* m) -> Status {
        StateKey key;
        std::string_view k(static_cast<const char*>(m->key), m->key ? m->key_len : 0);
        if (m->payload == nullptr || !DecodeStateKey(k, &key).ok() || !(key.writer < w->id)) return Status::OK();
        if ((cleaned & 1023) == 0) rd_kafka_poll(state_producer_, 0);
        cleaned++;
        return ProduceState(w, std::string(k), nullptr, 0, 0);
      },
      keep_going);
  if (!s.ok()) {
    log_->warn("shard {}: cleaning older state records: {}", w->shard, s.message());
    return;
  }
  log_->info("shard {}: {} records of older state writers tombstoned", w->shard, cleaned);
}

Result<StateMark> Cluster::Impl::LoadState(rd_kafka_t* reader, int32_t shard,
                                           const std::function<bool()>& keep_going, uint64_t* applied) {
  for (int attempt = 0; attempt < 4; attempt++) {
    CatchUpCatalog(std::chrono::seconds(5));
    const StateMark mark = BestStateMark(shard);
    if (!mark.valid()) return mark;
    int64_t low = 0, high = 0;
    ST_RETURN_IF_ERROR(StateWatermarks(reader, state_topic_, shard, &low, &high));
    if (low > mark.from) {
      // The projection's beginning is gone (retention on a topic that must
      // only be compacted): the change topic from its beginning instead.
      log_->error("shard {}: the state topic starts at offset {}, after the projection's beginning ({}): "
                  "restoring from the change topic alone",
                  shard, low, mark.from);
      restore_gaps_++;
      return StateMark{};
    }
    uint64_t n = 0, skipped = 0;
    ST_RETURN_IF_ERROR(ScanTopic(
        reader, state_topic_, shard, mark.from, high - 1,
        [&](const rd_kafka_message_t* m) -> Status {
          StateKey key;
          uint64_t version = 0;
          if (!StateEntry(m, mark.writer, &key, &version)) return Status::OK();
          ChangeRecord record;
          Status s = StateRecordToChange(key, static_cast<const char*>(m->payload), m->len, version, &record);
          if (!s.ok()) {
            // The tail cannot repair a row the projection lost: say so loudly.
            log_->error("shard {}: state offset {} is skipped: {}", shard, m->offset, s.message());
            skipped++;
            return Status::OK();
          }
          record.table_incarnation = TableIncarnationOf(m);
          ST_RETURN_IF_ERROR(ApplyAdmitted(record));
          n++;
          return Status::OK();
        },
        keep_going));
    CatchUpCatalog(std::chrono::seconds(5));
    if (BestStateMark(shard).writer == mark.writer) {
      *applied += n;
      if (skipped > 0) restore_gaps_++;
      return mark;
    }
    log_->info("shard {}: a newer state writer marked while loading the state of {}; loading again", shard,
               StatePrefix(mark.writer));
    auto dropped = hooks_.drop_shards({shard});
    if (!dropped.ok()) return dropped.status();
  }
  return Status(Code::kServerBusy, "cluster: the state of shard " + std::to_string(shard) +
                                       " changed writers while loading it, four times");
}

void Cluster::Impl::StateLoop() {
  std::map<int32_t, std::unique_ptr<StateWriter>> writers;
  std::map<int32_t, std::chrono::steady_clock::time_point> retry_at;
  bool reassign = false;
  while (!stop_.load()) {
    rd_kafka_poll(state_producer_, 0);
    std::map<int32_t, uint64_t> serving;
    {
      std::shared_lock l(routes_mu_);
      serving = serving_;
    }
    const auto now = std::chrono::steady_clock::now();
    for (auto it = writers.begin(); it != writers.end();) {
      auto s = serving.find(it->first);
      if (s != serving.end() && s->second == it->second->id.epoch && it->second->error.ok()) {
        ++it;
        continue;
      }
      if (!it->second->error.ok()) {
        state_failures_++;
        log_->warn("shard {}: state writer {} stopped: {}", it->first, StatePrefix(it->second->id),
                   it->second->error.message());
        retry_at[it->first] = now + kRestartAfter;
      }
      it = writers.erase(it);
      reassign = true;
    }
    for (const auto& [shard, epoch] : serving) {
      if (writers.count(shard) || stop_.load()) continue;
      if (auto r = retry_at.find(shard); r != retry_at.end() && now < r->second) continue;
      auto w = StartStateWriter(shard, epoch);
      if (!w.ok()) {
        // A shard lost (or stopped) meanwhile is no failure: its writer is
        // simply not needed any more.
        bool still_serving;
        {
          std::shared_lock l(routes_mu_);
          auto it = serving_.find(shard);
          still_serving = !stop_.load() && it != serving_.end() && it->second == epoch;
        }
        if (still_serving) {
          log_->warn("shard {}: {}", shard, w.status().message());
          state_failures_++;
        }
        retry_at[shard] = std::chrono::steady_clock::now() + kRestartAfter;
        continue;
      }
      writers[shard] = std::move(*w);
      reassign = true;
    }
    if (reassign) {
      // Every writer goes on from its own position; one in the middle of a
      // chunk run reads the run again from its first chunk.
      rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(static_cast<int>(writers.size()));
      for (auto& [shard, w] : writers) {
        rd_kafka_topic_partition_list_add(list, change_topic_.c_str(), shard)->offset =
            w->next_offset > 0 ? w->next_offset : RD_KAFKA_OFFSET_BEGINNING;
        if (!w->replayer->between_events()) {
          const uint64_t floor = w->replayer->floor();
          w->replayer = NewReplayer(shard, w->apply);
          w->replayer->SeedFloor(floor);
        }
      }
      rd_kafka_resp_err_t e = rd_kafka_assign(state_follow_, writers.empty() ? nullptr : list);
      rd_kafka_topic_partition_list_destroy(list);
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        log_->warn("state writer: assigning: {}", rd_kafka_err2str(e));
      } else {
        reassign = false;
      }
    }
    if (writers.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      continue;
    }
    rd_kafka_message_t* m = rd_kafka_consumer_poll(state_follow_, 100);
    if (m != nullptr) {
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        auto it = writers.find(m->partition);
        if (it != writers.end() && m->offset >= it->second->next_offset && it->second->error.ok()) {
          StateWriter* w = it->second.get();
          const int64_t event_start = w->next_offset;  // the event's first chunk (or this message)
          const uint64_t floor_before = w->replayer->floor();
          auto fed = w->replayer->Feed(m);
          if (!fed.ok()) {
            w->error = fed.status();
          } else {
            // A replaced owner's late record: never projected, but counted.
            if (*fed == ShardReplayer::Outcome::kFenced) state_fenced_records_++;
            if (*fed == ShardReplayer::Outcome::kApplied && w->last_commit_ticks > 0) {
              const int64_t second = (w->last_commit_ticks - kUnixEpochTicks) / kTicksPerSecond;
              if (w->recent.empty() || second > w->recent.back().second) {
                w->recent.push_back({second, event_start, floor_before});
              }
            }
            if (w->replayer->between_events()) w->next_offset = m->offset + 1;
          }
        }
      } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        log_->warn("state writer: {}", rd_kafka_message_errstr(m));
      }
      rd_kafka_message_destroy(m);
    }
    for (auto& [shard, w] : writers) {
      if (!w->error.ok()) continue;
      MaybeMark(w.get(), false);
      if (w->marked != -2 && !w->cleaned && std::chrono::steady_clock::now() - w->first_mark >= kCleanDelay) {
        CleanOldState(w.get());
      }
    }
  }
  rd_kafka_assign(state_follow_, nullptr);
}

}  // namespace sidetable::cluster
