#include "tools/replay/kafka_partition.h"

#include <algorithm>

#include "common/kafka/headers.h"
#include "tools/replay/kafka_consumer.h"

namespace sidetable::replay::kafka {
namespace {

// How much of a partition is held here, decoded lazily one message at a
// time (the head), on top of librdkafka's own prefetch. Enough to take
// messages off the queue in batches of ~50 (one lock each); more only keeps
// messages out of the caches longer (see queued.max.messages.kbytes in
// kafka_consumer.cc).
constexpr size_t kBufferBytes = 64 << 10;
constexpr size_t kMaxBatch = 1000;
// A wait for messages wakes this often to collect client-level errors.
constexpr int kWaitSliceMs = 100;
// A queue that stays empty is kicked after this long, then at doubling
// intervals up to the last (see Refill).
constexpr std::chrono::milliseconds kFirstKick(25);
constexpr std::chrono::milliseconds kLongestKickInterval(800);

}  // namespace

PartitionReader::PartitionReader(ConsumerContext* ctx, int32_t partition, int64_t start,
                                 int64_t end, uint64_t skip_through_lsn, int64_t min_commit_ticks,
                                 uint64_t floor)
    : ctx_(ctx),
      partition_(partition),
      start_(start),
      end_(end),
      min_commit_ticks_(min_commit_ticks),
      next_(start),
      last_lsn_(skip_through_lsn) {
  fence_.SeedFloor(partition, floor);
}

PartitionReader::~PartitionReader() {
  ReleaseBuffer();
  if (queue_) rd_kafka_queue_destroy(queue_);
}

Status PartitionReader::Attach() {
  queue_ = rd_kafka_queue_get_partition(ctx_->rk, ctx_->topic.c_str(), partition_);
  if (queue_ == nullptr) {
    return Status(Code::kInternal, "no queue for partition " + std::to_string(partition_));
  }
  // NULL: stop forwarding to the consumer queue; librdkafka then also keeps
  // assign() from forwarding it again (it is the application's choice).
  rd_kafka_queue_forward(queue_, nullptr);
  return Status::OK();
}

Status PartitionReader::Fill() {
  while (!head_ && next_ < end_) {
    if (taken_ == buffer_.size()) {
      ST_RETURN_IF_ERROR(Refill());
      continue;
    }
    ST_RETURN_IF_ERROR(Take(buffer_[taken_]));
    rd_kafka_message_destroy(buffer_[taken_]);
    buffer_[taken_++] = nullptr;
  }
  if (exhausted() && queue_ != nullptr) {
    // Stop fetching beyond the range (the topic may still be growing).
    ReleaseBuffer();
    Pause();
    rd_kafka_queue_destroy(queue_);
    queue_ = nullptr;
  }
  return Status::OK();
}

ChangeRecord PartitionReader::TakeHead() {
  ChangeRecord r = std::move(*head_);
  head_.reset();
  return r;
}

void PartitionReader::DropHead() {
  ctx_->Recycle(std::move(*head_));
  head_.reset();
}

namespace {

// Records kept for reuse: about one batch of the consumer's (each Next
// takes from the pool as many as the batch before handed back), at most
// this many, each holding at most this much. The pool then holds at most
// 16 MiB whatever the records were, and usually a few hundred KiB; a
// record grown larger (a large event) is freed as before.
constexpr size_t kMaxSpareRecords = 1024;
constexpr size_t kMaxSpareRecordBytes = 16 << 10;

// A cheap upper estimate of the heap a record holds: its strings' and
// vectors' capacities. Walked when the consumer hands the record back,
// just after it has read the record (so mostly from the caches).
size_t Footprint(const ChangeRecord& r) {
  size_t n = r.table.capacity() + r.partition_key.capacity() + r.caller.capacity() +
             r.client_request_id.capacity() + r.target_table.capacity() + r.service.capacity() +
             r.ops.capacity() * sizeof(ChangeOp);
  for (const ChangeOp& op : r.ops) {
    n += op.row_key.capacity() + op.etag.capacity();
    for (const std::optional<Entity>* e : {&op.before, &op.after}) {
      if (!*e) continue;
      n += (*e)->partition_key.capacity() + (*e)->row_key.capacity() + (*e)->etag.capacity() +
           (*e)->properties.capacity() * sizeof(Property);
      for (const Property& p : (*e)->properties)
        n += p.name.capacity() + p.value.bytes().capacity();
    }
  }
  return n;
}

}  // namespace

void ConsumerContext::Recycle(ChangeRecord&& r) {
  // A record moved from (a head the merge passed on, a caller's std::move)
  // has no operations' storage to lend: it would take a slot for nothing.
  if (r.ops.capacity() == 0) return;
  if (spare.size() >= kMaxSpareRecords || Footprint(r) > kMaxSpareRecordBytes) return;
  spare.push_back(std::move(r));
}

void ConsumerContext::TakeSpare(ChangeRecord* to) {
  if (spare.empty()) return;
  *to = std::move(spare.back());
  spare.pop_back();
}

// librdkafka 2.0 stops fetching a partition whose queue holds
// queued.max.messages.kbytes (or queued.min.messages) and decides again only
// when its broker thread wakes up, up to a second later (2.1 made this
// fetch.queue.backoff.ms). A reader faster than the fetcher would spend most
// of that second waiting. So the reader kicks the fetcher: a seek to the
// offset it needs next wakes the broker thread. At once when the queue it
// drained was seen at its bound (the fetcher has surely stopped), and after
// a while without messages in any case (the bound is estimated; and a kick
// that met a fetch on its way can leave that fetch's outdated messages
// blocking the next decision). A kick costs at most the fetch on its way,
// and kicks back off, so a slow broker still gets its answers through.
Status PartitionReader::Refill() {
  ReleaseBuffer();
  const int64_t queued = static_cast<int64_t>(rd_kafka_queue_length(queue_));
  if (queued * static_cast<int64_t>(average_bytes_) >= ctx_->prefetch_bytes * 9 / 10 ||
      queued >= ctx_->prefetch_messages) {
    may_stall_ = true;
  }
  // Sized by the messages seen so far, so that big events do not pile up.
  const size_t want =
      std::clamp<size_t>(kBufferBytes / std::max<size_t>(average_bytes_, 1), 1, kMaxBatch);
  buffer_.resize(want);
  // Timeout 0: take what has arrived. (With a timeout librdkafka waits until
  // the batch is full, i.e. the whole timeout at the end of a partition.)
  const ssize_t n = rd_kafka_consume_batch_queue(queue_, 0, buffer_.data(), want);
  buffer_.resize(std::max<ssize_t>(n, 0));
  if (n > 0) {
    size_t bytes = 0;
    for (const rd_kafka_message_t* m : buffer_) bytes += m->len;
    average_bytes_ = (average_bytes_ + bytes / buffer_.size()) / 2;
    return Status::OK();
  }
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(ctx_->timeout_ms);
  auto next_kick = may_stall_ ? start : start + kFirstKick;
  auto kick_interval = kFirstKick;
  do {
    if (Clock::now() >= next_kick) {
      Kick();
      next_kick = Clock::now() + kick_interval;
      kick_interval = std::min(kick_interval * 2, kLongestKickInterval);
    }
    PollClientErrors();
    rd_kafka_message_t* m = rd_kafka_consume_queue(
        queue_, std::max(1, std::min({kWaitSliceMs, MsUntil(deadline), MsUntil(next_kick)})));
    if (m != nullptr) {
      buffer_.push_back(m);
      return Status::OK();
    }
  } while (Clock::now() < deadline);
  PollClientErrors();
  return Status(Code::kUnavailable,
                "no message from partition " + std::to_string(partition_) + " at offset " +
                    std::to_string(next_) + " for " + std::to_string(ctx_->timeout_ms) + " ms" +
                    (ctx_->last_error.empty() ? std::string(" (is Kafka reachable?)")
                                              : " (last error: " + ctx_->last_error + ")"));
}

Status PartitionReader::Take(const rd_kafka_message_t* m) {
  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    // Everything below m->offset was delivered: offsets in between held no
    // message (transaction markers, compacted away).
    next_ = std::max(next_, std::min(m->offset, end_));
    return Status::OK();
  }
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    const std::string what = rd_kafka_message_errstr(m);
    switch (m->err) {
      case RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE:
      case RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET:
        return Status(Code::kResourceNotFound, "partition " + std::to_string(partition_) +
                                                   ": offset " + std::to_string(next_) +
                                                   " is no longer held (" + what + ")");
      case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
      case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
      case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
      case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
        return Status(Code::kUnavailable, "partition " + std::to_string(partition_) + ": " + what);
      default:  // transient: librdkafka retries; a lasting one ends in the fetch timeout
        ctx_->last_error = what;
        return Status::OK();
    }
  }
  if (m->offset < next_) return Status::OK();  // before the range (or seen)
  if (m->offset >= end_) {                     // after the range
    next_ = end_;
    return Status::OK();
  }
  if (m->payload == nullptr) {  // a tombstone left by compaction: no event
    next_ = m->offset + 1;
    return Status::OK();
  }
  int64_t first_offset = m->offset;
  // Into the storage of a record the consumer handed back, when the last
  // decoded one became the head.
  if (decoded_empty_) {
    ctx_->TakeSpare(&decoded_.record);
    decoded_empty_ = false;
  }
  events::Event& event = decoded_;
  Status s;
  if (joiner_.in_run() || !DecodedWhole(m)) {
    auto text = Join(m, &first_offset);
    if (!text) {  // a chunk of a run not yet whole (position() stays at its start), or a fragment
      next_ = m->offset + 1;
      return Status::OK();
    }
    s = ctx_->decoder.Decode(*text, &event);
    joined_.clear();
    joined_.shrink_to_fit();
  }
  next_ = m->offset + 1;
  if (!s.ok()) {
    SkipUndecodable(m, first_offset, s.message());
    return Status::OK();
  }
  ChangeRecord& r = event.record;
  if (r.epoch != 0) ctx_->clustered = true;
  // The fencing rule first: a claim is no data, and a record of a replaced
  // owner after the claim never happened for anyone (docs/scale-out.md).
  if (fence_.Check(partition_, r) != events::EpochFilter::Verdict::kApply) return Status::OK();
  // Each partition is in LSN order; a lower or equal LSN is a resend of a
  // suffix the publisher sent before a crash (or was before the resume point).
  if (StampedOrder(r) <= last_lsn_) return Status::OK();
  last_lsn_ = StampedOrder(r);
  if (r.commit_time < min_commit_ticks_) {
    skipped_older_ = true;
    return Status::OK();
  }
  head_.emplace(std::move(r));
  decoded_empty_ = true;
  head_offset_ = first_offset;
  return Status::OK();
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
// claim, like a failure, goes the whole way: headers first.
bool PartitionReader::DecodedWhole(const rd_kafka_message_t* m) {
  const std::string_view value(static_cast<const char*>(m->payload), m->len);
  if (!ctx_->decoder.Decode(value, &decoded_).ok()) return false;
  if (decoded_.record.kind == ChangeKind::kShardClaimed) return false;
  joiner_.Reset();  // as Join does for a message without a chunk header
  return true;
}

