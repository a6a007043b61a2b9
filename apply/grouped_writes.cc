#include "apply/grouped_writes.h"

#include <spdlog/spdlog.h>

#include <map>
#include <unordered_map>

#include "apply/event_processor.h"
#include "engine/limits.h"
#include "engine/table_name.h"

namespace sidetable::apply {
namespace {

using Kind = patterns::TableOp::Kind;

constexpr size_t kMaxGroupBytes = 3u << 20;      // under the 4 MiB EGT payload limit

struct Group {
  Group(std::string t, const RetryPolicy* policy) : table(std::move(t)), budget(policy) {}
  std::string table;
  std::vector<EventOp> ops;
  int creates = 0;       // of its table after TableNotFound, at most max_attempts
  RetryBudget budget;    // its transient failures
  bool backoff = false;  // its last failure was transient
  Status last;
  std::vector<uint32_t> skipped;  // of the last successful write, ascending
};

size_t OpBytes(const patterns::TableOp& op) { return EntitySize(op.entity) + 32; }

Batch BuildBatch(const Group& g) {
  Batch b(g.table);
  b.Reserve(g.ops.size());
  for (const EventOp& eo : g.ops) {
    const patterns::TableOp& op = *eo.op;
    if (op.kind == Kind::kFencedUpsert) {
      Entity e = op.entity;
      e.etag.clear();
      e.timestamp = 0;
      e.Set(patterns::kSourceVersionProperty, Value::Int64(static_cast<int64_t>(op.version)));
      b.FencedUpsert(std::move(e), op.version);
    } else {
      b.FencedDelete(op.entity.partition_key, op.entity.row_key, op.version);
    }
  }
  return b;
}

void Fail(std::vector<EventFailure>* failures, size_t event, Status s, bool permanent) {
  EventFailure& f = (*failures)[event];
  if (!f.status.ok() || f.interrupted) return;  // the first failure wins
  f.status = std::move(s);
  f.permanent = permanent;
}

}  // namespace

void GroupedWrites::Apply(const std::vector<EventOp>& ops, std::vector<EventFailure>* failures,
                          std::vector<const patterns::TableOp*>* not_written) {
  auto unwritten = [not_written](const patterns::TableOp* op) {
    if (not_written != nullptr) not_written->push_back(op);
  };
  // 1. Coalesce per target entity: the highest version wins (the last on a tie).
  std::vector<EventOp> chosen;
  chosen.reserve(ops.size());
  std::unordered_map<std::string, size_t> slot;
  slot.reserve(ops.size());
  std::string key;
  for (const EventOp& eo : ops) {
    const patterns::TableOp& op = *eo.op;
    if (op.kind == Kind::kFencedUpsert && applier_->FencedByClear(op.table, op.version)) {
      observer_->OnOp(op.kind, OpResult::kFenced);  // from before the source table was deleted
      unwritten(&op);
      continue;
    }
    key.clear();
    AppendTableKey(op.table, &key);
    key.push_back('\0');
    key += op.entity.partition_key;
    key.push_back('\0');
    key += op.entity.row_key;
    auto [it, fresh] = slot.try_emplace(key, chosen.size());
    if (fresh) {
      chosen.push_back(eo);
    } else if (op.version >= chosen[it->second].op->version) {
      observer_->OnOp(chosen[it->second].op->kind, OpResult::kFenced);
      unwritten(chosen[it->second].op);
      chosen[it->second] = eo;
    } else {
      observer_->OnOp(op.kind, OpResult::kFenced);
      unwritten(&op);
    }
  }

  // 2. Groups per (table, PartitionKey), in order of first appearance.
  std::vector<Group> groups;
  std::map<std::pair<std::string, std::string>, size_t> open;  // the group still filling
  std::vector<size_t> bytes;
  for (const EventOp& eo : chosen) {
    const patterns::TableOp& op = *eo.op;
    key.clear();
    AppendTableKey(op.table, &key);
    auto k = std::make_pair(key, op.entity.partition_key);
    auto it = open.find(k);
    const size_t size = OpBytes(op);
    if (it == open.end() || groups[it->second].ops.size() >= Limits::kMaxBatchOperations ||
        bytes[it->second] + size > kMaxGroupBytes) {
      groups.emplace_back(op.table, policy_);
      bytes.push_back(0);
      open[k] = groups.size() - 1;
      it = open.find(k);
    }
    groups[it->second].ops.push_back(eo);
    bytes[it->second] += size;
  }

  // 3. Rounds: send every unfinished group, wait for all, sort the results.
  std::vector<Group*> todo;
  todo.reserve(groups.size());
  for (Group& g : groups) todo.push_back(&g);
  WaitScope wait_scope(observer_);
  int64_t logged_wait_at = -1;  // a wait is logged when it starts, then every kWaitLogEveryMs
  int64_t wait_started = -1;
  for (int round = 1; !todo.empty(); round++) {
    // The longest back-off of the groups that failed; a group waiting for
    // the service never past the end of its wait.
    const Group* counted = nullptr;  // the first whose failure counts attempts
    const Group* waiting = nullptr;  // the first waiting for the service
    int wait = 0;
    const int64_t now = now_();
    jitter_ = jitter_ * 6364136223846793005ull + 1442695040888963407ull;
    for (Group* g : todo) {
      if (!g->backoff) continue;
      wait = std::max(wait, g->budget.NextBackoffMs(now, jitter_ >> 33));
      if (g->budget.waiting()) {
        if (waiting == nullptr) waiting = g;
      } else if (counted == nullptr) {
        counted = g;
      }
    }
    if (counted != nullptr || waiting != nullptr) {
      observer_->OnRetry();
      if (waiting != nullptr) wait_scope.Waiting(waiting->last);
      if (counted != nullptr) {
        spdlog::warn("{} group(s) of derived writes again in {} ms (round {}): {}", todo.size(),
                     wait, round, counted->last.ToString());
      } else if (logged_wait_at < 0) {
        spdlog::warn(
            "{} group(s) of derived writes: the sidecar is busy or out of reach ({}); "
            "retrying for up to {} s (retry.max_wait_seconds)",
            todo.size(), waiting->last.ToString(), policy_->max_wait_ms / 1000);
        logged_wait_at = wait_started = now;
      } else if (now - logged_wait_at >= kWaitLogEveryMs) {
        spdlog::warn("{} group(s) of derived writes still waiting after {} s (round {}): {}",
                     todo.size(), waiting->budget.waited_ms(now) / 1000, round,
                     waiting->last.ToString());
        logged_wait_at = now;
      } else {
        spdlog::debug("{} group(s) of derived writes again in {} ms (round {}): {}", todo.size(),
                      wait, round, waiting->last.ToString());
      }
      if (!(*sleep_)(wait)) {
        for (Group* g : todo) {
          for (const EventOp& eo : g->ops) {
            EventFailure& f = (*failures)[eo.event];
            if (f.status.ok()) f.status = Status(Code::kUnavailable, "stopped during back-off: " + g->last.ToString());
            f.interrupted = true;
          }
        }
        return;
      }
    }
    for (Group* g : todo) {
      groups_sent_++;
      store_->SendWrite(BuildBatch(*g), [g](Result<WriteResult> r) {
        g->last = r.ok() ? Status::OK() : r.status();
        g->skipped.clear();
        if (r.ok()) g->skipped = std::move(r.value().skipped);
      });
    }
    store_->Flush();
    std::vector<Group*> next;
    for (Group* g : todo) {
      const Status& s = g->last;
      g->backoff = false;
      if (s.ok()) {
        size_t k = 0;
        for (size_t i = 0; i < g->ops.size(); i++) {
          const bool skipped = k < g->skipped.size() && g->skipped[k] == i;
          if (skipped) k++;
          observer_->OnOp(g->ops[i].op->kind, skipped ? OpResult::kFenced : OpResult::kWritten);
          if (skipped) unwritten(g->ops[i].op);
        }
        continue;
      }
      const Code c = s.code();
      if (c == Code::kTableNotFound) {
        // Derived tables appear by themselves.
        Status created = store_->CreateTable(g->table);
        if (created.ok() || created.code() == Code::kTableAlreadyExists) {
          // Bounded by the creations alone: the sends before them may have
          // waited out a busy sidecar (session 46: counted with them, a wait
          // of 9 rounds and then TableNotFound dead-lettered the group).
          if (g->creates++ < policy_->max_attempts) {
            next.push_back(g);
            continue;
          }
        } else {
          g->last = created;
        }
      } else if (IsTransient(c)) {
        // A stop abandons the requests in flight (they fail as time-outs do):
        // on the last attempt too that is no fault of the events, which are
        // left interrupted by the back-off above, not given up.
        const int64_t at = now_();
        if (g->budget.Again(c, at) || !(*sleep_)(0)) {
          g->backoff = true;
          next.push_back(g);
          continue;
        }
        for (const EventOp& eo : g->ops) {
          Fail(failures, eo.event, Status(c, g->budget.GaveUp(at) + ": " + s.ToString()), false);
        }
        continue;
      } else if (s.op_index() >= 0 && static_cast<size_t>(s.op_index()) < g->ops.size()) {
        // That operation's event fails; the others go again at once.
        const size_t bad = static_cast<size_t>(s.op_index());
        Fail(failures, g->ops[bad].event, s.WithOpIndex(-1), true);
        g->ops.erase(g->ops.begin() + static_cast<std::ptrdiff_t>(bad));
        if (!g->ops.empty()) next.push_back(g);
        continue;
      }
      for (const EventOp& eo : g->ops) Fail(failures, eo.event, g->last, true);
    }
    if (next.empty() && wait_started >= 0) {
      spdlog::info("derived writes finished after waiting {} s for the sidecar ({} rounds)",
                   (now_() - wait_started) / 1000, round);
    }
    todo = std::move(next);
  }
}

}  // namespace sidetable::apply
