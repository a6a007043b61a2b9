// Settings of the change stream (the `kafka:` section of the config).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace sidetable::changestream {

struct KafkaOptions {
  // "" = no publishing; "embedded" = librdkafka's mock cluster inside the
  // sidecar (development and tests); else a bootstrap list "host:port,...".
  std::string bootstrap;
  // Topic name; "{sidecar}" and "{table}" are replaced (a "{table}" topic
  // per table, else one topic for the sidecar).
  std::string topic = "sidetable.{sidecar}.changes";
  int partitions = 12;           // for topics the sidecar creates
  int replication_factor = 1;    // for topics the sidecar creates (prod: 3)
  int embedded_brokers = 1;
  // Where the embedded cluster's bootstrap address is written for other
  // processes ("" = <storage.path>/kafka.bootstrap).
  std::string bootstrap_file;
  // Unpublished events the change log may hold before writes get ServerBusy.
  uint64_t max_backlog_events = 1'000'000;
  // Publishing state is persisted at most this often (at-least-once: a
  // restart may republish up to this much).
  int watermark_flush_ms = 200;
  // Events larger than this go out as a run of chunk messages of at most
  // this many bytes each (docs/change-events.md). Below Kafka's default
  // 1,000,000-byte message.max.bytes with room for the key and headers, so
  // any legal change is publishable on a default cluster.
  uint64_t chunk_bytes = 900 * 1024;
  // Any further librdkafka producer setting (security.protocol, sasl.*, ...).
  std::map<std::string, std::string> properties;
  // Topic configurations set on the change topics the sidecar creates
  // (not a config key: the server fills it in, see ChangeTopicConfigs).
  std::map<std::string, std::string> topic_configs;
  // Scale-out (not a config key: the server sets it in cluster mode): the
  // cluster incarnation of a local table id, 0 = unknown. Every message of
  // an Entities event gets it as the st-ti header (events/chunk.h), so that
  // a re-created table's readers can skip its predecessor's records. Called
  // on the publishing thread: must be thread-safe and cheap.
  std::function<uint64_t(uint32_t local_table_id)> table_incarnation;
  // Scale-out (not a config key: the server sets it in cluster mode): this
  // member's id followed by '/'. Every member writes a table event when it
  // applies a table record of the cluster topic, with the record's request
  // id (TableEventStamp); only the event whose request id starts with this
  // prefix, the one of the member that wrote the record, is published, so
  // the change topic gets each table change once. Other table events stay
  // in the local change log only. "" = every table event is published.
  std::string table_events_of;
  // Embedded Kafka (not a config key: the server sets it): the mock cluster
  // lives in this process and starts empty, so what the last one held and
  // no consumer had applied yet would be gone. Publishing starts after at
  // most this LSN: the lowest every registered derived table has applied
  // (Watermarks::LowestApplied). UINT64_MAX = from the publish watermark.
  uint64_t republish_after = UINT64_MAX;
  // A real Kafka (not a config key: the server sets it outside scale-out,
  // for one change topic without {table}): a change topic that starts empty
  // (created by the sidecar, or by an operator, as a restore does:
  // docs/operations.md, "Backup and restore") is like the embedded mock at
  // start. Called once, on the publishing thread, only when the topic is
  // found empty before anything of this process went to it: publishing
  // starts after at most the LSN it returns (UINT64_MAX: from the publish
  // watermark), so that changes the old topic had and a derived table had
  // not applied reach its workers. Before session 41 a restore to a new
  // topic started after the backup's publish watermark, and those changes
  // never reached the derived tables; until session 45 it was the lowest
  // watermark alone, computed at every start (so from the log's start when
  // a partition never carried a record, and nothing when no worker had
  // registered yet). Empty: never.
  std::function<uint64_t()> republish_to_empty_topic_after;
  // Not a config key: the server sets it outside scale-out (where members
  // share the topic, each with its own LSNs). An existing change topic on a
  // real Kafka is published to only once its newest message carries an LSN
  // at most the change log's last at start (topic_tail.h says why).
  bool check_topic_tail = false;
};

// What a change topic the sidecar creates must keep. A scale-out service
// restores shards from its change topic (docs/scale-out.md, "What Kafka must
// keep"): it must never be compacted and never expire, so the broker's
// defaults (delete after 7 days) are overridden. Without scale-out the
// broker's defaults stand: the topic is a feed, the change log is the outbox.
inline std::map<std::string, std::string> ChangeTopicConfigs(bool scale_out) {
  if (!scale_out) return {};
  return {{"cleanup.policy", "delete"}, {"retention.ms", "-1"}, {"retention.bytes", "-1"}};
}

}  // namespace sidetable::changestream
