#include "tools/replay/runner.h"

#include <algorithm>

namespace sidetable::replay {

Result<RunEnd> RunReplay(RecordSource* source, const Sink& sink, const Saver& save,
                         const RunControl& control, uint64_t* events) {
  using Clock = std::chrono::steady_clock;
  auto last_save = Clock::now();
  uint64_t this_run = 0;
  std::vector<ChangeRecord> batch;
  for (;;) {
    const bool stop_requested =
        (control.interrupted && control.interrupted->load(std::memory_order_relaxed)) ||
        (control.stop_after != 0 && this_run >= control.stop_after);
    if (stop_requested) {
      if (save) ST_RETURN_IF_ERROR(save(source->position(), *events));
      return RunEnd::kStopped;
    }
    size_t want = control.batch;
    if (control.stop_after != 0) want = std::min<uint64_t>(want, control.stop_after - this_run);
    source->Recycle(&batch);
    bool end = false;
    ST_RETURN_IF_ERROR(source->Next(want, &batch, &end));
    bool done = false;
    if (!batch.empty()) {
      ST_RETURN_IF_ERROR(sink(batch, &done));
      this_run += batch.size();
      *events += batch.size();
    }
    if (control.progress) control.progress->Update(this_run, source->remaining());
    if (end || done) return RunEnd::kComplete;
    if (save && Clock::now() - last_save >= control.checkpoint_every) {
      ST_RETURN_IF_ERROR(save(source->position(), *events));
      last_save = Clock::now();
    }
  }
}

}  // namespace sidetable::replay
