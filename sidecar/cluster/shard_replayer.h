// ShardReplayer: applies one shard's partition of the change topic, message
// by message, in partition order: joins chunked events, applies the fencing
// rule (events/epoch_filter.h) and hands every admitted record to the
// cluster's apply hook (Engine::ApplyReplicated). A restore and a standby
// copy (docs/scale-out.md, "Hand-over: restore and standbys") read with it.
// It fences with this member's service: another service's claim on the
// partition (a misconfiguration) fences nothing and is handed to
// `on_foreign`, which reports it.
//
// Thread safety: one replayer per reading thread and shard.
#pragma once

#include <librdkafka/rdkafka.h>

#include <functional>
#include <memory>

#include "engine/change_record.h"
#include "engine/status.h"
#include "events/chunk.h"
#include "events/epoch_filter.h"
#include "events/event.h"

namespace spdlog {
class logger;
}

namespace sidetable::cluster {

// The st-ti header of `m` (the cluster incarnation of its record's table;
// events/chunk.h): 0 when absent or malformed.
uint64_t TableIncarnationOf(const rd_kafka_message_t* m);

class ShardReplayer {
 public:
  enum class Outcome {
    kApplied,  // a record applied
    kFenced,   // a record below the floor, skipped
    kClaim,    // a ShardClaimed record: the floor may have risen
    kForeign,  // another service's claim: ignored (reported through on_foreign)
    kPending,  // a chunk of an event not complete yet
    kSkipped,  // malformed (logged), nothing applied
  };

  // `service`: this member's cluster.service ("" = every claim fences).
  // `on_foreign` (may be null): called with the offset of every claim of
  // another service.
  using ForeignClaimFn = std::function<void(int64_t offset, const ChangeRecord& claim)>;
  ShardReplayer(int32_t shard, std::function<Status(const ChangeRecord&)> apply,
                std::shared_ptr<spdlog::logger> log, std::string service = "",
                ForeignClaimFn on_foreign = nullptr);

  // Resumes after a reader that had reached this floor (a standby's position).
  void SeedFloor(uint64_t epoch) { filter_.SeedFloor(shard_, epoch); }

  // Applies the message (or buffers it, for a chunk). A claim's epoch is
  // written to `claim_epoch` when not null. Only the apply hook's failure
  // is an error: the message was not applied and should be read again.
  // Another service's claim sets no `claim_epoch`.
  Result<Outcome> Feed(const rd_kafka_message_t* m, uint64_t* claim_epoch = nullptr);

  // Between whole events: a position after the last message fed is a place
  // another reader may resume from (with floor()).
  bool between_events() const { return !joiner_.in_run(); }
  uint64_t floor() const { return filter_.Floor(shard_); }
  uint64_t applied() const { return applied_; }
  uint64_t fenced() const { return filter_.fenced(); }

 private:
  const int32_t shard_;
  const std::function<Status(const ChangeRecord&)> apply_;
  const std::shared_ptr<spdlog::logger> log_;
  const ForeignClaimFn on_foreign_;
  events::EpochFilter filter_;
  events::ChunkJoiner joiner_;
  events::EventDecoder decoder_;
  uint64_t applied_ = 0;
};

}  // namespace sidetable::cluster
