// One partition of the change topic as the Kafka source's merge sees it: the
// partition's own librdkafka queue (taken off the consumer queue, so each
// partition is read independently), a small buffer of fetched messages, and
// the decoded head record the merge compares by LSN. Internal to
// tools/replay.
//
// Memory per partition, whatever the topic's size: librdkafka's prefetch
// (queued.max.messages.kbytes, 256 KiB by default, see kafka_consumer.cc; one
// fetch response of max.partition.fetch.bytes, 1 MiB, may overshoot it) plus
// this buffer (kBufferBytes, 64 KiB): at most about 1.5 MiB.
//
// Thread safety: used by the source's one thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/change_record.h"
#include "engine/status.h"
#include "events/chunk.h"
#include "events/epoch_filter.h"
#include "events/event.h"

namespace sidetable::replay::kafka {

// A record's place in its partition's order: its LSN outside a cluster, its
// version (epoch << 40 | lsn) in one, where several owners' LSNs share a
// partition and a later owner's LSNs may be lower.
inline uint64_t StampedOrder(const ChangeRecord& r) { return r.epoch == 0 ? r.lsn : (r.epoch << 40 | r.lsn); }

// What the partitions of one source share.
struct ConsumerContext {
  rd_kafka_t* rk = nullptr;
  std::string topic;
  int timeout_ms = 0;  // the longest a partition may go without a message
  // librdkafka's prefetch bounds per partition queue (queued.max.messages.kbytes
  // in bytes, queued.min.messages), for noticing a stalled fetcher.
  int64_t prefetch_bytes = 0;
  int64_t prefetch_messages = 0;
  events::EventDecoder decoder;
  std::string last_error;  // the newest client-level error event, for messages
  // A scale-out service's topic: a record with an epoch or a claim was read.
  // Its LSNs are several owners' and have gaps, so the source stops checking.
  bool clustered = false;
  // Messages skipped because they do not decode (docs/replay.md): how many,
  // the LSNs those that had a sidetable-lsn header carried (for the merge's
  // LSN check), and who is told of each.
  uint64_t undecodable = 0;
  std::set<uint64_t> undecodable_lsns;
  std::function<void(const std::string&)> on_undecodable;
  // Records handed back (RecordSource::Recycle) whose storage the readers
  // decode into: about one batch of the consumer's, bounded in count and in
  // each record's footprint (a large record is freed, not kept), so the
  // pool holds at most 16 MiB (kafka_partition.cc).
  std::vector<ChangeRecord> spare;
  void Recycle(ChangeRecord&& r);
  // Moves a spare record into *to, if there is one.
  void TakeSpare(ChangeRecord* to);
};

class PartitionReader {
 public:
  // Reads offsets [start, end). Records at or below `skip_through_lsn` and
  // records committed before `min_commit_ticks` are skipped (counted as read).
  // Scale-out (docs/scale-out.md): ShardClaimed records and records fenced
  // by them are skipped too; `floor` is the fencing floor at `start` (a
  // resumed run's checkpoint), 0 from the partition's beginning.
  PartitionReader(ConsumerContext* ctx, int32_t partition, int64_t start, int64_t end,
                  uint64_t skip_through_lsn, int64_t min_commit_ticks, uint64_t floor = 0);
  ~PartitionReader();
  PartitionReader(const PartitionReader&) = delete;
  PartitionReader& operator=(const PartitionReader&) = delete;

  // Takes the partition's queue off the consumer queue. Before assign(), so
  // that no message of this partition reaches the consumer queue.
  Status Attach();

  // Makes head() available unless the partition is exhausted(); waits for
  // messages, failing with kUnavailable after ctx->timeout_ms without any.
  // A message that does not decode is no record: it is reported to
  // ctx->on_undecodable, counted, and skipped.
  Status Fill();

  bool exhausted() const { return !head_ && next_ >= end_; }
  const ChangeRecord& head() const { return *head_; }
  // The offset of head() (of its first chunk): start() when the head is the
  // first message read.
  int64_t head_offset() const { return head_offset_; }
  // A record committed before min_commit_ticks was read (and skipped).
  bool skipped_older() const { return skipped_older_; }
  // The merge passed the head on / dropped it (a duplicate of an LSN that
  // another partition already delivered).
  ChangeRecord TakeHead();
  void DropHead();

  int32_t partition() const { return partition_; }
  // Records skipped as fenced so far; the fencing floor at position().
  uint64_t fenced() const { return fence_.fenced(); }
  uint64_t floor() const { return fence_.Floor(partition_); }
  int64_t start() const { return start_; }
  int64_t end() const { return end_; }
  // The offset a resumed run continues at: after every message passed on
  // or skipped, never after the head, nor inside a chunk run not yet whole.
  int64_t position() const { return head_ ? head_offset_ : joiner_.in_run() ? run_offset_ : next_; }

 private:
  // Moves messages from the queue into buffer_, waiting if there are none.
  Status Refill();
  // Consumes one message (advancing next_), or fails leaving it unread.
  Status Take(const rd_kafka_message_t* m);
  // Reports and counts a message that did not decode.
  void SkipUndecodable(const rd_kafka_message_t* m, int64_t first_offset, const std::string& why);
  // Decodes `m` into decoded_ without reading its headers; true when that
  // settles it (an event that no chunk could be: see the .cc).
  bool DecodedWhole(const rd_kafka_message_t* m);
  // The event text a message completes (itself, or the chunk run it ends,
  // then held in joined_); nullopt while a run is partial or for a fragment.
  std::optional<std::string_view> Join(const rd_kafka_message_t* m, int64_t* first_offset);
  void ReleaseBuffer();
  void PollClientErrors();
  void Pause();
  // Makes librdkafka fetch this partition now (see Refill).
  void Kick();

  ConsumerContext* ctx_;
  const int32_t partition_;
  const int64_t start_, end_;
  const int64_t min_commit_ticks_;
  rd_kafka_queue_t* queue_ = nullptr;
  std::vector<rd_kafka_message_t*> buffer_;  // fetched, [taken_, size) not yet consumed
  size_t taken_ = 0;
  size_t average_bytes_ = 1024;
  bool may_stall_ = false;  // the queue was seen at its prefetch bound
  int64_t next_;            // the offset after the last message consumed
  uint64_t last_lsn_;       // per partition: anything at or below is a resend (StampedOrder)
  events::EpochFilter fence_;
  std::optional<ChangeRecord> head_;
  // What each message decodes into: its record is the head once accepted,
  // else kept (with its storage) for the next message. `decoded_empty_`:
  // its record was moved to the head and holds no storage.
  events::Event decoded_;
  bool decoded_empty_ = true;
  int64_t head_offset_ = 0;
  bool skipped_older_ = false;
  // Chunked events (events/chunk.h): the run being joined and where it began.
  events::ChunkJoiner joiner_;
  int64_t run_offset_ = 0;
  std::string joined_;
};

}  // namespace sidetable::replay::kafka
