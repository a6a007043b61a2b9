#include "tools/replay/kafka_decode_ahead.h"

#include <string_view>

namespace sidetable::replay::kafka {

uint8_t DecodeBatch::Settle(size_t i) {
  std::atomic<uint8_t>& state = slots[i].state;
  uint8_t s = DecodeSlot::kPending;
  if (state.compare_exchange_strong(s, DecodeSlot::kTaken, std::memory_order_acquire)) {
    return DecodeSlot::kTaken;
  }
  // The decoder is on it: one decode, a few microseconds, unless the thread
  // lost its core; then give the core up rather than spin through a slice.
  for (int spins = 0; (s = state.load(std::memory_order_acquire)) == DecodeSlot::kDecoding;
       spins++) {
    if (spins > 256) std::this_thread::yield();
  }
  return s;
}

// Most messages are whole events, and reading a message's headers (which
// librdkafka parses into a list allocated per message) cost about a tenth
// of the source's time. So a message is first decoded as it is, and its
// headers are read only when that does not settle it. Without a chunk
// header a message is its own event either way. A chunk (events/chunk.h)
// is a piece of an event's JSON: the first piece is a prefix, so never
// whole JSON; the last is a suffix, which ends by closing the event's
// object, so either is unbalanced or, read from inside a string of the
// event, has for keys only the JSON punctuation between the event's
// strings, never "schema". A middle piece could be exactly an entity
// image, and an image whose properties are named like an event's fields
// decodes as an event, but only as a ShardClaimed one: every other kind
// needs an "ops" array, and no property value is an array. So a decoded
// claim, like a failure, goes the whole way: headers first, on the source's
// thread (PartitionReader::Take).
uint8_t DecodeWhole(const rd_kafka_message_t* m, events::EventDecoder* decoder,
                    events::Event* event) {
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR || m->payload == nullptr) return DecodeSlot::kUnsettled;
  const std::string_view value(static_cast<const char*>(m->payload), m->len);
  if (!decoder->Decode(value, event).ok()) return DecodeSlot::kUnsettled;
  if (event->record.kind == ChangeKind::kShardClaimed) return DecodeSlot::kUnsettled;
  return DecodeSlot::kWhole;
}

DecodeAhead::DecodeAhead() : thread_([this] { Run(); }) {}

DecodeAhead::~DecodeAhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    queue_.clear();
  }
  cv_.notify_one();
  thread_.join();
}

void DecodeAhead::Submit(std::shared_ptr<DecodeBatch> batch) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(batch));
  }
  cv_.notify_one();
}

void DecodeAhead::Run() {
  events::EventDecoder decoder;  // its own parser and buffer
  for (;;) {
    std::shared_ptr<DecodeBatch> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_.load(std::memory_order_relaxed) || !queue_.empty(); });
      if (stop_.load(std::memory_order_relaxed)) return;
      batch = std::move(queue_.front());
      queue_.pop_front();
    }
    for (size_t i = 0; i < batch->messages.size(); i++) {
      DecodeSlot& slot = batch->slots[i];
      uint8_t s = DecodeSlot::kPending;
      // Relaxed: the slot's event is written only after the claim, and
      // published by the release store below.
      if (!slot.state.compare_exchange_strong(s, DecodeSlot::kDecoding,
                                              std::memory_order_relaxed)) {
        continue;  // the source's thread took it
      }
      const uint8_t settled = DecodeWhole(batch->messages[i], &decoder, &slot.event);
      slot.state.store(settled, std::memory_order_release);
      // Stop between messages, not between batches: a source closed in the
      // middle of a topic does not wait for its batches to be decoded.
      if (stop_.load(std::memory_order_relaxed)) return;
    }
  }
}

}  // namespace sidetable::replay::kafka
