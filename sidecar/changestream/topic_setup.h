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
// With a TailCheck, a topic that already exists is ready only once its
// newest message carries an LSN at most the check's ceiling (topic_tail.h
// says why); a topic ahead of it is refused (Refusal(), retried every 30 s:
// an operator may delete the topic), never published to.
//
// Thread safety: Ready() and last_error() from any thread. Stop() (also run
// by the destructor) returns within about 250 ms: every wait is short.
#pragma once

#include <librdkafka/rdkafka.h>

#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "engine/status.h"

namespace sidetable::kafka {
class EmbeddedKafka;
}

namespace sidetable::changestream {

// An existing topic must not hold LSNs above `ceiling` (the change log's
// last LSN when the sidecar started); read with a consumer of its own.
struct TailCheck {
  uint64_t ceiling = 0;
  std::string bootstrap;
  std::map<std::string, std::string> properties;  // kafka.properties
  std::string group;                              // lets the reader poll; never joined
};

class TopicSetup {
 public:
  // `embedded` (may be null): topics are created on the in-process mock;
  // otherwise looked up, and created through the admin API when absent.
  // `configs` are set on every topic it creates (ChangeTopicConfigs).
  // `check` (may be null): existing topics are checked (above).
  TopicSetup(rd_kafka_t* rk, kafka::EmbeddedKafka* embedded, int partitions, int replication_factor,
             std::map<std::string, std::string> configs = {},
             std::unique_ptr<TailCheck> check = nullptr);
  ~TopicSetup();

  bool Ready(const std::string& topic);
  // True once for a ready topic on a real Kafka that held no message when
  // it was set up (created now, or found empty): a new history starts there.
  bool TakeStartedEmpty(const std::string& topic);
  std::string last_error() const;
  // Why `topic` is refused ("" when it is not): it holds LSNs above the ceiling.
  std::string Refusal(const std::string& topic) const;
  void Stop();

 private:
  void Run();
  // `refused` is set when the topic is ahead of the change log (CheckTail).
  // `empty` is set when the topic holds no message (created now, or
  // found so by the tail check).
  Status SetUp(const std::string& topic, bool* refused, bool* empty);
  // OK when the existing `topic` holds no LSN above the ceiling; the
  // refusal when it does (`refused` set), or why it could not be read.
  Status CheckTail(const std::string& topic, int partitions, bool* refused, bool* empty);
  // The topic's partition count from the metadata (0: it does not exist);
  // an error when Kafka did not answer.
  Result<int> Partitions(const std::string& topic);
  Status Create(const std::string& topic);
  bool Stopping();

  rd_kafka_t* const rk_;
  kafka::EmbeddedKafka* const embedded_;
  const int partitions_, replication_factor_;
  const std::map<std::string, std::string> configs_;
  const std::unique_ptr<TailCheck> check_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> ready_, queued_;
  std::set<std::string> started_empty_;
  std::map<std::string, std::string> refused_;  // topic -> why
  std::deque<std::string> todo_;
  std::string last_error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sidetable::changestream
