// FirstUnappliedAfter: where a restarted embedded Kafka must get the change
// log again from, record by record rather than per partition.
//
// Watermarks::LowestApplied() is per partition: a Kafka partition that never
// carried a record of a source (few PartitionKeys, twelve partitions) keeps
// the LSN 0 its worker registered, and held every restart at the log's
// start, so each one published up to half of kafka.max_backlog_events again
// (and said changes "a derived table has not applied" were left out) though
// every derived table had applied everything (session 44, from outside).
// This reads the log on from that point and stops at the first record that
// some registered derived table of its table has not applied, judged on the
// partition the publisher put it on (read_session.cc does the same for a
// token).
//
// Thread safety: reads the engine and the watermarks, both thread-safe; run
// at start-up, before the publisher starts.
#pragma once

#include <cstdint>

#include "engine/engine.h"
#include "sidecar/watermarks.h"

namespace sidetable::sidecar {

// The highest LSN n >= `lowest` such that every record up to n is applied by
// every registered derived table of its table (records of other tables need
// nobody). Stops at a record trimmed from the log (it cannot be judged), at
// a read error, and after `max_records` records (the start-up waits for
// this scan: the server passes half of kafka.max_backlog_events, what the
// publisher would send again at most), returning what it knew by then:
// publishing again from there is never short of what a worker needs.
uint64_t FirstUnappliedAfter(const Engine& engine, const Watermarks& watermarks, uint64_t lowest,
                             uint64_t max_records);

}  // namespace sidetable::sidecar
