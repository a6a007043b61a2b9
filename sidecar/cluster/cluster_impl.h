// Cluster::Impl: the internals shared by cluster.cc (lifecycle, routing,
// stats), membership.cc (the owners' group, claims and restores), catalog.cc
// (the cluster topic reader: owners, members, tables) and fence.cc (fence
// checks). Not a public header.
//
// Threads: poll (the owners' group consumer and its rebalance callback),
// restore (one shard at a time, so the poll thread keeps heartbeating),
// catalog (the cluster topic reader), fence (batched offset commits),
// delivery (serves the producer's delivery reports), standby (the standby
// copies, standby.cc; only with cluster.standby_replicas > 0), state (the
// served shards' projections onto the state topic, state_writer.cc; only
// with cluster.state_topic).
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <thread>

#include "engine/table_name.h"
#include "sidecar/cluster/cluster.h"
#include "sidecar/cluster/known_offsets.h"
#include "sidecar/cluster/records.h"
#include "sidecar/cluster/shard_replayer.h"
#include "sidecar/cluster/state_records.h"
#include "sidecar/cluster/table_incarnations.h"
#include "sidecar/cluster/topic_check.h"

namespace spdlog {
class logger;
}

namespace sidetable::cluster {

// Wall-clock milliseconds since the epoch: the times members stamp on their
// records (they compare across machines, so not a steady clock).
inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Steady-clock milliseconds (intervals only).
inline int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Where a standby copy of a shard stands: the partition is applied up to
// (not including) next_offset, and `floor` is the highest claim epoch read
// before it. A restore resumes there.
struct StandbyPosition {
  int64_t next_offset = 0;
  uint64_t floor = 0;
  bool from_standby = false;  // built by the standby thread (not a failed restore's rows)
};

class Cluster::Impl {
 public:
  Impl(const ClusterOptions& options, const changestream::KafkaOptions& kafka, std::string change_topic,
       std::string member_id, std::string advertise, ClusterHooks hooks, kafka::EmbeddedKafka* embedded,
       std::string curve_public_key);
  ~Impl();

  Status Init();  // clients, topics, catalog caught up, member record, subscribe
  void Stop();

  // cluster.cc
  Route RouteShardLocked(int32_t shard) const;  // routes_mu_ held (shared)
  Route RouteShard(int32_t shard) const;
  Route AwaitRoute(int32_t shard, std::chrono::milliseconds wait) const;
  ClusterStats Stats() const;
  std::string StatusJson() const;
  std::string RenderMetrics() const;

  // This member's `member/<id>` record value (its advertised endpoint and
  // CURVE key), for every place that announces it: Init, and
  // RefreshGeneration on a rejoin.
  std::string MemberValue(int64_t started_ms) const;

  // Kafka helpers (cluster.cc)
  Result<rd_kafka_t*> NewClient(rd_kafka_type_t type, const std::map<std::string, std::string>& settings,
                                rd_kafka_conf_t* conf = nullptr);
  // Produces one message and waits for its delivery: its offset. A wait
  // whose `keep_going` turns false (the shard was lost meanwhile) ends at
  // once; the message may still be delivered.
  Result<int64_t> ProduceWait(const std::string& topic, int32_t partition, const std::string& key,
                              const std::string& value, const char* header = nullptr,
                              const std::string& header_value = "",
                              const std::function<bool()>& keep_going = nullptr);
  // Finds or creates `topic`; an existing topic must have `partitions`.
  // Produces without waiting (a failure is only logged).
  void ProduceAsync(const std::string& topic, int32_t partition, const std::string& key, const std::string& value);
  // `configs`: the settings a topic created here gets.
  Status EnsureTopic(TopicRole role, const std::string& topic, int partitions,
                     const std::map<std::string, std::string>& configs);
  static void OnDelivery(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque);
  static void OnStateDelivery(rd_kafka_t* rk, const rd_kafka_message_t* m, void* opaque);

