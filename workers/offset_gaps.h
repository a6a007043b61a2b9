// Messages Kafka removed before this consumer group read them.
//
// The worker's consumer starts each partition at its committed offset. When
// Kafka no longer holds that offset (the topic's retention removed it while
// the workers were stopped or behind; on the embedded mock, past its
// 100,000 messages per partition), librdkafka resets to the oldest offset
// it still has (`auto.offset.reset=earliest`) and only logs a warning: the
// changes in between never reach the derived tables, and the worker went on
// reporting "ok", lag 0 and applied watermarks past them.
//
// The change topic is neither compacted nor transactional, and the
// sidecar's idempotent producer leaves no holes: a partition's offsets are
// consecutive. So the first message delivered past the expected next offset
// (the committed one after an assignment, one past the last delivered one
// after that) marks the offsets in between as lost.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

#include "workers/progress.h"

namespace sidetable::workers {

class OffsetGaps {
 public:
  // [from, to): offsets of `tp` never delivered.
  struct Gap {
    TopicPartition tp;
    int64_t from = 0;
    int64_t to = 0;
  };

  // After an assignment: the partition is read from `committed`. A negative
  // offset (nothing committed: a new group starts at the oldest retained
  // message, docs/workers.md) leaves the start unchecked.
  void Expect(const TopicPartition& tp, int64_t committed);
  // After a revocation: the next owner checks from its own committed offset.
  void Forget(const TopicPartition& tp) { next_.erase(tp); }
  void Clear() { next_.clear(); }
  // Each message delivered, in the order of its partition. A message below
  // the expected offset (delivered again) is no gap.
  std::optional<Gap> Observe(const TopicPartition& tp, int64_t offset);

 private:
  std::map<TopicPartition, int64_t> next_;
};

}  // namespace sidetable::workers
