#include "sidecar/cluster/shard_replayer.h"

#include <spdlog/spdlog.h>

#include <charconv>

#include "common/kafka/headers.h"
#include "sidecar/cluster/records.h"

namespace sidetable::cluster {

uint64_t TableIncarnationOf(const rd_kafka_message_t* m) {
  auto h = kafka::HeaderValue(m, events::kTableIncarnationHeader);
  if (!h) return 0;
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(h->data(), h->data() + h->size(), v);
  // Malformed (or out of range): treated as unstamped.
  return ec == std::errc() && end == h->data() + h->size() ? v : 0;
}

ShardReplayer::ShardReplayer(int32_t shard, std::function<Status(const ChangeRecord&)> apply,
                             std::shared_ptr<spdlog::logger> log, std::string service,
                             ForeignClaimFn on_foreign)
    : shard_(shard),
      apply_(std::move(apply)),
      log_(std::move(log)),
      on_foreign_(std::move(on_foreign)),
      filter_(std::move(service)) {}

Result<ShardReplayer::Outcome> ShardReplayer::Feed(const rd_kafka_message_t* m, uint64_t* claim_epoch) {
  std::string_view value(static_cast<const char*>(m->payload), m->payload ? m->len : 0);
  ChangeRecord record;
  if (auto h = kafka::HeaderValue(m, kClaimHeader)) {
    joiner_.Reset();
    Status s = DecodeClaim(*h, value, &record);
    if (!s.ok()) {
      log_->warn("shard {} offset {}: a malformed claim is skipped: {}", shard_, m->offset, s.message());
      return Outcome::kSkipped;
    }
    if (filter_.Check(shard_, record) == events::EpochFilter::Verdict::kForeign) {
      if (on_foreign_) on_foreign_(m->offset, record);
      return Outcome::kForeign;
    }
    if (claim_epoch != nullptr) *claim_epoch = record.epoch;
    return Outcome::kClaim;
  }
  std::string joined;
  if (auto chunk = kafka::HeaderValue(m, events::kChunkHeader)) {
    events::ChunkInfo info;
    Status s = events::ParseChunkHeaders(kafka::HeaderValue(m, events::kLsnHeader).value_or(""), *chunk,
                                         kafka::HeaderValue(m, events::kSizeHeader).value_or(""), &info);
    if (!s.ok()) {
      log_->warn("shard {} offset {}: bad chunk headers: {}", shard_, m->offset, s.message());
      joiner_.Reset();
      return Outcome::kSkipped;
    }
    switch (joiner_.Add(info, value)) {
      case events::ChunkJoiner::Step::kNeedMore:
        return Outcome::kPending;
      case events::ChunkJoiner::Step::kDropped:
        // A run cut by retention, or resent from its first chunk: expected.
        log_->debug("shard {} offset {}: a chunk is dropped: {}", shard_, m->offset, joiner_.dropped_reason());
        return Outcome::kSkipped;
      case events::ChunkJoiner::Step::kComplete:
        break;
    }
    joined = joiner_.TakeEvent();
    value = joined;
  } else {
    joiner_.Reset();
  }
  events::Event event;
  Status s = decoder_.Decode(value, &event);
  if (!s.ok()) {
    log_->warn("shard {} offset {}: an undecodable event is skipped: {}", shard_, m->offset, s.message());
    return Outcome::kSkipped;
  }
  // Every chunk carries the stamp: the message completing the event has it.
  event.record.table_incarnation = TableIncarnationOf(m);
  switch (filter_.Check(shard_, event.record)) {
    case events::EpochFilter::Verdict::kApply:
      ST_RETURN_IF_ERROR(apply_(event.record));
      applied_++;
      return Outcome::kApplied;
    case events::EpochFilter::Verdict::kFenced:
      return Outcome::kFenced;
    case events::EpochFilter::Verdict::kClaim:
      return Outcome::kClaim;
    case events::EpochFilter::Verdict::kForeign:  // another service's claim without its st-claim
                                                  // header
      if (on_foreign_) on_foreign_(m->offset, event.record);
      return Outcome::kForeign;
  }
  return Outcome::kSkipped;
}

}  // namespace sidetable::cluster
