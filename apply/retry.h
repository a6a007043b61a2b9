// Retries on the apply path: which failures are worth another try, how long
// to back off, and when to give up (docs/workers.md, "Transient failures
// and dead letters").
//
// Two budgets, because failures differ in what they say about time:
//  - The service is busy or out of reach: ServerBusy ("not executed, retry",
//    docs/protocol.md), Unavailable, NoReply, InsufficientStorage (the
//    sidecar's disk is full; writes resume once space is freed). Nothing is
//    wrong with the write; the service cannot take it now: a shard being
//    handed over in a cluster (19-30 s after a member is killed), a sidecar
//    restarting, Kafka away. Outages are measured in seconds, not attempts,
//    so these are retried until `max_wait_ms` has passed since the first of
//    them. The code alone decides: what the apply path writes is fenced, so
//    a NoReply whose write did run (or a member's ServerBusy after the owner
//    it forwarded to did not answer in time, sidecar/forwarder.h) is
//    harmless to send again.
//  - Any other transient failure (Internal, TableBeingDeleted, a fence loop
//    out of rounds): the service answered, and may answer differently next
//    time. Counted against `max_attempts`, first try included.
// With max_wait_ms 0 the first kind counts against max_attempts as well
// (the behaviour before session 46; the archive rules use it, their retry
// being the next run).
//
// Thread safety: RetryPolicy is a value; a RetryBudget belongs to one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "engine/status.h"

namespace sidetable::apply {

struct RetryPolicy {
  int max_attempts = 8;
  int backoff_ms = 100;
  int backoff_max_ms = 5000;
  int64_t max_wait_ms = 120000;  // retry.max_wait_seconds
};

// Worth retrying: the request was not executed or may succeed later.
bool IsTransient(Code code);
// The service is busy or out of reach: retried for max_wait_ms (above).
bool WaitsForService(Code code);
// Back-off before attempt `attempt` (2, 3, ...): backoff_ms * 2^(attempt-2),
// capped at backoff_max_ms, with +-25% jitter.
int BackoffMs(const RetryPolicy& policy, int attempt, uint64_t jitter_seed);

// A wait for the service is logged when it starts and then at most this
// often (one line per back-off would be one every few seconds per event).
inline constexpr int64_t kWaitLogEveryMs = 10000;

// A monotonic clock in milliseconds. Tests pass one that their injected
// sleep advances, so a two-minute wait takes no real time.
using NowMs = std::function<int64_t()>;
int64_t SteadyNowMs();

// The retries of one event (or one group of grouped writes).
class RetryBudget {
 public:
  explicit RetryBudget(const RetryPolicy* policy) : policy_(policy) {}

  // Attempt attempts()+1 failed with the transient `code` at `now_ms`:
  // whether another is allowed.
  bool Again(Code code, int64_t now_ms);
  // The back-off before the next attempt: exponential in the attempts made,
  // capped at backoff_max_ms; while waiting for the service, never past the
  // end of the wait (the last attempt is made at its end).
  int NextBackoffMs(int64_t now_ms, uint64_t jitter_seed) const;

  int attempts() const { return attempts_; }  // failed so far, of both kinds
  // The last failure was the service's, and max_wait_ms applies to it.
  bool waiting() const { return waiting_; }
  // Since the first such failure; 0 before one.
  int64_t waited_ms(int64_t now_ms) const { return wait_since_ < 0 ? 0 : now_ms - wait_since_; }
  // Why Again() said no, for the dead letter: "gave up after 8 attempts",
  // "gave up after waiting 120 s for the service (retry.max_wait_seconds)".
  std::string GaveUp(int64_t now_ms) const;

 private:
  const RetryPolicy* policy_;
  int attempts_ = 0;
  int counted_ = 0;  // failures counted against max_attempts
  int64_t wait_since_ = -1;
  bool waiting_ = false;
};

}  // namespace sidetable::apply
