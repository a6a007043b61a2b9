// BrokerLiveness: is Kafka answering, from librdkafka's statistics.
//
// librdkafka reports a broker "UP" while its TCP connection is open. A broker
// that stops answering without closing the connection (its process paused,
// a host frozen, a half-open link) stays "UP" until socket.timeout.ms (60 s)
// times a request out, so "some broker is UP" alone kept /health at
// `kafka_reachable: true` for a minute of silence. A consumer always has a
// request outstanding (a fetch that the broker holds for at most
// fetch.wait.max.ms, 500 ms, a heartbeat every session_timeout/5), so a
// broker that has requests waiting (`waitresp_cnt` > 0) and has sent no
// response (`rx` unchanged) for `stall` is not answering.
//
// Reachable: at least one real broker (nodeid >= 0) is UP and answering; a
// report with only the bootstrap entries (no broker learned yet) is not.
//
// Thread safety: none; the statistics callback is its only caller.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string_view>

namespace sidetable::workers {

class BrokerLiveness {
 public:
  using Clock = std::chrono::steady_clock;

  explicit BrokerLiveness(std::chrono::milliseconds stall) : stall_(stall) {}

  // One broker's line of one statistics report.
  void Observe(int64_t nodeid, std::string_view state, int64_t waitresp_cnt, int64_t rx,
               Clock::time_point now);
  // After every broker of a report: the verdict, and brokers not seen in it
  // are forgotten.
  bool EndReport();

 private:
  struct Broker {
    int64_t rx = -1;
    Clock::time_point rx_moved{};
    bool up = false;
    bool waiting = false;
    Clock::time_point seen{};
  };
  std::chrono::milliseconds stall_;
  std::map<int64_t, Broker> brokers_;
  Clock::time_point report_{};
};

}  // namespace sidetable::workers
