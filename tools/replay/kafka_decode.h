// Decoding change events ahead of the Kafka source's merge, on a second
// thread. Internal to tools/replay.
//
// The merge (kafka_source.cc) is one thread: it takes every partition's
// head in LSN order. Parsing the JSON of each event is most of its work, and
// each event parses on its own, so a worker parses the messages of each
// fetched batch in order while the merge runs. The merge never waits for a
// message the worker has not reached: it claims and parses that one itself
// (its turn comes in LSN order, across partitions, not in the worker's
// order), so both threads parse and neither idles while the other works.
// It waits only for a message the worker is parsing at that moment.
//
// Only whole events travel this way: a chunk of a larger event, an error, a
// tombstone or anything else the reader must look at first stays with the
// reader (Slot kSelf), which decides as before; the reader's own logic
// (positions, resends, the time filter, errors) is unchanged.
//
// Thread safety: a DecodedBatch is shared by the reader's thread and the
// worker through its slots' states; everything else about it belongs to the
// reader. DecodeAhead's Post() is for one thread (the source's).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/status.h"
#include "events/event.h"

namespace sidetable::replay::kafka {

// The messages of one fetched batch of one partition, each slot decoded by
// whichever thread gets to it first.
class DecodedBatch {
 public:
  explicit DecodedBatch(size_t n);
  DecodedBatch(const DecodedBatch&) = delete;
  DecodedBatch& operator=(const DecodedBatch&) = delete;

  // Reader, before Post(): slot i holds a whole event, `json` (which must
  // stay valid until Settle(i) or Get(i) returned).
  void SetEvent(size_t i, std::string_view json);
  bool is_event(size_t i) const { return json_[i].data() != nullptr; }

  // Reader: the decoding of slot i's event (an is_event slot), with
  // `decoder` if the worker has not reached it, else the worker's, waited
  // for if it is under way. Once per slot.
  Status Get(size_t i, events::EventDecoder* decoder, events::Event* out);
  // Reader: the worker is done with slot i (claims it if not reached), so
  // its message may be destroyed.
  void Settle(size_t i);

  // Worker: decodes every slot it claims, in order.
  void DecodeAll(events::EventDecoder* decoder);

  size_t size() const { return json_.size(); }

 private:
  enum State : uint32_t { kSelf = 0, kPending = 1, kClaimed = 2, kDone = 3 };
  void WaitDone(size_t i);

  std::vector<std::string_view> json_;
  std::unique_ptr<std::atomic<uint32_t>[]> state_;
  std::vector<events::Event> events_;  // kDone slots: the worker's result
  std::vector<Status> status_;
};

// The worker thread. Batches are decoded in the order posted.
class DecodeAhead {
 public:
  DecodeAhead();
  ~DecodeAhead();  // waits for the batch under way; the rest are dropped
  DecodeAhead(const DecodeAhead&) = delete;
  DecodeAhead& operator=(const DecodeAhead&) = delete;

  void Post(std::shared_ptr<DecodedBatch> batch);

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<DecodedBatch>> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace sidetable::replay::kafka
