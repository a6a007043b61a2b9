#include "apply/retry.h"

#include <algorithm>
#include <chrono>

namespace sidetable::apply {

bool IsTransient(Code code) {
  switch (code) {
    case Code::kServerBusy:
    case Code::kUnavailable:
    case Code::kNoReply:
    // The sidecar's disk is full: not applied, and writes resume once space
    // is freed (docs/operations.md, "Faults"). Until session 46 this was
    // permanent, and a worker dead-lettered every event while the disk was full.
    case Code::kInsufficientStorage:
    case Code::kInternal:
    case Code::kTableBeingDeleted:
    // Only returned to us after a fence loop ran out of rounds: contention.
    case Code::kUpdateConditionNotSatisfied:
    case Code::kEntityAlreadyExists:
      return true;
    default:
      return false;
  }
}

bool WaitsForService(Code code) {
  return code == Code::kServerBusy || code == Code::kUnavailable || code == Code::kNoReply ||
         code == Code::kInsufficientStorage;
}

int BackoffMs(const RetryPolicy& p, int attempt, uint64_t seed) {
  int64_t ms = p.backoff_ms;
  for (int i = 2; i < attempt && ms < p.backoff_max_ms; i++) ms *= 2;
  ms = std::min<int64_t>(ms, p.backoff_max_ms);
  // +-25% jitter so that workers do not retry in lock step.
  const int64_t span = ms / 2;
  if (span > 0) ms = ms - span / 2 + static_cast<int64_t>(seed % static_cast<uint64_t>(span + 1));
  return static_cast<int>(ms);
}

int64_t SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool RetryBudget::Again(Code code, int64_t now_ms) {
  attempts_++;
  waiting_ = policy_->max_wait_ms > 0 && WaitsForService(code);
  if (waiting_) {
    if (wait_since_ < 0) wait_since_ = now_ms;
    return now_ms - wait_since_ < policy_->max_wait_ms;
  }
  return ++counted_ < policy_->max_attempts;
}

int RetryBudget::NextBackoffMs(int64_t now_ms, uint64_t seed) const {
  int ms = BackoffMs(*policy_, attempts_ + 1, seed);
  if (waiting_) {
    const int64_t left = wait_since_ + policy_->max_wait_ms - now_ms;
    ms = static_cast<int>(std::clamp<int64_t>(left, 0, ms));
  }
  return ms;
}

std::string RetryBudget::GaveUp(int64_t now_ms) const {
  if (waiting_) {
    return "gave up after waiting " + std::to_string(waited_ms(now_ms) / 1000) +
           " s for the service (retry.max_wait_seconds " +
           std::to_string(policy_->max_wait_ms / 1000) + ")";
  }
  return "gave up after " + std::to_string(attempts_) + " attempts";
}

}  // namespace sidetable::apply
