// FakeTableStore: an in-memory TableStore with the engine's ETag rules
// (W/"<n>" from one global counter), plus hooks to inject a concurrent
// writer or failures before any call.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>

#include "apply/table_store.h"

namespace sidetable::apply::testing {

class FakeTableStore : public TableStore {
 public:
  // Runs before every call with the call's name ("Get", "Insert", ...); a
  // non-OK status is returned instead of executing it.
  std::function<Status(const std::string& call, const std::string& table)> before;
  size_t page_size = 2;
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
    return Written(Put(table, e));
  }
  Result<WriteResult> Update(const std::string& table, const Entity& e, const std::string& if_match) override {
    ST_RETURN_IF_ERROR(Hook("Update", table));
    if (!tables.count(table)) return Status(Code::kTableNotFound, table);
    const Entity* cur = Find(table, e.partition_key, e.row_key);
    if (!cur) return Status(Code::kResourceNotFound, "missing");
    if (if_match != "*" && cur->etag != if_match) return Status(Code::kUpdateConditionNotSatisfied, "etag");
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

 private:
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
