// Cluster: this sidecar's membership in its service's scale-out group
// (docs/scale-out.md is the design; read it first).
//
// It owns three Kafka clients:
//   - a consumer in the owners' group `sidetable.<service>.owners`,
//     subscribed to the change topic with the cooperative-sticky assignor:
//     the assignment is which shards this sidecar owns; its offset commits
//     are the fence checks (CheckFence);
//   - a producer for ShardClaimed records (to a shard's partition) and the
//     cluster topic;
//   - a reader of the cluster topic from the beginning (members, owners,
//     tables), which builds the owner map and the table catalog.
// On gaining a shard it drops the local copy (hooks.drop_shards), claims it
// with a new epoch, restores it from the change topic up to its own claim
// (hooks.apply for every admitted record, events/epoch_filter.h), publishes
// `owner/<shard>` and only then routes it as kLocal. On losing one it stops
// routing it as kLocal at once.
//
// Use (the server): after the engine is open and before serving requests,
// Start(options, kafka, ExpandService(kafka.topic, service), member id,
// advertised endpoint, hooks) with hooks bound to the engine (apply ->
// Engine::ApplyReplicated, drop_shards -> Engine::DropPartitions with
// ShardOf, apply_table -> create/delete in the local catalog, table_id ->
// Engine::GetTable(..)->id), and ClusterOptions::table_incarnations shared
// with the publisher's st-ti stamps (docs/scale-out.md, "Table incarnations"). Per request:
// RouteKey / AwaitRoute(shard, rebalance_wait_ms); kLocal -> execute with
// the route's epoch; kRemote -> forward to route.endpoint (expecting
// route.curve_public_key with CURVE); kUnavailable ->
// ServerBusy. A replicated write, once delivered to Kafka, calls
// CheckFence(done, shard, epoch) and answers from `done`. CreateTable /
// DeleteTable go through the cluster, not the engine. Stop() before the
// engine closes (it hands the shards over; no hook runs after it returns).
//
// Thread safety: every public method may be called from any thread; the
// routing calls are cheap (a shared lock and a copy of one entry). Hooks
// run on the cluster's threads (restore, cluster topic reader), one at a
// time per kind; `done` of CheckFence on the fence thread: keep them short.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/change_record.h"
#include "engine/status.h"
#include "sidecar/changestream/kafka_options.h"
#include "sidecar/cluster/cluster_options.h"

namespace sidetable::kafka {
class EmbeddedKafka;
}

namespace sidetable::cluster {

struct Route {
  enum class Kind {
    kLocal,        // owned and serving here: execute, writes with `epoch`
    kRemote,       // owned by `member` at `endpoint`: forward
    kUnavailable,  // no serving owner known (rebalance, restore): wait or ServerBusy
  };
  Kind kind = Kind::kUnavailable;
  int32_t shard = -1;
  uint64_t epoch = 0;
  std::string member;
  std::string endpoint;
  // The owner's CURVE public key (Z85) from its `member/<id>` record; ""
  // when that record has none (the owner's listeners are plain, or it is
  // not read yet). A forwarder with CURVE on never sends to an owner
  // without one (sidecar/forwarder.h).
  std::string curve_public_key;
};

// What the cluster asks of the rest of the sidecar (the engine, mostly).
struct ClusterHooks {
  // Applies a restored record exactly (Engine::ApplyReplicated).
  std::function<Status(const ChangeRecord&)> apply;
  // Drops every local row of these shards (Engine::DropPartitions with
  // ShardOf); returns the rows dropped.
  std::function<Result<uint64_t>(const std::vector<int32_t>& shards)> drop_shards;
  // A table record read from the cluster topic, in topic order: make the
  // local catalog agree (create if missing / delete if present). `stamp`
  // goes into the local table event (Engine::CreateTable): the record's
  // request id, whose member alone publishes the event, and the epoch its
  // readers admit and clear it with (docs/scale-out.md, "Table events in a
  // cluster"). Empty for a member's own repair of its local table, which
  // is no change of the service's catalog and is not published.
  std::function<Status(const std::string& table, bool created, const TableEventStamp& stamp)>
      apply_table;
  // The local id of `table` (Engine::GetTable(..)->id); 0 when it does not
  // exist locally. Null: tables get no incarnation map (records stay
  // unstamped and are applied as before).
  std::function<uint32_t(const std::string& table)> table_id;
};

struct ClusterStats {
  int64_t generation = -1;
  std::vector<int32_t> owned;      // assigned to this sidecar
  std::vector<int32_t> serving;    // owned and restored
  std::vector<int32_t> standby;    // standby copies kept here (cluster.standby_replicas)
  uint64_t restores_total = 0;
  uint64_t restored_records_total = 0;
  uint64_t fenced_records_total = 0;   // skipped while restoring
  uint64_t fence_checks_total = 0;
  uint64_t fence_failures_total = 0;
  double last_restore_seconds = 0;
  uint64_t last_restore_records = 0;   // applied by the latest restore
  uint64_t warm_restores_total = 0;    // restores that resumed from a standby copy
  uint64_t standby_records_total = 0;  // records applied to standby copies
  uint64_t state_records_total = 0;          // produced to the state topic
  uint64_t state_marks_total = 0;            // marks written
  uint64_t state_failures_total = 0;         // state writers stopped or not started
  uint64_t state_loaded_records_total = 0;   // applied from the state topic (restores, copies)
  uint64_t last_restore_state_records = 0;   // applied from the state topic by the latest restore
  uint64_t restore_gaps_total = 0;           // restores that found records missing
  uint64_t deleted_table_records_total = 0;  // records of deleted tables skipped by restores and copies
  uint64_t stale_table_records_total = 0;    // records of a re-created table's predecessor, skipped by them
  uint64_t state_fenced_records_total =
      0;                              // fenced records the state writers left out of the projection
  uint64_t foreign_claims_total = 0;  // distinct claims of another service read on the change topic
  std::vector<int32_t> held;  // shards whose partition lost records: rows kept, not served here
  // What makes /health "degraded": each held shard and claim of another
  // service, in words (topic, partition, offsets). Empty when all is well.
  std::vector<std::string> problems;
  std::map<int32_t, int64_t> state_marks;    // shard -> the change offset its newest projection reaches
  std::map<int32_t, int64_t> state_resume;   // shard -> where a restore from that mark replays from
  bool kafka_reachable = true;  // Kafka answered this member's probe lately (KafkaProblem)
  uint64_t member_id_conflicts_total = 0;  // records of this member id announced by another process
};

class Cluster {
 public:
  // `change_topic` is the resolved change topic (its partition count is
  // kafka.partitions = the shard count); `kafka` gives the bootstrap and
  // the client properties. `embedded` (may be null): the in-process mock,
  // on which the two topics are created (the mock has no CreateTopics API);
  // its bootstraps() replace kafka.bootstrap. Otherwise missing topics are
  // created through the admin API, and a change topic with another
  // partition count than kafka.partitions is refused.
  //
  // Returns once the cluster topic has been read up to its end as it stood
  // (the catalog is complete: hooks.apply_table ran for every table), the
  // member record is written and the owners' group is joined (assignment
  // and restores follow asynchronously: routes are kUnavailable until then).
  // `curve_public_key` (Z85, "" = none): this sidecar's CURVE public key
  // when its listeners require CURVE, published in its member record so
  // that the members forwarding to it know which server key to expect.
  static Result<std::unique_ptr<Cluster>> Start(const ClusterOptions& options,
                                                const changestream::KafkaOptions& kafka,
                                                const std::string& change_topic,
                                                const std::string& member_id,
                                                const std::string& advertise, ClusterHooks hooks,
                                                kafka::EmbeddedKafka* embedded = nullptr,
                                                const std::string& curve_public_key = {});
  ~Cluster();
  // Leaves the group (a clean hand-over) and stops the threads.
  void Stop();

