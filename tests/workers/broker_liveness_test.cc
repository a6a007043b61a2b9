// BrokerLiveness (workers/broker_liveness.h): a broker that keeps its
// connection open but stops answering is unreachable after the stall time;
// one that answers, or has nothing to answer, is not.
#include "workers/broker_liveness.h"

#include <gtest/gtest.h>

namespace sidetable::workers {
namespace {

using std::chrono::milliseconds;
using T = BrokerLiveness::Clock::time_point;

TEST(BrokerLivenessTest, ASilentBrokerWithRequestsWaitingIsUnreachableAfterTheStall) {
  BrokerLiveness l(milliseconds(5000));
  const T t0{};
  int64_t rx = 100;
  // Answering: rx grows every second.
  for (int s = 0; s < 10; s++) {
    l.Observe(1, "UP", 1, rx += 3, t0 + milliseconds(1000 * s));
    EXPECT_TRUE(l.EndReport()) << s;
  }
  // Paused at 9 s: still UP, a fetch waiting, rx frozen.
  for (int s = 10; s < 14; s++) {
    l.Observe(1, "UP", 2, rx, t0 + milliseconds(1000 * s));
    EXPECT_TRUE(l.EndReport()) << "silent for less than the stall at " << s;
  }
  l.Observe(1, "UP", 2, rx, t0 + milliseconds(14000));
  EXPECT_FALSE(l.EndReport()) << "silent for 5 s with requests waiting";
  // It answers again.
  l.Observe(1, "UP", 0, rx + 1, t0 + milliseconds(15000));
  EXPECT_TRUE(l.EndReport());
}

TEST(BrokerLivenessTest, AnIdleBrokerOrABootstrapEntryDecidesNothingWrongly) {
  BrokerLiveness l(milliseconds(5000));
  const T t0{};
  // Nothing waiting on it: silence is not a stall.
  l.Observe(2, "UP", 0, 7, t0);
  EXPECT_TRUE(l.EndReport());
  l.Observe(2, "UP", 0, 7, t0 + milliseconds(60000));
  EXPECT_TRUE(l.EndReport());
  // Only bootstrap entries (nodeid -1): no broker known, as before.
  BrokerLiveness b(milliseconds(5000));
  b.Observe(-1, "UP", 0, 0, t0);
  EXPECT_FALSE(b.EndReport());
  // A broker that is DOWN is not reachable, however fresh.
  BrokerLiveness d(milliseconds(5000));
  d.Observe(1, "DOWN", 0, 0, t0);
  EXPECT_FALSE(d.EndReport());
}

TEST(BrokerLivenessTest, OneAnsweringBrokerOfSeveralIsEnoughAndGoneBrokersAreForgotten) {
  BrokerLiveness l(milliseconds(5000));
  const T t0{};
  l.Observe(1, "UP", 1, 10, t0);
  l.Observe(2, "UP", 1, 10, t0);
  EXPECT_TRUE(l.EndReport());
  // Broker 1 stalls, broker 2 answers.
  l.Observe(1, "UP", 1, 10, t0 + milliseconds(6000));
  l.Observe(2, "UP", 1, 11, t0 + milliseconds(6000));
  EXPECT_TRUE(l.EndReport());
  // Broker 2 leaves the metadata: only the stalled one is left.
  l.Observe(1, "UP", 1, 10, t0 + milliseconds(7000));
  EXPECT_FALSE(l.EndReport());
}

}  // namespace
}  // namespace sidetable::workers
