// Decoding change events ahead of the Kafka source's merge, on a thread of
// its own. Internal to tools/replay.
//
// The source's thread does everything else in order (chunk runs, fencing,
// resends, the merge by LSN, the caller's own work on the records); decoding
// the JSON of each event into a ChangeRecord was about two thirds of it. Each
// batch of messages a partition takes off its queue becomes a DecodeBatch:
// one slot per message, which the decoder thread fills in order while the
// source's thread works on the other partitions' heads.
//
// Neither thread waits for the other to start on a message: each claims a
// slot (kPending -> kDecoding on the decoder, kPending -> kTaken on the
// source's thread) before touching it, so the source's thread decodes
// itself any message the decoder has not reached, and waits only for one it
// is in the middle of. A slot settled by the decoder (kWhole, kUnsettled) is
// read by the source's thread after an acquire load; the decoder never
// touches a slot it did not claim, and never a message's headers (librdkafka
// parses those lazily, into the message).
//
// Thread safety: Submit and the source's side of DecodeBatch from the
// source's thread only; the decoder's side from the decoder thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "events/event.h"

namespace sidetable::replay::kafka {

struct DecodeSlot {
  enum State : uint8_t {
    kPending,    // nobody has started on it
    kDecoding,   // the decoder is on it
    kTaken,      // the source's thread took it to do itself
    kWhole,      // decoded as a whole event that needs no headers (`event`)
    kUnsettled,  // needs the source's thread: headers, chunks, errors
  };
  std::atomic<uint8_t> state{kPending};
  // The decode target: the storage of a recycled record when there was one.
  events::Event event;
};

// One batch of a partition's messages, shared by the source's thread (which
// owns the messages) and the decoder.
struct DecodeBatch {
  explicit DecodeBatch(std::vector<rd_kafka_message_t*> m)
      : messages(std::move(m)), slots(std::make_unique<DecodeSlot[]>(messages.size())) {}
  const std::vector<rd_kafka_message_t*> messages;
  std::unique_ptr<DecodeSlot[]> slots;

  // The source's thread, before it reads or frees message i: takes the slot
  // if nobody has (returns kTaken), else waits for the decoder to finish it
  // (returns kWhole or kUnsettled). Acquire: what the decoder wrote is seen.
  uint8_t Settle(size_t i);
};

// Decodes a message as it is (no headers) into *slot->event: kWhole when it
// is an event no chunk could be (not a ShardClaimed one: kafka_partition.cc,
// DecodedWhole), kUnsettled otherwise.
uint8_t DecodeWhole(const rd_kafka_message_t* m, events::EventDecoder* decoder,
                    events::Event* event);

class DecodeAhead {
 public:
  DecodeAhead();
  ~DecodeAhead();  // stops after the message in hand; batches left are the source's
  DecodeAhead(const DecodeAhead&) = delete;
  DecodeAhead& operator=(const DecodeAhead&) = delete;

  void Submit(std::shared_ptr<DecodeBatch> batch);

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<DecodeBatch>> queue_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace sidetable::replay::kafka
