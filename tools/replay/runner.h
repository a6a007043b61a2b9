// RunReplay: the loop every replay command shares.
//
// Reads the source batch by batch into a sink; saves a checkpoint every few
// seconds and when it stops early (interrupted by a signal, or after
// `stop_after` records); draws progress. Stopping happens between batches,
// after the sink took the whole batch, so the checkpoint always matches
// what the sink has done.
//
// Thread safety: runs on the calling thread; `interrupted` may be set from a
// signal handler.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "engine/change_record.h"
#include "engine/status.h"
#include "tools/replay/progress.h"
#include "tools/replay/source.h"

namespace sidetable::replay {

struct RunControl {
  // Records per Next. Small, so that the records a batch holds are still in
  // the CPU's caches when they come back through Recycle and the Kafka
  // source decodes the next events into them: 1,000 records of a typical
  // event (~2.5 KB of heap each) outgrow a core's L2. With 100 the Kafka
  // source's pool walk fell from 6.5% to 1.3% of its profile and its ratio
  // to a bare consumer rose from a median of 0.42 to 0.47 over 15 repeats
  // (docs/performance.md, "Replay and the change log", session 37); the
  // sinks work a record at a time, and the change-log source pages on its
  // own (ChangeLogSourceOptions::page_records).
  size_t batch = 100;
  uint64_t stop_after = 0;  // records to read in this run; 0 = no limit
  const std::atomic<bool>* interrupted = nullptr;
  std::chrono::milliseconds checkpoint_every{2000};
  Progress* progress = nullptr;
};

enum class RunEnd : uint8_t {
  kComplete,  // the source's range is exhausted, or the sink is done
  kStopped,   // interrupted or stop_after: a checkpoint was saved
};

// Takes a batch of records; sets *done when it needs no more (e.g. a
// point-in-time rebuild read past its cut).
using Sink = std::function<Status(std::vector<ChangeRecord>& records, bool* done)>;
// Saves a checkpoint at `position` after `events` records in all.
using Saver = std::function<Status(const Position& position, uint64_t events)>;

// `events` counts records across runs: pass the checkpoint's count in, get
// the new total out.
Result<RunEnd> RunReplay(RecordSource* source, const Sink& sink, const Saver& save,
                         const RunControl& control, uint64_t* events);

}  // namespace sidetable::replay
