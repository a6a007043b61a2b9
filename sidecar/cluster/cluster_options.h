// ClusterOptions: the `cluster:` section of the sidecar's config
// (docs/scale-out.md, "Configuration"). Off unless `service` is set.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace sidetable::cluster {

class TableIncarnations;

enum class AckMode {
  kReplicated,  // local commit + Kafka acks=all + a fence check (default)
  kLocal,       // local commit only, as without scale-out
};

struct ClusterOptions {
  std::string service;    // cluster.service; "" = off
  std::string member_id;  // cluster.member_id; "" = the sidecar id
  // cluster.advertise: the ZeroMQ endpoint the other sidecars forward to
  // ("" = the first bound --listen endpoint, loopback/development only).
  std::string advertise;
  AckMode acks = AckMode::kReplicated;   // cluster.acks: replicated | local
  int standby_replicas = 0;              // cluster.standby_replicas
  int rebalance_wait_ms = 2000;          // cluster.rebalance_wait_ms
  int session_timeout_ms = 10000;        // cluster.session_timeout_ms
  // cluster.topic: the membership/owner/table topic ("{service}" replaced).
  std::string topic = "sidetable.{service}.cluster";
  // cluster.state_topic: the compacted projection of the change topic that
  // bounds a restore (docs/scale-out.md, "Bounded restore"); "{service}"
  // replaced; "" = off (a restore reads the whole change-topic partition).
  std::string state_topic = "sidetable.{service}.state";
  // cluster.state_mark_interval_ms: how often an owner records how far its
  // projection reaches (the tail a restore reads is at most about this old).
  int state_mark_interval_ms = 1000;
  // Not a `cluster:` key: retries.window_seconds (the engine's request-id
  // window) plus as much again, at most a minute, for clock skew; set by
  // the server. A restore
  // replays this much of the change topic before a state mark, so that the
  // outcomes of recent requests come back with it (StateMark::replay_from).
  int64_t retry_window_seconds = 960;
  // Not a `cluster:` key: this member's map of local table ids to their
  // cluster incarnations (table_incarnations.h). The server opens it from
  // a file beside its data before the publisher starts, so that the
  // publisher stamps its first record already; null = the cluster keeps
  // one in memory only (tests).
  std::shared_ptr<TableIncarnations> table_incarnations;
  // Not a `cluster:` key: the file where this member keeps how far it knew
  // each shard's change-topic partition reached (known_offsets.h), beside
  // its data; "" = in memory only (tests).
  std::string known_offsets_file;

  bool enabled() const { return !service.empty(); }
};

// `topic` with every "{service}" replaced by `service` (kafka.topic and
// cluster.topic in cluster mode).
inline std::string ExpandService(std::string topic, const std::string& service) {
  for (size_t at; (at = topic.find("{service}")) != std::string::npos;) topic.replace(at, 9, service);
  return topic;
}

}  // namespace sidetable::cluster
