// FakeTableStore: an in-memory TableStore with the engine's ETag rules
// (W/"<n>" from one global counter), plus hooks to inject a concurrent
// writer or failures before any call.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "apply/table_store.h"

namespace sidetable::apply::testing {

class FakeTableStore : public TableStore {
 public:
  // Runs before every call with the call's name ("Get", "Insert", ...); a
  // non-OK status is returned instead of executing it.
  std::function<Status(const std::string& call, const std::string& table)> before;
  size_t page_size = 2;
  // When set, every entity written (Insert, Update, a batch's upserts) must
  // pass it, as the engine's limits (ValidateEntity); a batch fails naming
  // the operation.
  std::function<Status(const Entity& e)> validate;
  std::map<std::string, int> calls;

  using Rows = std::map<std::pair<std::string, std::string>, Entity>;
  std::map<std::string, Rows> tables;
  uint64_t next_version = 100;

  // Direct writes, as another client would do them.
  Entity& Put(const std::string& table, Entity e) {
    e.etag = "W/\"" + std::to_string(next_version++) + "\"";
    auto& slot = tables[table][{e.partition_key, e.row_key}];
    slot = std::move(e);
    return slot;
  }
  const Entity* Find(const std::string& table, const std::string& pk, const std::string& rk) const {
    auto t = tables.find(table);
    if (t == tables.end()) return nullptr;
    auto it = t->second.find({pk, rk});
    return it == t->second.end() ? nullptr : &it->second;
  }

  Result<Entity> Get(const std::string& table, const std::string& pk, const std::string& rk) override {
    ST_RETURN_IF_ERROR(Hook("Get", table));
    if (!tables.count(table)) return Status(Code::kTableNotFound, table);
    const Entity* e = Find(table, pk, rk);
    if (!e) return Status(Code::kResourceNotFound, pk + "/" + rk);
    return *e;
  }
  Result<WriteResult> Insert(const std::string& table, const Entity& e) override {
    ST_RETURN_IF_ERROR(Hook("Insert", table));
    if (!tables.count(table)) return Status(Code::kTableNotFound, table);
    if (Find(table, e.partition_key, e.row_key)) return Status(Code::kEntityAlreadyExists, "exists");
    if (validate) ST_RETURN_IF_ERROR(validate(e));
    return Written(Put(table, e));
  }
  Result<WriteResult> Update(const std::string& table, const Entity& e, const std::string& if_match) override {
    ST_RETURN_IF_ERROR(Hook("Update", table));
    if (!tables.count(table)) return Status(Code::kTableNotFound, table);
    const Entity* cur = Find(table, e.partition_key, e.row_key);
    if (!cur) return Status(Code::kResourceNotFound, "missing");
    if (if_match != "*" && cur->etag != if_match) return Status(Code::kUpdateConditionNotSatisfied, "etag");
    if (validate) ST_RETURN_IF_ERROR(validate(e));
    return Written(Put(table, e));
  }
  Result<WriteResult> Delete(const std::string& table, const std::string& pk, const std::string& rk,
                             const std::string& if_match) override {
    ST_RETURN_IF_ERROR(Hook("Delete", table));
    if (!tables.count(table)) return Status(Code::kTableNotFound, table);
    const Entity* cur = Find(table, pk, rk);
    if (!cur) return Status(Code::kResourceNotFound, "missing");
    if (if_match != "*" && cur->etag != if_match) return Status(Code::kUpdateConditionNotSatisfied, "etag");
    tables[table].erase({pk, rk});
    return WriteResult{};
  }
  Status CreateTable(const std::string& table) override {
    ST_RETURN_IF_ERROR(Hook("CreateTable", table));
    if (tables.count(table)) return Status(Code::kTableAlreadyExists, table);
    tables[table];
    return Status::OK();
  }
  // Ignores the filter (tests of the applier do not need it); pages of page_size.
  Result<Page> QueryPage(const std::string& table, const std::string& filter, const Continuation& next) override {
    ST_RETURN_IF_ERROR(Hook("Query", table));
    last_filter = filter;
    if (!tables.count(table)) return Status(Code::kTableNotFound, table);
    Page p;
    const Rows& rows = tables[table];
    auto it = next ? rows.lower_bound(*next) : rows.begin();
    for (; it != rows.end() && p.entities.size() < page_size; ++it) p.entities.push_back(it->second);
    if (it != rows.end()) p.next = it->first;
    return p;
  }
  std::string last_filter;

