// The measured workloads, each written once against Store. A workload does
// its own setup outside the timed part only where its comment says so.
//
// Thread safety: each call owns the Store for its duration.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "bench/stores.h"

namespace sidetable::bench {

struct Sample {
  double seconds = 0;  // wall time of the timed part
  double ops = 0;      // entities written or read (1 for a delete)
  double p50_us = 0;   // per-call latency, where recorded (0 otherwise)
  double p99_us = 0;
  std::string note;    // what the store reported afterwards (group commits)
  double rate() const { return seconds > 0 ? ops / seconds : 0; }
};

// n single-entity inserts from one thread, spread over 1,000 partitions.
Sample SingleInserts(Store& s, int table, size_t n);
// n single-entity inserts in total from `threads` threads, each thread on
// its own partition; the threads start together.
Sample ThreadedInserts(Store& s, int table, size_t n, int threads);
// `batches` EGTs of `per_batch` inserts, batch b in partition b, one thread.
// Latency is per batch.
Sample BatchInserts(Store& s, int table, size_t batches, size_t per_batch);
// n random point reads (uniform, seeded) of entities BatchInserts wrote.
Sample RandomReads(Store& s, int table, size_t batches, size_t per_batch, size_t n);
// One DeleteTable (raw: its range tombstone).
Sample DropTable(Store& s, int table);

}  // namespace sidetable::bench
