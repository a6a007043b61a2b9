// GroupedWrites: the fenced upserts and deletes of many events (one Kafka
// poll) applied as few EGTs as possible, pipelined, with the engine checking
// each fence (OpKind::kFencedUpsert / kFencedDelete, engine/batch.h), so a
// worker needs no read before a write.
//
// Grouping keeps what one-at-a-time application guarantees:
//  - Operations on one target entity are coalesced to the one with the
//    highest source version (the last one on a tie). Under fencing, applying
//    the sequence in order leaves exactly what that one leaves.
//  - Operations on different entities commute (each is fenced on its own),
//    so they may go into any EGT, in any order, concurrently.
//  - A group is one EGT: at most 100 operations of one (table, PartitionKey),
//    under the 4 MiB payload limit.
// Failures, per group: TableNotFound creates the table and sends it again;
// a transient code (apply::IsTransient) sends it again after a back-off,
// within the group's own RetryBudget (apply/retry.h: a busy or unreachable
// service for max_wait_ms, other failures max_attempts times); a permanent
// error naming an operation fails that operation's event and sends the
// rest again at once; a permanent error naming none fails every event of
// the group. Other groups are not held up by its failures, only by the
// rounds' back-off (groups are sent in rounds, the longest back-off wins).
//
// Thread safety: not thread-safe; the consumer thread owns it.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "apply/op_applier.h"
#include "apply/retry.h"
#include "apply/table_store.h"
#include "patterns/pattern.h"

namespace sidetable::apply {

class ApplyObserver;

// An operation and the index of the event it came from.
struct EventOp {
  const patterns::TableOp* op;
  size_t event;
};

// How an event fared: OK, or why it failed (`permanent` false: the retries
// ran out; `interrupted`: a stop came during a back-off).
struct EventFailure {
  Status status;
  bool permanent = false;
  bool interrupted = false;
};

class GroupedWrites {
 public:
  using Sleeper = std::function<bool(int ms)>;
  // `now_ms` measures the policy's max_wait_ms; empty: the steady clock.
  GroupedWrites(TableStore* store, OpApplier* applier, const RetryPolicy* policy,
                ApplyObserver* observer, Sleeper* sleep, NowMs now_ms = {})
      : store_(store),
        applier_(applier),
        policy_(policy),
        observer_(observer),
        sleep_(sleep),
        now_(now_ms ? std::move(now_ms) : NowMs(SteadyNowMs)) {}

  // Applies `ops` (kFencedUpsert and kFencedDelete only). `failures` has one
  // slot per event; an event's slot is set when one of its operations failed
  // (the first failure wins), and left alone otherwise. `not_written`, when
  // given, receives the operations that succeeded without writing: fenced by
  // the stored entity or a clear, or coalesced into another operation on
  // the same entity. An archive move must not delete a source whose copy is
  // among them (grouped_moves.h).
  void Apply(const std::vector<EventOp>& ops, std::vector<EventFailure>* failures,
             std::vector<const patterns::TableOp*>* not_written = nullptr);

  uint64_t groups_sent() const { return groups_sent_; }

 private:
  TableStore* store_;
  OpApplier* applier_;
  const RetryPolicy* policy_;
  ApplyObserver* observer_;
  Sleeper* sleep_;
  NowMs now_;
  uint64_t jitter_ = 0x2545f4914f6cdd1dull;
  uint64_t groups_sent_ = 0;
};

}  // namespace sidetable::apply
