// RepublishAfter: where a change topic that starts empty must get the change
// log again from: a restarted embedded Kafka (the mock starts empty) or a new
// topic on a real Kafka (a restore); what the old one held and no worker had
// applied would otherwise be gone.
//
// - Derived tables registered: from the lowest LSN they reported
//   (Watermarks::LowestApplied), then record by record. LowestApplied is per
//   partition: a Kafka partition that never carried a record of a source
//   (few PartitionKeys, twelve partitions) keeps the LSN 0 its worker
//   registered, and held every restart at the log's start, so each one
//   published up to half of kafka.max_backlog_events again (and said changes
//   "a derived table has not applied" were left out) though every derived
//   table had applied everything (session 44, from outside). The log is read
//   on from that point to the first record that some registered derived
//   table of its table has not applied, judged on the partition the
//   publisher put it on (read_session.cc does the same for a token).
// - None ever registered (no worker has run yet): none read anything, so the
//   log from its first record (the publisher bounds it to half the backlog).
//   Until session 44 nothing went again, and a restart before the first
//   worker lost everything the old mock held.
// - Registered once, none now (every derived table deleted or forgotten):
//   nobody to publish for, UINT64_MAX.
//
// Thread safety: reads the engine and the watermarks, both thread-safe. The
// embedded Kafka's point is found at start-up, before the publisher starts;
// a real Kafka's on the publishing thread, only when its topic is found
// empty (KafkaOptions::republish_to_empty_topic_after), while writes go on.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/engine.h"
#include "sidecar/watermarks.h"

namespace sidetable::sidecar {

// The LSN after which publishing starts again (UINT64_MAX: from the publish
// watermark). The record-by-record read stops at a record trimmed from the
// log (it cannot be judged), at a read error, and after `max_records`
// records (an embedded Kafka's start waits for it; the server passes half of
// kafka.max_backlog_events, what the publisher would send again at most),
// returning what it knew by then: publishing again from there is never
// short of what a worker needs. `where` names the topic in the log line of
// the never-registered case ("the embedded Kafka").
uint64_t RepublishAfter(const Engine& engine, const Watermarks& watermarks, uint64_t max_records,
                        std::string_view where);

}  // namespace sidetable::sidecar
