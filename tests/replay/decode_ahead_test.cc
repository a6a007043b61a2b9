// The Kafka source's decoder thread (tools/replay/kafka_decode_ahead.h)
// against the source's thread, without Kafka: messages are plain
// rd_kafka_message_t values the test fills in. Whatever the interleaving
// (the source's thread faster than the decoder, slower, or in between),
// every message is settled exactly once, by one thread, into what a fresh
// decode gives; claims and undecodable messages are left to the source's
// thread; a decoder stopped with batches queued lets go at once.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "events/event.h"
#include "tools/replay/kafka_decode_ahead.h"

namespace sidetable::replay::kafka {
namespace {

std::string EventText(uint64_t lsn) {
  ChangeRecord r;
  r.lsn = lsn;
  r.commit_time = kUnixEpochTicks + static_cast<int64_t>(lsn) * kTicksPerSecond;
  r.table = "T";
  r.table_id = 1;
  r.partition_key = "p" + std::to_string(lsn % 7);
  if (lsn % 3 == 0) r.client_request_id = "req-" + std::to_string(lsn);
  for (uint64_t k = 0; k <= lsn % 3; k++) {
    ChangeOp op;
    op.row_key = "r" + std::to_string(lsn) + "-" + std::to_string(k);
    op.kind = OpKind::kInsert;
    op.version = lsn;
    op.etag = "W/\"" + std::to_string(lsn) + "\"";
    Entity e;
    e.partition_key = r.partition_key;
    e.row_key = op.row_key;
    e.timestamp = r.commit_time;
    e.etag = op.etag;
    e.Set("pad", Value::String(std::string(lsn % 200, 'x')));
    e.Set("n", Value::Int64(static_cast<int64_t>(lsn)));
    op.after = std::move(e);
    r.ops.push_back(std::move(op));
  }
  return events::EncodeEvent(r, "s");
}

// Messages of every kind the decoder meets: whole events, a claim (left to
// the source's thread, which reads its headers), text that is no event, a
// tombstone and an error.
struct Topic {
  std::vector<std::string> texts;
  std::vector<rd_kafka_message_t> messages;
  std::vector<uint8_t> want_state;  // kWhole or kUnsettled
  explicit Topic(size_t n) : texts(n), messages(n), want_state(n, DecodeSlot::kWhole) {
    for (size_t i = 0; i < n; i++) {
      if (i % 97 == 13) {
        texts[i] =
            R"({"schema":1,"kind":"ShardClaimed","source":"x","epoch":3,"shard":0,"time":"2026-11-30T10:00:00Z"})";
        want_state[i] = DecodeSlot::kUnsettled;
      } else if (i % 89 == 5) {
        texts[i] = "{\"schema\":1,\"lsn\":";  // a chunk's prefix
        want_state[i] = DecodeSlot::kUnsettled;
      } else {
        texts[i] = EventText(i + 1);
      }
    }
    for (size_t i = 0; i < n; i++) {
      rd_kafka_message_t& m = messages[i];
      m = rd_kafka_message_t{};
      m.offset = static_cast<int64_t>(i);
      m.payload = texts[i].data();
      m.len = texts[i].size();
      if (i % 211 == 7) {
        m.payload = nullptr;  // a tombstone
        m.len = 0;
        want_state[i] = DecodeSlot::kUnsettled;
      } else if (i % 223 == 9) {
        m.err = RD_KAFKA_RESP_ERR__PARTITION_EOF;
        want_state[i] = DecodeSlot::kUnsettled;
      }
    }
  }
};

// The source's side: settles each message in order, decodes the ones it
// took, and checks each against a fresh decode. `pause` runs between
// messages, to make the source's thread slower or faster than the decoder.
void ReadAll(const Topic& topic, DecodeAhead* ahead, size_t batch_size,
             const std::function<void()>& pause, size_t* taken_here) {
  events::EventDecoder decoder;
  *taken_here = 0;
  for (size_t start = 0; start < topic.messages.size(); start += batch_size) {
    const size_t end = std::min(start + batch_size, topic.messages.size());
    std::vector<rd_kafka_message_t*> ms;
    for (size_t i = start; i < end; i++)
      ms.push_back(const_cast<rd_kafka_message_t*>(&topic.messages[i]));
    auto batch = std::make_shared<DecodeBatch>(std::move(ms));
    if (ahead) ahead->Submit(batch);
    for (size_t i = 0; i < end - start; i++) {
      pause();
      uint8_t state = batch->Settle(i);
      ASSERT_NE(state, DecodeSlot::kPending);
      ASSERT_NE(state, DecodeSlot::kDecoding);
      ASSERT_EQ(batch->Settle(i), state) << "settled once, for good";
      if (state == DecodeSlot::kTaken) {
        (*taken_here)++;
        state = DecodeWhole(batch->messages[i], &decoder, &batch->slots[i].event);
      }
      const size_t at = start + i;
      ASSERT_EQ(state, topic.want_state[at]) << "message " << at;
      if (state != DecodeSlot::kWhole) continue;
      events::Event fresh;
      ASSERT_TRUE(events::DecodeEvent(topic.texts[at], &fresh).ok());
      ASSERT_EQ(events::EncodeEvent(batch->slots[i].event.record, batch->slots[i].event.source),
                events::EncodeEvent(fresh.record, fresh.source))
          << "message " << at;
    }
  }
}

TEST(DecodeAheadTest, EveryInterleavingSettlesEachMessageOnceAsAFreshDecode) {
  const Topic topic(3000);
  size_t taken = 0;
  {
    SCOPED_TRACE("no decoder: the source's thread takes every message");
    ASSERT_NO_FATAL_FAILURE(ReadAll(
        topic, nullptr, 50, [] {}, &taken));
    EXPECT_EQ(taken, topic.messages.size());
  }
  {
    SCOPED_TRACE("a slow source's thread: the decoder settles almost everything");
    DecodeAhead ahead;
    ASSERT_NO_FATAL_FAILURE(ReadAll(
        topic, &ahead, 50, [] { std::this_thread::sleep_for(std::chrono::microseconds(50)); },
        &taken));
    EXPECT_LT(taken, topic.messages.size() / 2) << "the decoder did the work";
  }
  {
    SCOPED_TRACE("a fast source's thread, batches of every size: both threads share the work");
    std::mt19937 rng(7);
    for (size_t batch_size : {1, 2, 7, 64, 500}) {
      DecodeAhead ahead;
      ASSERT_NO_FATAL_FAILURE(ReadAll(
          topic, &ahead, batch_size,
          [&] {
            if (rng() % 16 == 0) std::this_thread::yield();
          },
          &taken));
    }
  }
}

TEST(DecodeAheadTest, AStoppedDecoderLeavesNoMessageHalfDone) {
  const Topic topic(2000);
  std::vector<std::shared_ptr<DecodeBatch>> batches;
  {
    DecodeAhead ahead;
    for (size_t start = 0; start < topic.messages.size(); start += 100) {
      std::vector<rd_kafka_message_t*> ms;
      for (size_t i = start; i < start + 100; i++)
        ms.push_back(const_cast<rd_kafka_message_t*>(&topic.messages[i]));
      batches.push_back(std::make_shared<DecodeBatch>(std::move(ms)));
      ahead.Submit(batches.back());
    }
  }  // stopped while (probably) in the middle of the batches
  size_t settled_by_decoder = 0, pending = 0;
  for (const auto& b : batches) {
    for (size_t i = 0; i < b->messages.size(); i++) {
      const uint8_t s = b->slots[i].state.load();
      ASSERT_NE(s, DecodeSlot::kDecoding) << "a message left half decoded";
      if (s == DecodeSlot::kPending) pending++;
      if (s == DecodeSlot::kWhole || s == DecodeSlot::kUnsettled) settled_by_decoder++;
      // The source's thread can settle every one of them.
      EXPECT_NE(b->Settle(i), DecodeSlot::kDecoding);
    }
  }
  EXPECT_EQ(settled_by_decoder + pending, topic.messages.size());
}

}  // namespace
}  // namespace sidetable::replay::kafka
