// TopicSetup: finds or creates the change topics on a thread of its own, so
// that the publishing loop never waits on Kafka's metadata or admin API (a
// broker outage made those waits 5-10 s each, during which the publisher
// updated nothing).
//
// Ready(topic) answers at once: true once the topic is known to exist;
// otherwise it queues the topic for set-up and returns false, and the caller
// tries again later. Set-up retries with a backoff (up to 5 s) until it
// succeeds; last_error() says what the latest attempt met.
//
// Thread safety: Ready() and last_error() from any thread. Stop() (also run
// by the destructor) returns within about 250 ms: every wait is short.
#pragma once

#include <librdkafka/rdkafka.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "engine/status.h"

namespace sidetable::kafka {
class EmbeddedKafka;
}

namespace sidetable::changestream {

class TopicSetup {
 public:
  // `embedded` (may be null): topics are created on the in-process mock;
  // otherwise looked up, and created through the admin API when absent.
  // `configs` are set on every topic it creates (ChangeTopicConfigs).
  TopicSetup(rd_kafka_t* rk, kafka::EmbeddedKafka* embedded, int partitions, int replication_factor,
             std::map<std::string, std::string> configs = {});
  ~TopicSetup();

  bool Ready(const std::string& topic);
  std::string last_error() const;
  void Stop();

 private:
  void Run();
  Status SetUp(const std::string& topic);
  // True / false when the metadata says so; an error when Kafka did not answer.
  Result<bool> Exists(const std::string& topic);
  Status Create(const std::string& topic);
  bool Stopping();

  rd_kafka_t* const rk_;
  kafka::EmbeddedKafka* const embedded_;
  const int partitions_, replication_factor_;
  const std::map<std::string, std::string> configs_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> ready_, queued_;
  std::deque<std::string> todo_;
  std::string last_error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sidetable::changestream
