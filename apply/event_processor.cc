#include "apply/event_processor.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "events/event.h"

namespace sidetable::apply {

const char* FailureKindName(FailureKind kind) {
  switch (kind) {
    case FailureKind::kDecode: return "decode";
    case FailureKind::kPattern: return "pattern";
    case FailureKind::kPermanent: return "permanent";
    case FailureKind::kRetriesExhausted: return "retries_exhausted";
  }
  return "unknown";
}

bool IsTransient(Code code) {
  switch (code) {
    case Code::kServerBusy:
    case Code::kUnavailable:
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

int BackoffMs(const RetryPolicy& p, int attempt, uint64_t seed) {
  int64_t ms = p.backoff_ms;
  for (int i = 2; i < attempt && ms < p.backoff_max_ms; i++) ms *= 2;
  ms = std::min<int64_t>(ms, p.backoff_max_ms);
  // +-25% jitter so that workers do not retry in lock step.
  const int64_t span = ms / 2;
  if (span > 0) ms = ms - span / 2 + static_cast<int64_t>(seed % static_cast<uint64_t>(span + 1));
  return static_cast<int>(ms);
}

EventOutcome EventProcessor::Process(std::string_view value) {
  EventOutcome out;
  events::Event ev;
  if (Status s = events::DecodeEvent(value, &ev); !s.ok()) {
    out.kind = EventOutcome::Kind::kDeadLetter;
    out.reason_kind = FailureKind::kDecode;
    out.reason = "decode: " + s.ToString();
    return out;
  }
  const ChangeRecord& rec = ev.record;
  out.lsn = rec.lsn;
  std::vector<patterns::TableOp> ops;
  for (const auto& p : *patterns_) {
    if (!p->Wants(rec)) continue;
    if (Status s = p->Apply(rec, &ops); !s.ok()) {
      out.kind = EventOutcome::Kind::kDeadLetter;
      out.reason_kind = FailureKind::kPattern;
      out.reason = "pattern " + p->name() + ": " + s.ToString();
      return out;
    }
  }
  out.operations = ops.size();
  if (ops.empty()) {
    observer_->OnSkippedEvent();
    return out;
  }
  Status last;
  for (int attempt = 1; attempt <= policy_.max_attempts; attempt++) {
    if (attempt > 1) {
      observer_->OnRetry();
      jitter_ = jitter_ * 6364136223846793005ull + 1442695040888963407ull;
      const int wait = BackoffMs(policy_, attempt, jitter_ >> 33);
      spdlog::warn("lsn={} table={} pk={}: attempt {}/{} after {} ms: {}", rec.lsn, rec.table,
                   rec.partition_key, attempt, policy_.max_attempts, wait, last.ToString());
      if (!sleep_(wait)) {
        out.kind = EventOutcome::Kind::kInterrupted;
        out.reason = "stopped during back-off: " + last.ToString();
        return out;
      }
    }
    last = Status::OK();
    for (const auto& op : ops) {
      OpResult r;
      last = applier_->Apply(op, &r);
      if (!last.ok()) break;
      observer_->OnOp(op.kind, r);
    }
    if (last.ok()) {
      spdlog::debug("lsn={} table={} pk={}: {} operation(s) applied", rec.lsn, rec.table,
                   rec.partition_key, ops.size());
      return out;
    }
    if (!IsTransient(last.code())) {
      out.kind = EventOutcome::Kind::kDeadLetter;
      out.reason_kind = FailureKind::kPermanent;
      out.reason = "apply: " + last.ToString();
      return out;
    }
  }
  out.kind = EventOutcome::Kind::kDeadLetter;
  out.reason_kind = FailureKind::kRetriesExhausted;
  out.reason = "apply: gave up after " + std::to_string(policy_.max_attempts) + " attempts: " + last.ToString();
  return out;
}

}  // namespace sidetable::apply
