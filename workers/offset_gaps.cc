#include "workers/offset_gaps.h"

namespace sidetable::workers {

void OffsetGaps::Expect(const TopicPartition& tp, int64_t committed) {
  if (committed < 0) {
    next_.erase(tp);
    return;
  }
  next_[tp] = committed;
}

std::optional<OffsetGaps::Gap> OffsetGaps::Observe(const TopicPartition& tp, int64_t offset) {
  auto [it, fresh] = next_.try_emplace(tp, offset);
  std::optional<Gap> gap;
  if (!fresh && offset > it->second) gap = Gap{tp, it->second, offset};
  it->second = offset + 1;
  return gap;
}

}  // namespace sidetable::workers
