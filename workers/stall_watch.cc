#include "workers/stall_watch.h"

namespace sidetable::workers {

void StallWatch::Observe(const TopicPartition& tp, int64_t app_offset, int64_t consumer_lag,
                         Clock::time_point now) {
  auto [it, fresh] = parts_.try_emplace(tp, State{app_offset, consumer_lag, now});
  State& s = it->second;
  if (!fresh && (app_offset != s.app_offset || consumer_lag <= 0)) s.since = now;
  s.app_offset = app_offset;
  s.lag = consumer_lag;
}

std::vector<StallWatch::Stall> StallWatch::Stalled(Clock::time_point now,
                                                   std::chrono::seconds after) const {
  std::vector<Stall> out;
  for (const auto& [tp, s] : parts_) {
    if (s.lag <= 0 || now - s.since <= after) continue;
    out.push_back({tp, s.lag, std::chrono::duration<double>(now - s.since).count()});
  }
  return out;
}

}  // namespace sidetable::workers
