#include "workers/broker_liveness.h"

namespace sidetable::workers {

void BrokerLiveness::Observe(int64_t nodeid, std::string_view state, int64_t waitresp_cnt,
                             int64_t rx, Clock::time_point now) {
  if (nodeid < 0) return;  // the bootstrap and internal entries
  report_ = now;
  Broker& b = brokers_[nodeid];
  // A new connection or a response: the broker answered. A reconnect resets
  // nothing in rx (it is a total), so equal means silent.
  if (rx != b.rx || state != "UP") b.rx_moved = now;
  b.rx = rx;
  b.up = state == "UP";
  b.waiting = waitresp_cnt > 0;
  b.seen = now;
}

bool BrokerLiveness::EndReport() {
  bool answering = false;
  for (auto it = brokers_.begin(); it != brokers_.end();) {
    if (it->second.seen != report_) {
      it = brokers_.erase(it);
      continue;
    }
    const Broker& b = it->second;
    if (b.up && !(b.waiting && report_ - b.rx_moved >= stall_)) answering = true;
    ++it;
  }
  return answering;
}

}  // namespace sidetable::workers
