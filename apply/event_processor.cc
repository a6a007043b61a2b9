#include "apply/event_processor.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "apply/grouped_moves.h"
#include "apply/grouped_writes.h"
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

bool EventProcessor::Prepare(std::string_view value, const EventFence* fence, ChangeRecord* rec,
                             std::vector<patterns::TableOp>* ops, EventOutcome* out) {
  const bool fencing = fence != nullptr && fence->filter != nullptr;
  // An undecodable event leaves the floor as it was.
  if (fencing) out->floor = fence->filter->Floor(fence->partition);
  events::Event ev;
  if (Status s = events::DecodeEvent(value, &ev); !s.ok()) {
    out->kind = EventOutcome::Kind::kDeadLetter;
    out->reason_kind = FailureKind::kDecode;
    out->reason = "decode: " + s.ToString();
    return false;
  }
  *rec = std::move(ev.record);
  out->lsn = rec->lsn;
  if (fencing) {
    // In partition order, before any pattern sees it (docs/scale-out.md).
    const auto verdict = fence->filter->Check(fence->partition, *rec);
    out->floor = fence->filter->Floor(fence->partition);
    if (verdict == events::EpochFilter::Verdict::kClaim) {
      out->skip = EventOutcome::Skip::kClaim;
      return true;
    }
    if (verdict == events::EpochFilter::Verdict::kFenced) {
      out->skip = EventOutcome::Skip::kFenced;
      spdlog::info("lsn={} table={} pk={} epoch={}: fenced (partition {} claimed at epoch {}), skipped",
                   rec->lsn, rec->table, rec->partition_key, rec->epoch, fence->partition, out->floor);
      observer_->OnFencedEvent();
      return true;
    }
  }
  // A claim read without a fence (a tool outside a cluster) applies nothing either.
  if (rec->kind == ChangeKind::kShardClaimed) {
    out->skip = EventOutcome::Skip::kClaim;
    return true;
  }
  for (const auto& p : *patterns_) {
    if (!p->Wants(*rec)) continue;
    if (Status s = p->Apply(*rec, ops); !s.ok()) {
      out->kind = EventOutcome::Kind::kDeadLetter;
      out->reason_kind = FailureKind::kPattern;
      out->reason = "pattern " + p->name() + ": " + s.ToString();
      return false;
    }
  }
  out->operations = ops->size();
  return true;
}

EventOutcome EventProcessor::Process(std::string_view value, const EventFence* fence) {
  EventOutcome out;
  records_.assign(1, ChangeRecord());
  has_record_.assign(1, false);
  std::vector<patterns::TableOp> ops;
  if (!Prepare(value, fence, &records_[0], &ops, &out)) return out;
  has_record_[0] = true;
  if (out.skip != EventOutcome::Skip::kNone) return out;
  if (ops.empty()) {
    observer_->OnSkippedEvent();
    return out;
  }
  ApplyInOrder(records_[0], ops, &out);
  return out;
}

