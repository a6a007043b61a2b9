#include "apply/grouped_moves.h"

#include <map>
#include <set>

#include "apply/event_processor.h"
#include "apply/move_copy.h"
#include "engine/etag.h"
#include "engine/limits.h"
#include "engine/table_name.h"

namespace sidetable::apply {
namespace {

using Kind = patterns::TableOp::Kind;

struct Pending {
  const MoveItem* item;
  patterns::TableOp copy;  // the fenced upsert into the target; its entity keeps the ETag copied
};

// One entity's failure into its event's slot. The first failure wins, except
// that a transient one replaces a permanent one: the event is then retried
// whole, one move at a time with back-off (moves are idempotent), and that
// path reports the permanent failure again once the rest is done.
void FailEvent(std::vector<EventFailure>* failures, size_t event, const EventFailure& f) {
  EventFailure& slot = (*failures)[event];
  if (slot.interrupted) return;
  if (f.interrupted) {
    if (slot.status.ok()) slot.status = f.status;
    slot.interrupted = true;
    return;
  }
  if (slot.status.ok() || (slot.permanent && !f.permanent)) {
    slot.status = f.status;
    slot.permanent = f.permanent;
  }
}

}  // namespace

void MoveMany(TableStore* store, OpApplier* applier, GroupedWrites* writes, const std::vector<MoveItem>& items,
              std::vector<EventFailure>* failures, ApplyObserver* observer, uint64_t* moved) {
  *moved = 0;
  // 1. The sources: pipelined reads of those the caller does not hold.
  std::vector<std::optional<Result<Entity>>> read(items.size());
  for (size_t i = 0; i < items.size(); i++) {
    if (items[i].source) continue;
    const patterns::TableOp& op = *items[i].op;
    store->SendGet(op.source_table, op.entity.partition_key, op.entity.row_key,
                   [&read, i](Result<Entity> r) { read[i] = std::move(r); });
  }
  store->Flush();

  std::vector<Pending> pending;
  pending.reserve(items.size());
  auto alone = [&](const MoveItem& item) {
    OpResult r;
    Status s = applier->Apply(*item.op, &r);
    if (!s.ok()) {
      FailEvent(failures, item.event, EventFailure{s, !IsTransient(s.code()), false});
      return;
    }
    observer->OnOp(Kind::kMove, r);
    if (r == OpResult::kWritten) ++*moved;
  };
  for (size_t i = 0; i < items.size(); i++) {
    const MoveItem& item = items[i];
    const patterns::TableOp& op = *item.op;
    Entity src;
    if (item.source) {
      src = *item.source;
    } else if (read[i] && read[i]->ok()) {
      src = std::move(read[i]->value());
    } else if (read[i] && (read[i]->status().code() == Code::kResourceNotFound ||
                           read[i]->status().code() == Code::kTableNotFound)) {
      observer->OnOp(Kind::kMove, OpResult::kNoop);  // already moved, or deleted
      continue;
    } else {
      alone(item);  // a read that failed otherwise: the one-at-a-time path decides
      continue;
    }
    const uint64_t version = VersionFromETag(src.etag).value_or(op.version);
    if (op.version != 0 && version > op.version) {
      observer->OnOp(Kind::kMove, OpResult::kFenced);  // rewritten after the decision
      continue;
    }
    if (Status fits = CheckMoveCopy(op, src); !fits.ok()) {
      FailEvent(failures, item.event, EventFailure{fits, true, false});  // this entity alone
      continue;
    }
    Pending p{&item, {}};
    p.copy.kind = Kind::kFencedUpsert;
    p.copy.table = op.table;
    p.copy.entity = std::move(src);
    p.copy.version = version;
    pending.push_back(std::move(p));
  }
  if (pending.empty()) return;

  // 2. The copies, grouped per target partition (fenced: a replayed move
  // never overwrites a newer copy). Their failures are kept per entity: one
  // copy that fails must not hold back the deletes of the others, even of
  // its own event (they would stay in both tables).
  std::vector<EventOp> copies;
  copies.reserve(pending.size());
  for (size_t i = 0; i < pending.size(); i++) copies.push_back({&pending[i].copy, i});
  std::vector<EventFailure> copied(pending.size());
  std::vector<const patterns::TableOp*> not_written;
  writes->Apply(copies, &copied, &not_written);
  // A copy that was not written (the archive already holds these keys at a
  // version as new or newer, or another move in this batch copied to the same
  // keys) may not be this entity's: deleting its source could leave it in
  // neither table. The one-at-a-time Move reads the archive and decides.
  std::set<const patterns::TableOp*> unconfirmed(not_written.begin(), not_written.end());

  // 3. The deletes If-Match, grouped per source partition, of the copied ones.
  std::vector<const MoveItem*> redo;
  std::map<std::pair<std::string, std::string>, std::vector<Pending*>> groups;
  for (size_t i = 0; i < pending.size(); i++) {
    Pending& p = pending[i];
    if (!copied[i].status.ok() || copied[i].interrupted) {
      EventFailure f = copied[i];
      f.status = NameMove(*p.item->op, f.status);
      FailEvent(failures, p.item->event, f);
      continue;
    }
    if (unconfirmed.count(&p.copy) != 0) {
      redo.push_back(p.item);
      continue;
    }
    std::string key;
    AppendTableKey(p.item->op->source_table, &key);
    groups[{key, p.item->op->entity.partition_key}].push_back(&p);
  }
  std::vector<std::vector<Pending*>> todo;
  for (auto& [k, g] : groups) {
    for (size_t at = 0; at < g.size(); at += Limits::kMaxBatchOperations) {
      const size_t end = std::min(g.size(), at + Limits::kMaxBatchOperations);
      todo.emplace_back(g.begin() + static_cast<std::ptrdiff_t>(at), g.begin() + static_cast<std::ptrdiff_t>(end));
    }
  }
  while (!todo.empty()) {
    std::vector<Status> results(todo.size());
    for (size_t gi = 0; gi < todo.size(); gi++) {
      Batch b(todo[gi].front()->item->op->source_table);
      for (Pending* p : todo[gi]) {
        b.Delete(p->item->op->entity.partition_key, p->item->op->entity.row_key, p->copy.entity.etag);
      }
      store->SendWrite(b, [&results, gi](Result<WriteResult> r) { results[gi] = r.ok() ? Status::OK() : r.status(); });
    }
    store->Flush();
    std::vector<std::vector<Pending*>> next;
    for (size_t gi = 0; gi < todo.size(); gi++) {
      std::vector<Pending*>& g = todo[gi];
      const Status& s = results[gi];
      if (s.ok()) {
        for (size_t k = 0; k < g.size(); k++) {
          observer->OnOp(Kind::kMove, OpResult::kWritten);
          ++*moved;
        }
        continue;
      }
      const Code c = s.code();
      const int bad = s.op_index();
      if ((c == Code::kUpdateConditionNotSatisfied || c == Code::kResourceNotFound) && bad >= 0 &&
          static_cast<size_t>(bad) < g.size()) {
        // That source changed (or went away) after its copy: alone, again.
        redo.push_back(g[static_cast<size_t>(bad)]->item);
        g.erase(g.begin() + bad);
        if (!g.empty()) next.push_back(std::move(g));
        continue;
      }
      for (Pending* p : g) redo.push_back(p->item);  // anything else: one at a time decides
    }
    todo = std::move(next);
  }
  for (const MoveItem* item : redo) alone(*item);
}

}  // namespace sidetable::apply