  // membership.cc
  static void OnRebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t* parts,
                          void* opaque);
  void PollLoop();
  void RestoreLoop();
  void Gained(const rd_kafka_topic_partition_list_t* parts);
  // session_lost: librdkafka says the assignment was lost (a session time-out), not revoked.
  void Lost(const rd_kafka_topic_partition_list_t* parts, bool session_lost = false);
  void RefreshGeneration();
  Status Restore(int32_t shard, int64_t generation);
  // Restore's steps after the local rows are the partition applied up to
  // *reached (a standby copy, or nothing after a drop); advances *reached.
  Status RestoreFrom(int32_t shard, int64_t generation, StandbyPosition* reached);
  bool StillOwned(int32_t shard, int64_t generation) const;
  // Reads `shard` of the change topic from offset `first` (0: its
  // beginning) through offset `last` (inclusive), calling fn for every
  // message. Aborts (kServerBusy) when `keep_going` says so.
  Status ScanPartition(int32_t shard, int64_t first, int64_t last,
                       const std::function<Status(const rd_kafka_message_t*)>& fn,
                       const std::function<bool()>& keep_going);
  // The same for any topic, with `reader` (assigned for the scan only).
  Status ScanTopic(rd_kafka_t* reader, const std::string& topic, int32_t shard, int64_t first, int64_t last,
                   const std::function<Status(const rd_kafka_message_t*)>& fn,
                   const std::function<bool()>& keep_going);

  // state_writer.cc
  void StateLoop();
  // The best mark known for `shard` (the catalog's; invalid when none).
  StateMark BestStateMark(int32_t shard) const;
  // Applies the state topic's projection of `shard` named by its best mark
  // to the local rows (which the caller dropped), reading with `reader`.
  // Returns the mark used (invalid: no projection; nothing applied), and
  // adds the records applied to *applied. Local rows are dropped again and
  // the load repeated when a newer writer's mark appeared meanwhile.
  Result<StateMark> LoadState(rd_kafka_t* reader, int32_t shard, const std::function<bool()>& keep_going,
                              uint64_t* applied);
  struct StateWriter;
  // Starts the projection of a shard served here with `epoch`: its begin
  // record, then a copy of the best mark's records under its own prefix.
  Result<std::unique_ptr<StateWriter>> StartStateWriter(int32_t shard, uint64_t epoch);
  // `table_incarnation` (0 = none): the st-ti stamp of the record projected,
  // kept on its state record so that a load can skip a predecessor's rows.
  Status ProduceState(StateWriter* w, const std::string& key, const char* value, size_t size, uint64_t version,
                      uint64_t table_incarnation = 0);
  void MaybeMark(StateWriter* w, bool force);
  void CleanOldState(StateWriter* w);

  // standby.cc
  void StandbyLoop();
  // The shards this sidecar should keep a standby copy of now: those whose
  // owner is followed by this sidecar within cluster.standby_replicas
  // places on the ring of owners (sorted by member id), not owned here,
  // and not lost here in the last kStandbySettle.
  std::set<int32_t> WantedStandbys() const;
  // Brings standbys_ and the reader's assignment in line with WantedStandbys().
  // `assigned`: shard -> id of the copy the reader is assigned for.
  void RefreshStandbys(std::map<int32_t, uint64_t>* assigned);
  // A new copy's start from the state topic (when it has a projection of
  // the shard); true when standby_reader_ was used (its assignment is gone).
  bool LoadStandbyState(int32_t shard);
  void ApplyStandby(const rd_kafka_message_t* m);
  // For a restore: removes the shard's standby copy and returns its
  // position, or nullopt when there is no usable copy (never dropped, or
  // none). Waits for a record of it being applied.
  std::optional<StandbyPosition> TakeStandby(int32_t shard);
  // A failed restore's local rows, as a standby copy at `position` (unless
  // a copy exists already). Kept while the shard is owned here, for the
  // restore's retry; dropped later if this sidecar is not its standby.
  void ReturnStandby(int32_t shard, StandbyPosition position);