std::vector<EventOutcome> EventProcessor::ProcessBatch(const std::vector<std::string_view>& values,
                                                       const std::vector<EventFence>* fences) {
  std::vector<EventOutcome> outs(values.size());
  records_.assign(values.size(), ChangeRecord());
  has_record_.assign(values.size(), false);
  std::vector<std::vector<patterns::TableOp>> ops(values.size());
  for (size_t i = 0; i < values.size(); i++) {
    const EventFence* fence = fences != nullptr && i < fences->size() ? &(*fences)[i] : nullptr;
    if (Prepare(values[i], fence, &records_[i], &ops[i], &outs[i])) has_record_[i] = true;
  }
  if (store_ == nullptr) {
    for (size_t i = 0; i < values.size(); i++) {
      if (!has_record_[i] || outs[i].skip != EventOutcome::Skip::kNone) continue;
      if (ops[i].empty()) observer_->OnSkippedEvent();
      else ApplyInOrder(records_[i], ops[i], &outs[i]);
    }
    return outs;
  }
  GroupedWrites grouped(store_, applier_, &policy_, observer_, &sleep_, now_);
  std::vector<EventOp> run;      // fenced upserts and deletes of consecutive events
  std::vector<MoveItem> moves;   // moves of consecutive events
  std::vector<EventFailure> failures(values.size());
  bool stopped = false;
  auto flush_run = [&] {
    if (run.empty()) return;
    grouped.Apply(run, &failures);
    run.clear();
  };
  auto flush_moves = [&] {
    if (moves.empty()) return;
    uint64_t moved = 0;
    MoveMany(store_, applier_, &grouped, moves, &failures, observer_, &moved);
    // A move that failed for a passing reason goes through the one-at-a-time
    // path with its back-off (moves are idempotent).
    size_t last = values.size();
    for (const MoveItem& m : moves) {
      if (m.event == last) continue;
      last = m.event;
      EventFailure& f = failures[m.event];
      if (f.status.ok() || f.permanent || f.interrupted) continue;
      f = EventFailure();
      ApplyInOrder(records_[m.event], ops[m.event], &outs[m.event]);
      if (outs[m.event].kind == EventOutcome::Kind::kInterrupted) f.interrupted = true;
    }
    moves.clear();
  };
  auto stop_seen = [&] {
    for (const EventFailure& f : failures) stopped = stopped || f.interrupted;
    return stopped;
  };
  for (size_t i = 0; i < values.size() && !stopped; i++) {
    if (!has_record_[i] || outs[i].skip != EventOutcome::Skip::kNone) continue;
    if (ops[i].empty()) {
      observer_->OnSkippedEvent();
      continue;
    }
    bool fenced = true, all_moves = true;
    for (const auto& op : ops[i]) {
      fenced = fenced && (op.kind == patterns::TableOp::Kind::kFencedUpsert ||
                          op.kind == patterns::TableOp::Kind::kFencedDelete);
      all_moves = all_moves && op.kind == patterns::TableOp::Kind::kMove;
    }
    if (fenced) {
      flush_moves();
      for (const auto& op : ops[i]) run.push_back({&op, i});
      continue;
    }
    if (all_moves) {
      flush_run();
      for (const auto& op : ops[i]) moves.push_back({&op, std::nullopt, i});
      continue;
    }
    // A barrier (a clear, or kinds mixed): what came before first, then it.
    flush_run();
    flush_moves();
    if (stop_seen()) break;
    ApplyInOrder(records_[i], ops[i], &outs[i]);
    stopped = outs[i].kind == EventOutcome::Kind::kInterrupted;
  }
  if (!stopped) {
    flush_run();
    flush_moves();
  }
  // A stop during a back-off: nothing from the first event not fully applied
  // on may be committed (the worker stops its offsets there).
  size_t first_stopped = values.size();
  for (size_t i = 0; i < values.size(); i++) {
    if (failures[i].interrupted || outs[i].kind == EventOutcome::Kind::kInterrupted) {
      first_stopped = i;
      break;
    }
  }
  for (size_t i = 0; i < values.size(); i++) {
    const EventFailure& f = failures[i];
    if (i >= first_stopped) {
      if (outs[i].kind != EventOutcome::Kind::kInterrupted) {
        outs[i].kind = EventOutcome::Kind::kInterrupted;
        // An event after the one interrupted has no failure of its own.
        outs[i].reason = f.status.ok() ? std::string("stopped before it was applied")
                                       : "stopped before it was applied: " + f.status.ToString();
      }
      continue;
    }
    if (outs[i].kind != EventOutcome::Kind::kApplied) continue;
    if (!f.status.ok()) {
      outs[i].kind = EventOutcome::Kind::kDeadLetter;
      outs[i].reason_kind = f.permanent ? FailureKind::kPermanent : FailureKind::kRetriesExhausted;
      outs[i].reason = "apply: " + f.status.ToString();
    }
  }
  return outs;
}

