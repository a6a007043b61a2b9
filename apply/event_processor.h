// EventProcessor: one Kafka message value in, its effects applied.
//
// Decodes the change event, runs every pattern that Wants() it, and applies
// all their operations in order through an OpApplier. A transient failure
// re-applies the whole event after an exponential back-off; re-applying is
// harmless because every operation is fenced. How long (apply/retry.h): a
// service that is busy or out of reach (ServerBusy, Unavailable, NoReply)
// is waited out for retry.max_wait_seconds, any other transient failure
// (Internal, TableBeingDeleted, a fence loop that ran out of rounds) is
// tried retry.max_attempts times. Anything that cannot succeed
// (undecodable event, a pattern error, a permanent error code, the retries
// exhausted) is reported as a dead letter with a reason. The moves of an
// archive request concern different entities: one that fails permanently
// (e.g. a copy over the entity limits) does not keep the others from being
// moved, and the event is dead-lettered naming that one.
//
// Thread safety: not thread-safe; the consumer thread owns it.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "apply/op_applier.h"
#include "apply/retry.h"
#include "apply/table_store.h"
#include "engine/change_record.h"
#include "events/epoch_filter.h"
#include "patterns/pattern.h"

namespace sidetable::apply {

// Why an event could not be applied (the dead-letter reason).
enum class FailureKind : uint8_t { kDecode, kPattern, kPermanent, kRetriesExhausted };
inline constexpr size_t kFailureKinds = 4;
const char* FailureKindName(FailureKind kind);  // "decode", "pattern", ...

// What a processor reports as it goes: the worker counts it in /metrics, a
// tool may ignore it. Called on the processor's thread.
class ApplyObserver {
 public:
  virtual ~ApplyObserver() = default;
  virtual void OnSkippedEvent() {}  // no pattern produced an operation
  // Scale-out: a record of a replaced owner, skipped (events/epoch_filter.h).
  virtual void OnFencedEvent() {}
  virtual void OnRetry() {}         // the whole event is tried again
  // Waiting out a busy or unreachable service (apply/retry.h): OnWaiting at
  // each retry for that reason (`last` the failure), OnWaitOver once the
  // wait ends (applied, given up or stopped). Lets /health say "waiting"
  // where it would otherwise see a stalled consumer.
  virtual void OnWaiting(const Status& last) {}
  virtual void OnWaitOver() {}
  virtual void OnOp(patterns::TableOp::Kind kind, OpResult result) {}
};

// Tells `observer` of a wait for the service, and of its end when the scope
// ends (however the event or group ends: applied, given up or stopped).
class WaitScope {
 public:
  explicit WaitScope(ApplyObserver* observer) : observer_(observer) {}
  ~WaitScope() {
    if (waited_) observer_->OnWaitOver();
  }
  WaitScope(const WaitScope&) = delete;
  WaitScope& operator=(const WaitScope&) = delete;
  void Waiting(const Status& last) {
    waited_ = true;
    observer_->OnWaiting(last);
  }

 private:
  ApplyObserver* observer_;
  bool waited_ = false;
};

struct EventOutcome {
  enum class Kind : uint8_t {
    kApplied,      // every operation acknowledged (or nothing wanted it)
    kDeadLetter,   // give up on it: `reason` says why
    kInterrupted,  // stop was requested during back-off: do not commit it
  };
  Kind kind = Kind::kApplied;
  FailureKind reason_kind = FailureKind::kDecode;
  std::string reason;
  uint64_t lsn = 0;  // 0 when the event could not be decoded
  size_t operations = 0;
  // Scale-out (docs/scale-out.md): a ShardClaimed record or a fenced one was
  // skipped, not applied (kind stays kApplied: its offset may be committed).
  enum class Skip : uint8_t { kNone, kClaim, kFenced };
  Skip skip = Skip::kNone;
  // The partition's fencing floor once this event was read (0 without a
  // fence): what a commit of its offset stores, so a restart there keeps it.
  uint64_t floor = 0;
};

// Where a value was read, for the fencing rule: its partition's filter. One
// filter per partition a consumer reads, kept by the caller across batches.
struct EventFence {
  events::EpochFilter* filter = nullptr;
  int32_t partition = 0;
};

class EventProcessor {
 public:
  // `sleep_ms` waits between attempts and returns false when a stop was
  // requested meanwhile (tests pass one that does not sleep); `now_ms`
  // measures retry.max_wait_seconds (tests pass one their sleep advances).
  // `observer` may be null.
  using Sleeper = std::function<bool(int ms)>;
  EventProcessor(const std::vector<std::unique_ptr<patterns::Pattern>>* patterns,
                 OpApplier* applier, RetryPolicy policy, ApplyObserver* observer, Sleeper sleep_ms,
                 NowMs now_ms = SteadyNowMs)
      : patterns_(patterns),
        applier_(applier),
        policy_(policy),
        observer_(observer ? observer : &null_observer_),
        sleep_(std::move(sleep_ms)),
        now_(std::move(now_ms)) {}

  // With `fence`, the record passes the partition's EpochFilter first:
  // claims and fenced records are skipped (EventOutcome::skip).
  EventOutcome Process(std::string_view value, const EventFence* fence = nullptr);

  // Many events at once (one Kafka poll), outcomes in input order. Each is
  // decoded and run through the patterns as Process() does; the fenced
  // upserts and deletes of consecutive events are applied together through
  // GroupedWrites (grouped_writes.h) over `store`'s pipelined writes. An
  // event with a clear or a move is a barrier: everything before it is
  // applied first, then it alone as Process() applies it. Without
  // EnableGrouping() it is Process() on each event in turn.
  // `fences`, when given, holds one EventFence per value (Process's rule).
  std::vector<EventOutcome> ProcessBatch(const std::vector<std::string_view>& values,
                                         const std::vector<EventFence>* fences = nullptr);
  void EnableGrouping(TableStore* store) { store_ = store; }

  // The decoded record of the last Process()/ProcessBatch() event at `i`
  // (valid until the next call): the worker reads its table and commit time.
  const ChangeRecord* record(size_t i) const { return i < records_.size() && has_record_[i] ? &records_[i] : nullptr; }

 private:
  // Decode and patterns; false (with `out` set to a dead letter) on failure.
  // A claim or fenced record returns true with no operations and out->skip set.
  bool Prepare(std::string_view value, const EventFence* fence, ChangeRecord* rec,
               std::vector<patterns::TableOp>* ops, EventOutcome* out);
  // The one-at-a-time path with its retry loop (Process's second half).
  void ApplyInOrder(const ChangeRecord& rec, const std::vector<patterns::TableOp>& ops, EventOutcome* out);

  const std::vector<std::unique_ptr<patterns::Pattern>>* patterns_;
  OpApplier* applier_;
  RetryPolicy policy_;
  ApplyObserver null_observer_;
  ApplyObserver* observer_;
  Sleeper sleep_;
  NowMs now_;
  uint64_t jitter_ = 0x9e3779b97f4a7c15ull;
  TableStore* store_ = nullptr;
  std::vector<ChangeRecord> records_;
  std::vector<bool> has_record_;
};

}  // namespace sidetable::apply
