#include "apply/op_applier.h"
#include "apply/move_copy.h"
#include "engine/etag.h"
#include "engine/table_name.h"

#include <charconv>

namespace sidetable::apply {
namespace {

using patterns::TableOp;

Status Contended(const char* what, const std::string& table, const std::string& pk,
                 const std::string& rk, int attempts) {
  return Status(Code::kUpdateConditionNotSatisfied,
                std::string(what) + " " + table + "(" + pk + "," + rk + "): still contended after " +
                    std::to_string(attempts) + " read-check-write rounds");
}

}  // namespace

const char* TableOpKindName(TableOp::Kind kind) {
  switch (kind) {
    case TableOp::Kind::kFencedUpsert: return "FencedUpsert";
    case TableOp::Kind::kFencedDelete: return "FencedDelete";
    case TableOp::Kind::kFencedClear: return "FencedClear";
    case TableOp::Kind::kMove: return "Move";
  }
  return "Unknown";
}

uint64_t SourceVersionOf(const Entity& e) { return FenceOf(e); }

Status OpApplier::EnsureTable(const std::string& table) {
  Status s = store_->CreateTable(table);
  if (s.ok() || s.code() == Code::kTableAlreadyExists) return Status::OK();
  return s;
}

Status OpApplier::Apply(const TableOp& op, OpResult* r) {
  *r = OpResult::kNoop;
  switch (op.kind) {
    case TableOp::Kind::kFencedUpsert: return FencedUpsert(op.table, op.entity, op.version, r);
    case TableOp::Kind::kFencedDelete:
      return FencedDelete(op.table, op.entity.partition_key, op.entity.row_key, op.version, r);
    case TableOp::Kind::kFencedClear: return FencedClear(op.table, op.version, r);
    case TableOp::Kind::kMove: return Move(op, r);
  }
  return Status(Code::kInvalidInput, "unknown table operation kind");
}

bool OpApplier::FencedByClear(const std::string& table, uint64_t version) {
  std::lock_guard lock(cleared_mu_);
  if (cleared_.empty()) return false;
  auto it = cleared_.find(TableKey(table));
  return it != cleared_.end() && version <= it->second;
}

Status OpApplier::FencedUpsert(const std::string& table, Entity entity, uint64_t version, OpResult* r) {
  if (FencedByClear(table, version)) {
    *r = OpResult::kFenced;  // from before the source table was deleted
    return Status::OK();
  }
  entity.etag.clear();
  entity.timestamp = 0;
  entity.Set(patterns::kSourceVersionProperty, Value::Int64(static_cast<int64_t>(version)));
  const std::string& pk = entity.partition_key;
  const std::string& rk = entity.row_key;
  for (int i = 0; i < attempts_; i++) {
    auto cur = store_->Get(table, pk, rk);
    if (cur.ok()) {
      if (SourceVersionOf(*cur) >= version) {
        *r = OpResult::kFenced;
        return Status::OK();
      }
      auto w = store_->Update(table, entity, cur->etag);
      if (w.ok()) {
        *r = OpResult::kWritten;
        return Status::OK();
      }
      const Code c = w.status().code();
      if (c == Code::kUpdateConditionNotSatisfied || c == Code::kResourceNotFound) continue;
      if (c == Code::kTableNotFound) {
        ST_RETURN_IF_ERROR(EnsureTable(table));
        continue;
      }
      return w.status();
    }
    const Code gc = cur.status().code();
    if (gc == Code::kTableNotFound) {
      ST_RETURN_IF_ERROR(EnsureTable(table));
      continue;
    }
    if (gc != Code::kResourceNotFound) return cur.status();
    auto w = store_->Insert(table, entity);
    if (w.ok()) {
      *r = OpResult::kWritten;
      return Status::OK();
    }
    const Code c = w.status().code();
    if (c == Code::kEntityAlreadyExists) continue;
    if (c == Code::kTableNotFound) {
      ST_RETURN_IF_ERROR(EnsureTable(table));
      continue;
    }
    return w.status();
  }
  return Contended("fenced upsert", table, pk, rk, attempts_);
}

Status OpApplier::FencedDelete(const std::string& table, const std::string& pk, const std::string& rk,
                               uint64_t version, OpResult* r) {
  for (int i = 0; i < attempts_; i++) {
    auto cur = store_->Get(table, pk, rk);
    if (!cur.ok()) {
      const Code c = cur.status().code();
      if (c == Code::kResourceNotFound || c == Code::kTableNotFound) {
        *r = OpResult::kNoop;
        return Status::OK();
      }
      return cur.status();
    }
    if (SourceVersionOf(*cur) > version) {
      *r = OpResult::kFenced;
      return Status::OK();
    }
    auto w = store_->Delete(table, pk, rk, cur->etag);
    if (w.ok()) {
      *r = OpResult::kWritten;
      return Status::OK();
    }
    const Code c = w.status().code();
    if (c == Code::kResourceNotFound || c == Code::kTableNotFound) {
      *r = OpResult::kNoop;
      return Status::OK();
    }
    if (c != Code::kUpdateConditionNotSatisfied) return w.status();
  }
  return Contended("fenced delete", table, pk, rk, attempts_);
}

Status OpApplier::FencedClear(const std::string& table, uint64_t version, OpResult* r) {
  Continuation next;
  bool wrote = false, fenced = false;
  do {
    auto page = store_->QueryPage(table, "", next);
    if (!page.ok()) {
      if (page.status().code() == Code::kTableNotFound) break;
      return page.status();
    }
    for (const Entity& e : page->entities) {
      if (SourceVersionOf(e) > version) {
        fenced = true;
        continue;
      }
      auto w = store_->Delete(table, e.partition_key, e.row_key, e.etag);
      if (w.ok()) {
        wrote = true;
        continue;
      }
      const Code c = w.status().code();
      if (c == Code::kResourceNotFound) continue;
      if (c == Code::kTableNotFound) return Status::OK();
      if (c != Code::kUpdateConditionNotSatisfied) return w.status();
      // Changed since the page was read: decide again on the current state.
      OpResult one;
      ST_RETURN_IF_ERROR(FencedDelete(table, e.partition_key, e.row_key, version, &one));
      wrote |= one == OpResult::kWritten;
      fenced |= one == OpResult::kFenced;
    }
    next = page->next;
  } while (next);
  *r = wrote ? OpResult::kWritten : fenced ? OpResult::kFenced : OpResult::kNoop;
  // A cluster's clear (patterns::ClearVersion) covers whole epochs, which
  // the re-created table's entities may share: remembered, it would drop
  // them.
  if (version > patterns::kMaxStampedLsn) return Status::OK();
  std::lock_guard lock(cleared_mu_);
  uint64_t& cleared = cleared_[TableKey(table)];
  cleared = std::max(cleared, version);
  return Status::OK();
}

Status OpApplier::ConfirmCopy(const TableOp& op, uint64_t version) {
  const std::string& pk = op.entity.partition_key;
  const std::string& rk = op.entity.row_key;
  auto held = store_->Get(op.table, pk, rk);
  if (held.ok() && SourceVersionOf(*held) == version) return Status::OK();  // copied before
  if (!held.ok() && held.status().code() != Code::kResourceNotFound &&
      held.status().code() != Code::kTableNotFound) {
    return NameMove(op, held.status());
  }
  // Permanent (not transient): retrying finds the same archive entity; the
  // worker reports the entity as one that cannot be moved, and it stays.
  const std::string holder =
      held.ok()
          ? "an entity with these keys at SourceVersion " + std::to_string(SourceVersionOf(*held)) +
                ", newer than this entity's version " + std::to_string(version) +
                " (not a copy of it: another table's entity archived there, or one written there "
                "directly)"
          : "no copy: the fenced copy was not written";
  return Status(Code::kInvalidInput, "move " + MoveName(op) +
                                         ": cannot be archived: the archive holds " + holder +
                                         "; the entity stays in the source");
}

Status OpApplier::Move(const TableOp& op, OpResult* r) {
  const std::string& pk = op.entity.partition_key;
  const std::string& rk = op.entity.row_key;
  for (int i = 0; i < attempts_; i++) {
    auto src = store_->Get(op.source_table, pk, rk);
    if (!src.ok()) {
      const Code c = src.status().code();
      if (c == Code::kResourceNotFound || c == Code::kTableNotFound) {
        *r = OpResult::kNoop;  // already moved (or deleted): nothing to do
        return Status::OK();
      }
      return NameMove(op, src.status());
    }
    const std::string copied_etag = src->etag;
    const uint64_t version = VersionFromETag(copied_etag).value_or(op.version);
    if (i == 0 && op.version != 0 && version > op.version) {
      // Rewritten after the move was decided (rule query or request):
      // the decision is stale; the next decision sees the new state.
      *r = OpResult::kFenced;
      return Status::OK();
    }
    // An entity whose copy cannot fit stays in the source (move_copy.h).
    ST_RETURN_IF_ERROR(CheckMoveCopy(op, *src));
    OpResult upsert;
    ST_RETURN_IF_ERROR(NameMove(op, FencedUpsert(op.table, *src, version, &upsert)));
    if (upsert == OpResult::kFenced) ST_RETURN_IF_ERROR(ConfirmCopy(op, version));
    auto d = store_->Delete(op.source_table, pk, rk, copied_etag);
    if (d.ok()) {
      *r = OpResult::kWritten;
      return Status::OK();
    }
    const Code c = d.status().code();
    if (c == Code::kResourceNotFound || c == Code::kTableNotFound) {
      *r = OpResult::kWritten;  // the copy is made; the source went away meanwhile
      return Status::OK();
    }
    if (c != Code::kUpdateConditionNotSatisfied) return NameMove(op, d.status());
    // The source changed after the copy: copy the new state, then try again.
  }
  return Contended("move", op.source_table, pk, rk, attempts_);
}

}  // namespace sidetable::apply