void EventProcessor::ApplyInOrder(const ChangeRecord& rec, const std::vector<patterns::TableOp>& ops,
                                  EventOutcome* out) {
  RetryBudget budget(&policy_);
  Status last;
  int64_t logged_wait_at = -1;  // a wait is logged when it starts, then every kWaitLogEveryMs
  WaitScope wait_scope(observer_);
  for (int attempt = 1;; attempt++) {
    if (attempt > 1) {
      observer_->OnRetry();
      jitter_ = jitter_ * 6364136223846793005ull + 1442695040888963407ull;
      const int64_t now = now_();
      const int wait = budget.NextBackoffMs(now, jitter_ >> 33);
      if (budget.waiting()) {
        wait_scope.Waiting(last);
        if (logged_wait_at < 0) {
          spdlog::warn(
              "lsn={} table={} pk={}: the sidecar is busy or out of reach ({}); "
              "retrying for up to {} s (retry.max_wait_seconds)",
              rec.lsn, rec.table, rec.partition_key, last.ToString(), policy_.max_wait_ms / 1000);
          logged_wait_at = now;
        } else if (now - logged_wait_at >= kWaitLogEveryMs) {
          spdlog::warn("lsn={} table={} pk={}: still waiting after {} s, attempt {}: {}", rec.lsn,
                       rec.table, rec.partition_key, budget.waited_ms(now) / 1000, attempt,
                       last.ToString());
          logged_wait_at = now;
        } else {
          spdlog::debug("lsn={} table={} pk={}: attempt {} after {} ms: {}", rec.lsn, rec.table,
                        rec.partition_key, attempt, wait, last.ToString());
        }
      } else {
        spdlog::warn("lsn={} table={} pk={}: attempt {}/{} after {} ms: {}", rec.lsn, rec.table,
                     rec.partition_key, attempt, policy_.max_attempts, wait, last.ToString());
      }
      if (!sleep_(wait)) {
        out->kind = EventOutcome::Kind::kInterrupted;
        out->reason = "stopped during back-off: " + last.ToString();
        return;
      }
    }
    last = Status::OK();
    // A move that can never succeed (a copy over the limits, ...) does not
    // stop the event's other moves, which concern other entities: they go
    // on, and the event is dead-lettered for that one afterwards.
    Status refused;
    for (const auto& op : ops) {
      OpResult r;
      last = applier_->Apply(op, &r);
      if (!last.ok() && op.kind == patterns::TableOp::Kind::kMove && !IsTransient(last.code())) {
        if (refused.ok()) refused = last;
        last = Status::OK();
        continue;
      }
      if (!last.ok()) break;
      observer_->OnOp(op.kind, r);
    }
    if (last.ok() && !refused.ok()) last = refused;
    if (last.ok()) {
      if (logged_wait_at >= 0) {
        spdlog::info(
            "lsn={} table={} pk={}: applied after waiting {} s for the sidecar ({} attempts)",
            rec.lsn, rec.table, rec.partition_key, budget.waited_ms(now_()) / 1000, attempt);
      } else {
        spdlog::debug("lsn={} table={} pk={}: {} operation(s) applied", rec.lsn, rec.table,
                      rec.partition_key, ops.size());
      }
      return;
    }
    if (!IsTransient(last.code())) {
      out->kind = EventOutcome::Kind::kDeadLetter;
      out->reason_kind = FailureKind::kPermanent;
      out->reason = "apply: " + last.ToString();
      return;
    }
    if (!budget.Again(last.code(), now_())) break;
  }
  if (!sleep_(0)) {
    // A stop abandoned the last attempt's requests: not the event's fault.
    out->kind = EventOutcome::Kind::kInterrupted;
    out->reason = "stopped: " + last.ToString();
    return;
  }
  out->kind = EventOutcome::Kind::kDeadLetter;
  out->reason_kind = FailureKind::kRetriesExhausted;
  out->reason = "apply: " + budget.GaveUp(now_()) + ": " + last.ToString();
}

}  // namespace sidetable::apply