  // Pipelined EGTs: executed at once (all or nothing, the engine's fencing
  // rules for the fenced kinds and If-Match deletes), their callbacks deferred to Flush() in
  // reverse order, so tests see completions out of order as on a real
  // connection. `write_hook` sees each batch first; a non-OK status fails
  // the whole batch (with its op index, if any).
  std::function<Status(const Batch& batch)> write_hook;
  std::vector<Batch> writes;  // every batch sent, in order

  void SendWrite(const Batch& batch, WriteDone done) override {
    writes.push_back(batch);
    Result<WriteResult> r = ExecuteBatch(batch);
    deferred_.push_back([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
  }
  void SendGet(const std::string& table, const std::string& pk, const std::string& rk, GetDone done) override {
    Result<Entity> r = Get(table, pk, rk);
    deferred_.push_back([done = std::move(done), r = std::move(r)]() mutable { done(std::move(r)); });
  }
  void Flush() override {
    while (!deferred_.empty()) {
      auto batch = std::move(deferred_);
      deferred_.clear();
      for (auto it = batch.rbegin(); it != batch.rend(); ++it) (*it)();
    }
  }

 private:
  std::vector<std::function<void()>> deferred_;

  Result<WriteResult> ExecuteBatch(const Batch& batch) {
    ST_RETURN_IF_ERROR(Hook("Write", batch.table()));
    if (write_hook) ST_RETURN_IF_ERROR(write_hook(batch));
    if (!tables.count(batch.table())) return Status(Code::kTableNotFound, batch.table());
    WriteResult w;
    Rows next = tables[batch.table()];
    const auto& ops = batch.operations();
    for (uint32_t i = 0; i < ops.size(); i++) {
      const Operation& op = ops[i];
      auto key = std::make_pair(op.entity.partition_key, op.entity.row_key);
      auto it = next.find(key);
      const uint64_t stored = it == next.end() ? 0 : FenceOf(it->second);
      if (op.kind == OpKind::kFencedUpsert) {
        if (validate) {
          if (Status s = validate(op.entity); !s.ok()) return s.WithOpIndex(static_cast<int>(i));
        }
        if (it != next.end() && stored >= op.fence) {
          w.skipped.push_back(i);
          w.etags.emplace_back();
          continue;
        }
        Entity e = op.entity;
        e.etag = "W/\"" + std::to_string(next_version++) + "\"";
        w.etags.push_back(e.etag);
        next[key] = std::move(e);
      } else if (op.kind == OpKind::kFencedDelete) {
        if (it == next.end() || stored > op.fence) {
          w.skipped.push_back(i);
        } else {
          next.erase(it);
        }
        w.etags.emplace_back();
      } else if (op.kind == OpKind::kDelete) {
        // As the engine: absent is ResourceNotFound, another ETag a 412, naming the operation.
        if (it == next.end())
          return Status(Code::kResourceNotFound, "missing", static_cast<int>(i));
        if (op.if_match != "*" && it->second.etag != op.if_match) {
          return Status(Code::kUpdateConditionNotSatisfied, "etag", static_cast<int>(i));
        }
        next.erase(it);
        w.etags.emplace_back();
      } else {
        return Status(Code::kInvalidInput, "the fake runs fenced batches and deletes only",
                      static_cast<int>(i));
      }
    }
    tables[batch.table()] = std::move(next);
    return w;
  }

  Status Hook(const std::string& call, const std::string& table) {
    calls[call]++;
    return before ? before(call, table) : Status::OK();
  }
  static WriteResult Written(const Entity& e) {
    WriteResult w;
    w.etags.push_back(e.etag);
    return w;
  }
};

}  // namespace sidetable::apply::testing