  // catalog.cc
  // The apply hook of restores, standby copies and state loads: an
  // Entities record of a table the cluster catalog does not hold (deleted
  // since) is skipped, so a hand-over never brings a deleted table back
  // (ApplyReplicated creates a table it does not find); so is one stamped
  // with another incarnation of its table than the catalog's (written to a
  // predecessor of a table re-created since). Unstamped records are applied.
  // A stamp newer than the catalog's incarnation when the catalog could not
  // be read to its end is kServerBusy (read again later).
  Status ApplyAdmitted(const ChangeRecord& record);
  // The catalog's incarnation of `table` (0: not in the catalog), after
  // reading the catalog up to its end when it is absent or older than
  // `at_least` (a table created a moment ago); an absence is remembered
  // for a second. *behind (when given): that catch-up did not finish.
  uint64_t LiveIncarnation(const std::string& table, uint64_t at_least = 0, bool* behind = nullptr);
  void CatalogLoop();
  // `offset`: the record's offset on the cluster topic (a create record's
  // offset + 1 is its table's incarnation).
  void HandleClusterRecord(std::string_view key, std::string_view value, int64_t offset);
  // The stamp of the local table event that applying `record` writes.
  TableEventStamp TableEventStampFor(const TableRecord& record) const;
  // After the catalog applied a create of `table` with `incarnation`: maps
  // the local table (existing before: `had_id`) to it; one that belongs to
  // another incarnation is deleted and created again first.
  void MapLocalTable(const std::string& table, uint32_t had_id, uint64_t incarnation);
  Status TableOp(const std::string& table, bool create, const std::string& caller,
                 std::chrono::milliseconds wait);
  bool CatchUpCatalog(std::chrono::milliseconds wait);

  // health.cc: is Kafka answering, and is this member id this process's alone.
  // Once a second on the catalog thread: a watermark query of the cluster
  // topic; also the re-announcement a foreign member record asked for.
  void HealthTick();
  // A `member/<member_>` record read from the cluster topic at `offset`.
  void NoteOwnMemberRecord(const MemberRecord& record, int64_t offset);
  // Init, after this process announced itself at own_announce_offset_,
  // when the topic held a record of this member id before: waits
  // kDuplicateMemberWait for a live holder of the id to answer with its
  // own record, and refuses the start-up (kInvalidInput) if one did.
  Status CheckMemberIdUnused(const std::string& previous_endpoint);
  // Init, once the start-up check passed: from now on a foreign record is
  // answered by announcing this member again.
  void StartAnsweringForeignAnnouncements();
  std::string KafkaProblem() const;
  std::string MemberIdProblem() const;
  // misconfig.cc: a change topic that is not (or no longer) this service's.
  // A ShardReplayer that fences with this service and reports the claims
  // of another (ReportForeignClaim).
  std::unique_ptr<ShardReplayer> NewReplayer(int32_t shard,
                                             std::function<Status(const ChangeRecord&)> apply);
  // Logs (once per claim), counts and keeps as a problem (/health) a claim
  // of another service read at `offset` on `shard`'s partition.
  void ReportForeignClaim(int32_t shard, int64_t offset, const ChangeRecord& claim);
  // At start-up, before joining: a member record of another service on the
  // cluster topic, or a claim of another service on the change topic (read
  // from the best state mark's replay point, else from the start), refuses
  // the start (kInvalidInput naming the service, partition and offset).
  Status CheckServiceAtStartUp();
  // Before a restore or a standby copy drops `shard`'s local rows: the
  // partition must hold every offset this member knew was on it
  // (known_offsets.h). If not, the shard is held (its rows kept, not
  // served here until its next assignment), the error logged once and
  // counted in restore_gaps_, and kFailedPrecondition returned. On success
  // the partition's end is noted.
  Status CheckShardHistory(int32_t shard);
  bool Held(int32_t shard) const;
  // What /health reports as degraded: held shards, foreign claims.
  std::vector<std::string> Problems() const;

  // fence.cc
  void CheckFence(std::function<void(Status)> done, int32_t shard, uint64_t epoch);
  void FenceLoop();

  // Configuration.
  const ClusterOptions options_;
  const changestream::KafkaOptions kafka_;
  const std::string change_topic_, member_, advertise_;
  const std::string curve_public_key_;  // this member's, "" = CURVE off
  const ClusterHooks hooks_;
  const std::function<Status(const ChangeRecord&)> apply_admitted_ = [this](const ChangeRecord& r) {
    return ApplyAdmitted(r);
  };
  kafka::EmbeddedKafka* const embedded_;
  std::string bootstrap_, cluster_topic_, group_id_;
  int32_t shards_ = 1;
  std::shared_ptr<spdlog::logger> log_;

