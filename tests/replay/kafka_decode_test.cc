// DecodedBatch and DecodeAhead (tools/replay/kafka_decode.h): whichever
// thread decodes a message, the reader gets what decoding it on its own
// thread gives, errors included; and no message is touched by the worker
// after Settle() or Get() returned (the reader then destroys it).
#include "tools/replay/kafka_decode.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace sidetable::replay::kafka {
namespace {

std::string EventJson(uint64_t lsn) {
  ChangeRecord r;
  r.lsn = lsn;
  r.kind = ChangeKind::kEntities;
  r.commit_time = 638000000000000000LL + static_cast<int64_t>(lsn);
  r.table = "T";
  r.table_id = 1;
  r.partition_key = "p";
  ChangeOp op;
  op.row_key = "r" + std::to_string(lsn);
  op.kind = OpKind::kInsertOrReplace;
  op.version = lsn;
  Entity e;
  e.partition_key = "p";
  e.row_key = op.row_key;
  e.timestamp = r.commit_time;
  e.properties.push_back({"N", Value::Int64(static_cast<int64_t>(lsn))});
  e.properties.push_back({"S", Value::String(std::string(lsn % 300, 'x'))});
  op.after = e;
  r.ops.push_back(op);
  return events::EncodeEvent(r, "src");
}

TEST(DecodeAhead, EverySlotDecodesAsOnTheReadersThreadWhoeverGetsThere) {
  std::mt19937 rng(7);
  DecodeAhead worker;
  events::EventDecoder own;
  for (int round = 0; round < 200; round++) {
    const size_t n = 1 + rng() % 64;
    // The messages: whole events, some broken, some not for the worker.
    std::vector<std::string> texts(n);
    std::vector<bool> posted(n);
    auto batch = std::make_shared<DecodedBatch>(n);
    for (size_t i = 0; i < n; i++) {
      texts[i] = EventJson(round * 100 + i + 1);
      if (rng() % 10 == 0) texts[i].resize(texts[i].size() / 2);  // undecodable
      posted[i] = rng() % 8 != 0;
      if (posted[i]) batch->SetEvent(i, texts[i]);
      EXPECT_EQ(batch->is_event(i), posted[i]);
    }
    worker.Post(batch);
    // The reader takes some, skips others (Settle), in order, at its pace.
    for (size_t i = 0; i < n; i++) {
      if (!posted[i] || rng() % 5 == 0) {
        batch->Settle(i);
        texts[i].assign(texts[i].size(), '#');  // "destroyed": the worker must not read it now
        continue;
      }
      events::Event got, want;
      Status s = batch->Get(i, &own, &got);
      Status w = events::DecodeEvent(texts[i], &want);
      ASSERT_EQ(s.ok(), w.ok()) << s.ToString() << " / " << w.ToString();
      if (!w.ok()) {
        EXPECT_EQ(s.message(), w.message());
        EXPECT_EQ(s.code(), Code::kInvalidInput);
      } else {
        EXPECT_EQ(got.record.lsn, want.record.lsn);
        EXPECT_EQ(got.source, "src");
        ASSERT_EQ(got.record.ops.size(), 1u);
        EXPECT_EQ(got.record.ops[0].after->properties, want.record.ops[0].after->properties);
      }
      texts[i].assign(texts[i].size(), '#');
    }
  }
}

TEST(DecodeAhead, BatchesDroppedUndecodedAndWorkerStoppedWithWorkQueued) {
  std::vector<std::string> texts;
  for (int i = 0; i < 500; i++) texts.push_back(EventJson(i + 1));
  {
    DecodeAhead worker;
    for (int b = 0; b < 20; b++) {
      auto batch = std::make_shared<DecodedBatch>(texts.size());
      for (size_t i = 0; i < texts.size(); i++) batch->SetEvent(i, texts[i]);
      worker.Post(batch);
      // Settle all at once, as a reader's ReleaseBuffer does.
      for (size_t i = 0; i < texts.size(); i++) batch->Settle(i);
    }
  }  // joins with batches possibly still queued
  SUCCEED();
}

}  // namespace
}  // namespace sidetable::replay::kafka