// A worker dead-letters such a message and goes on; a replay does the same,
// but names it on stderr and exits non-zero at the end, so an audit never
// hides it. One of the sidecar's own records (its LSN header says which)
// then counts as reported, not as history gone (kafka_source.cc).
void PartitionReader::SkipUndecodable(const rd_kafka_message_t* m, int64_t first_offset,
                                      const std::string& why) {
  std::string what = "partition " + std::to_string(partition_) + " offset " +
                     std::to_string(first_offset) + ": " + why;
  const auto header = ::sidetable::kafka::HeaderValue(m, events::kLsnHeader);
  if (const auto lsn = header ? events::ParseLsnHeader(*header) : std::nullopt; lsn && *lsn > 0) {
    what += " (its " + std::string(events::kLsnHeader) + " header says LSN " +
            std::to_string(*lsn) + ")";
    ctx_->undecodable_lsns.insert(*lsn);
  }
  ctx_->undecodable++;
  if (ctx_->on_undecodable) ctx_->on_undecodable(what);
}

std::optional<std::string_view> PartitionReader::Join(const rd_kafka_message_t* m, int64_t* first_offset) {
  const std::string_view value(static_cast<const char*>(m->payload), m->len);
  const auto chunk = ::sidetable::kafka::HeaderValue(m, events::kChunkHeader);
  if (!chunk) {
    joiner_.Reset();  // a partial run before it is sent again in full, later
    return value;
  }
  events::ChunkInfo info;
  Status s = events::ParseChunkHeaders(
      ::sidetable::kafka::HeaderValue(m, events::kLsnHeader).value_or(""), *chunk,
      ::sidetable::kafka::HeaderValue(m, events::kSizeHeader).value_or(""), &info);
  if (!s.ok()) return value;  // fails to decode, with its offset in the message
  if (info.index == 0) run_offset_ = m->offset;
  switch (joiner_.Add(info, value)) {
    case events::ChunkJoiner::Step::kComplete:
      *first_offset = run_offset_;
      joined_ = joiner_.TakeEvent();
      return std::string_view(joined_);
    case events::ChunkJoiner::Step::kNeedMore:
    case events::ChunkJoiner::Step::kDropped:
      break;
  }
  return std::nullopt;
}