  rd_kafka_t* group_ = nullptr;     // the owners' group consumer
  rd_kafka_t* producer_ = nullptr;  // claims and cluster records (idempotent, acks=all)
  rd_kafka_t* reader_ = nullptr;    // restores (assign mode, no group)
  rd_kafka_t* catalog_ = nullptr;   // the cluster topic (assign mode, no group)
  rd_kafka_t* standby_reader_ = nullptr;  // standby copies (assign mode, no group)

  // Ownership and the owner map.
  mutable std::shared_mutex routes_mu_;
  mutable std::condition_variable_any routes_cv_;
  std::map<int32_t, int64_t> owned_;     // shard -> generation it was gained in
  std::map<int32_t, uint64_t> serving_;  // shard -> epoch
  std::map<int32_t, int64_t> commit_offsets_;  // shard -> offset the fence commits
  std::map<int32_t, uint64_t> claimed_;  // shard -> highest epoch we claimed
  std::map<int32_t, std::chrono::steady_clock::time_point> lost_at_;  // shard -> when last lost here
  std::vector<OwnerRecord> owners_;      // per shard, from the cluster topic
  std::map<std::string, MemberRecord> members_;  // member -> its latest record
  std::map<int32_t, StateMark> state_marks_;     // shard -> the newest writer's latest mark
  int64_t generation_ = -1;
  std::string group_member_id_;  // the coordinator's id for us (poll thread only)

  // Restores.
  std::mutex restore_mu_;
  std::condition_variable restore_cv_;
  std::deque<int32_t> restore_queue_;

  // Standby copies. standby_mu_ is held while a record of one is applied,
  // and is taken before routes_mu_ (never the other way round).
  struct StandbyCopy {
    std::unique_ptr<ShardReplayer> replayer;
    int64_t next_offset = 0;  // after the last whole event fed
    bool dropped = false;     // the local rows were dropped before the first record
    bool from_standby = true;  // false: a failed restore's rows (ReturnStandby)
    uint64_t id = 0;           // unique per copy: a new copy of a shard is assigned afresh
  };
  uint64_t next_standby_id_ = 0;  // standby_mu_
  mutable std::mutex standby_mu_;
  std::map<int32_t, StandbyCopy> standbys_;
  // The standby shards as Stats() last read them (when standby_mu_ is busy).
  mutable std::mutex standby_list_mu_;
  mutable std::vector<int32_t> standby_list_;
  std::map<int32_t, std::chrono::steady_clock::time_point> standby_failed_at_;  // standby thread only

  // The state topic (state_writer.cc).
  std::string state_topic_;               // "" = off
  rd_kafka_t* state_producer_ = nullptr;  // state records (idempotent, acks=all); polled by the state thread
  rd_kafka_t* state_follow_ = nullptr;    // the served shards' change partitions (assign mode)
  rd_kafka_t* state_scan_ = nullptr;      // copies and clean-ups of the state topic (assign mode)
  std::map<std::pair<int32_t, uint64_t>, uint32_t> state_incarnations_;  // (shard, epoch) -> last; state thread
  // Delivery counts of the state records per writer token; the delivery
  // callback runs in rd_kafka_poll(state_producer_), on the state thread.
  struct StateDeliveries {
    uint64_t delivered = 0;
    int64_t first_offset = -1;  // of the first record delivered (the writer's begin record)
    bool failed = false;
  };
  std::map<uint64_t, StateDeliveries> state_deliveries_;
  uint64_t next_state_token_ = 0;

  // Fence checks.
  std::mutex fence_mu_;
  std::condition_variable fence_cv_;
  struct FenceWaiter {
    std::function<void(Status)> done;
    int32_t shard;
    uint64_t epoch;
  };
  std::vector<FenceWaiter> fence_waiters_;

  // Tables and the cluster topic's read position.
  std::mutex table_mu_;
  std::condition_variable table_cv_;
  std::map<TableKey, uint64_t> tables_;  // the catalog: table -> its incarnation
  std::shared_ptr<TableIncarnations> incarnations_;  // local table id -> incarnation (never null)
  std::map<TableKey, std::chrono::steady_clock::time_point> absent_tables_;  // last confirmed absent
  std::map<std::string, std::optional<Status>> table_waits_;  // request id -> outcome
  uint64_t table_seq_ = 0;
  int64_t catalog_offset_ = -1;  // last offset read from the cluster topic
  std::atomic<bool> catalog_stop_{false};
  std::atomic<bool> delivery_stop_{false};  // after every producing thread stopped