  int32_t shards() const;
  int32_t ShardOf(std::string_view table, std::string_view pk) const;
  Route RouteShard(int32_t shard) const;
  Route RouteKey(std::string_view table, std::string_view pk) const {
    return RouteShard(ShardOf(table, pk));
  }
  // Waits up to `wait` while the shard is kUnavailable; returns the route then.
  Route AwaitRoute(int32_t shard, std::chrono::milliseconds wait) const;
  std::vector<Route> Routes() const;  // one per shard, in shard order

  // Fence check for replicated acknowledgement: `done` is called (on the
  // cluster's thread) with OK once an offset commit to the owners' group,
  // issued after this call, succeeded with the current generation, and with
  // ServerBusy if it was refused (the group moved on). Calls are batched:
  // one commit answers every call made before it was sent.
  // With `shard` >= 0 it also checks, after the commit, that this sidecar
  // still serves the shard (and, with `epoch` != 0, with that epoch): a
  // shard lost and regained in between is a different ownership.
  void CheckFence(std::function<void(Status)> done, int32_t shard = -1, uint64_t epoch = 0);

  // CreateTable / DeleteTable through the cluster topic: produce, wait until
  // read back in order, answer as the catalog stood at that point
  // (kTableAlreadyExists / kTableNotFound as the engine would), after
  // hooks.apply_table ran for it. Blocks at most `wait`.
  Status CreateTable(const std::string& table, const std::string& caller, std::chrono::milliseconds wait);
  Status DeleteTable(const std::string& table, const std::string& caller, std::chrono::milliseconds wait);

  // Waits (at most `wait`) until the cluster topic has been read, and the
  // catalog hooks run, up to its end as it stands now: true when caught up.
  // For a TableNotFound that may only mean "not read yet": a table created
  // through another member is there once that member's CreateTable returned.
  bool CatchUpCatalog(std::chrono::milliseconds wait);

  // The cluster incarnation of this member's local table `local_table_id`
  // (table_incarnations.h): 0 when unknown. For the publisher's st-ti
  // header; cheap, any thread.
  uint64_t TableIncarnation(uint32_t local_table_id) const;

  ClusterStats Stats() const;
  // What keeps this member from serving as it should, as a sentence for
  // /health, /ready and the ServerBusy of a shard without an owner; ""
  // when nothing. Kafka: no broker has answered this
  // member for a few seconds (probed once a second); after
  // cluster.session_timeout_ms of it the owners' group drops this member
  // and it serves no shard until Kafka answers again.
  std::string KafkaProblem() const;
  // Another process announced this member id on the cluster topic within
  // the last minute (a duplicate cluster.member_id that start-up could not
  // refuse: docs/scale-out.md, "Failure cases"); "" otherwise.
  std::string MemberIdProblem() const;
  // {"member":..,"generation":..,"owned":[..],"serving":[..],
  //  "owners":{"<shard>":{"member":..,"endpoint":..,"epoch":..}}, ...}
  std::string StatusJson() const;
  // Prometheus text for /metrics (sidetable_cluster_*).
  std::string RenderMetrics() const;

  // Tests only: stop / resume polling the owners' group consumer, as a
  // paused process would. Past cluster.session_timeout_ms librdkafka leaves
  // the group (max.poll.interval.ms), the group rebalances without it and
  // its fence checks fail.
  void PausePollingForTesting(bool paused);

  class Impl;

 private:
  explicit Cluster(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace sidetable::cluster