void PartitionReader::ReleaseBuffer() {
  for (size_t i = taken_; i < buffer_.size(); i++) rd_kafka_message_destroy(buffer_[i]);
  buffer_.clear();
  taken_ = 0;
}

void PartitionReader::PollClientErrors() {
  // The consumer queue carries only client-level events: every partition's
  // messages go to its own queue.
  while (rd_kafka_message_t* e = rd_kafka_consumer_poll(ctx_->rk, 0)) {
    if (e->err != RD_KAFKA_RESP_ERR_NO_ERROR) ctx_->last_error = rd_kafka_message_errstr(e);
    rd_kafka_message_destroy(e);
  }
}

void PartitionReader::Kick() {
  may_stall_ = false;
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, ctx_->topic.c_str(), partition_)->offset = next_;
  // Timeout 0: asynchronous. Messages of the fetch version before the seek
  // are dropped by librdkafka; none before next_ is needed.
  if (rd_kafka_error_t* e = rd_kafka_seek_partitions(ctx_->rk, list, 0)) rd_kafka_error_destroy(e);
  rd_kafka_topic_partition_list_destroy(list);
}

void PartitionReader::Pause() {
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, ctx_->topic.c_str(), partition_);
  rd_kafka_pause_partitions(ctx_->rk, list);  // best effort: only saves fetching
  rd_kafka_topic_partition_list_destroy(list);
}

}  // namespace sidetable::replay::kafka