  std::atomic<bool> stop_{false};
  bool joined_ = false;  // subscribed to the owners' group (Init; read by Stop)
  std::atomic<bool> poll_paused_{false};
  std::atomic<uint64_t> assigns_{0};  // assignment callbacks run (fence checks wait for one)
  std::atomic<bool> rejoining_{false};  // between a cooperative revocation and the next round's assignment
  int64_t revoked_in_ = -1;             // the generation of that revocation (poll thread only)
  // The coordinator refused a fence commit (REBALANCE_IN_PROGRESS, or the
  // generation moved): the group is rebalancing. No commit is sent until this
  // client's next assignment callback clears it (or, as a safety valve, after
  // cluster.session_timeout_ms): a commit in flight when the coordinator
  // moves to the next generation comes back ILLEGAL_GENERATION, and
  // librdkafka 2.0 then drops the assignment and forces yet another
  // rebalance (fence.cc, docs/scale-out.md).
  std::atomic<int64_t> rebalancing_since_ms_{0};  // steady clock ms; 0 = not known to rebalance
  std::thread poll_thread_, restore_thread_, fence_thread_, catalog_thread_, delivery_thread_, standby_thread_,
      state_thread_;

  // Health (health.cc).
  static std::string NewInstance();  // 16 random hex digits
  // Random per process: this start's member records carry it.
  const std::string instance_ = NewInstance();
  // The last time Kafka answered (a probe, or a cluster-topic record).
  std::atomic<int64_t> kafka_ok_steady_ms_{0};
  std::atomic<int64_t> kafka_down_since_ms_{0};  // wall clock; 0 = reachable
  int64_t next_probe_steady_ms_ = 0;             // catalog thread
  // The cluster topic's end when this process started (set before the
  // catalog thread starts): member records from here on are this start's.
  int64_t announce_from_ = 0;
  std::atomic<int64_t> own_announce_offset_{INT64_MAX};  // this process's first member record
  std::atomic<bool> answering_{false};  // past the start-up check: foreign records are answered
  mutable std::mutex health_mu_;
  std::string kafka_error_;  // health_mu_: the probe's last error
  // health_mu_: (offset, endpoint) of other processes' records of this
  // member id since announce_from_ (the newest 16).
  std::vector<std::pair<int64_t, std::string>> foreign_records_;
  int64_t conflict_seen_steady_ms_ = 0;    // health_mu_: 0 = never
  std::string conflict_endpoint_;          // health_mu_
  bool reannounce_due_ = false;            // health_mu_
  int64_t last_reannounce_steady_ms_ = 0;  // catalog thread
  std::atomic<uint64_t> member_id_conflicts_{0};

  // Stats.
  std::atomic<uint64_t> restores_{0}, restored_records_{0}, fenced_records_{0};
  std::atomic<uint64_t> fence_checks_{0}, fence_failures_{0};
  std::atomic<double> last_restore_seconds_{0};
  std::atomic<uint64_t> last_restore_records_{0}, warm_restores_{0}, standby_records_{0};
  std::atomic<uint64_t> state_records_{0}, state_marks_written_{0}, state_failures_{0};
  std::atomic<uint64_t> state_loaded_records_{0}, last_state_loaded_records_{0}, restore_gaps_{0};
  std::atomic<uint64_t> deleted_table_records_{0};  // skipped by ApplyAdmitted
  std::atomic<uint64_t> stale_table_records_{0};    // another incarnation's, skipped by ApplyAdmitted
  std::atomic<uint64_t> state_fenced_records_{0};   // fenced records the state writers left out

  // misconfig.cc
  std::shared_ptr<KnownOffsets> known_offsets_;  // never null after Init
  mutable std::mutex problems_mu_;
  std::map<int32_t, std::string> held_;  // shard -> why it is held (LostHistory)
  std::map<std::pair<int32_t, int64_t>, std::string>
      foreign_;  // (shard, offset) -> the foreign claim
};

}  // namespace sidetable::cluster
