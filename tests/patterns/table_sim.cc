#include "tests/patterns/table_sim.h"

#include <algorithm>

#include "engine/etag.h"
#include "patterns/common.h"

namespace sidetable::patterns::testing {

namespace {

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

int64_t StoredVersion(const Entity& e) {
  const Value* v = e.Find(kSourceVersionProperty);
  return v == nullptr ? 0 : v->as_int64();
}

}  // namespace

Table& TableStore::table(const std::string& name) { return tables_[Lower(name)]; }

std::vector<Entity> TableStore::Contents(const std::string& name) const {
  std::vector<Entity> out;
  auto it = tables_.find(Lower(name));
  if (it == tables_.end()) return out;
  for (const auto& [key, e] : it->second) {
    Entity copy = e;
    copy.timestamp = 0;
    copy.etag.clear();
    out.push_back(std::move(copy));
  }
  return out;
}

bool TableStore::operator==(const TableStore& o) const {
  auto same = [](const Table& a, const Table& b) {
    return a.size() == b.size() &&
           std::equal(a.begin(), a.end(), b.begin(), [](const auto& x, const auto& y) {
             return x.first == y.first && x.second.properties == y.second.properties &&
                    x.second.timestamp == y.second.timestamp && x.second.etag == y.second.etag;
           });
  };
  // An empty table equals an absent one.
  for (const auto& [name, t] : tables_) {
    auto it = o.tables_.find(name);
    if (!same(t, it == o.tables_.end() ? Table() : it->second)) return false;
  }
  for (const auto& [name, t] : o.tables_) {
    if (!tables_.count(name) && !t.empty()) return false;
  }
  return true;
}

void TableStore::Apply(const TableOp& op) {
  const auto v = static_cast<int64_t>(op.version);
  Key key{op.entity.partition_key, op.entity.row_key};
  switch (op.kind) {
    case TableOp::Kind::kFencedUpsert: {
      Table& t = table(op.table);
      auto it = t.find(key);
      if (it != t.end() && StoredVersion(it->second) >= v) return;
      Entity e = op.entity;
      e.Set(kSourceVersionProperty, Value::Int64(v));
      t[key] = std::move(e);
      return;
    }
    case TableOp::Kind::kFencedDelete: {
      Table& t = table(op.table);
      auto it = t.find(key);
      if (it != t.end() && StoredVersion(it->second) <= v) t.erase(it);
      return;
    }
    case TableOp::Kind::kFencedClear: {
      Table& t = table(op.table);
      std::erase_if(t, [&](const auto& kv) { return StoredVersion(kv.second) <= v; });
      return;
    }
    case TableOp::Kind::kMove: {
      Table& source = table(op.source_table);
      auto it = source.find(key);
      if (it == source.end()) return;
      auto state = VersionFromETag(it->second.etag);
      if (!state || *state > op.version) return;  // written after the request: stays
      TableOp copy;
      copy.kind = TableOp::Kind::kFencedUpsert;
      copy.table = op.table;
      copy.entity = it->second;
      copy.entity.timestamp = 0;
      copy.entity.etag.clear();
      copy.version = *state;
      // Single-threaded: the ETag cannot change between copy and delete.
      source.erase(it);
      Apply(copy);
      return;
    }
  }
}

Entity MakeEntity(std::string pk, std::string rk, std::vector<Property> props) {
  Entity e;
  e.partition_key = std::move(pk);
  e.row_key = std::move(rk);
  e.properties = std::move(props);
  return e;
}

ChangeRecord SourceSim::Write(OpKind kind, Entity e) {
  ChangeRecord r;
  r.lsn = lsn_++;
  r.kind = ChangeKind::kEntities;
  r.table = table_;
  r.partition_key = e.partition_key;
  ChangeOp op;
  op.row_key = e.row_key;
  op.kind = kind;
  op.version = r.lsn;
  Key key{e.partition_key, e.row_key};
  auto it = rows_.find(key);
  if (it != rows_.end()) op.before = it->second;
  if (kind == OpKind::kDelete) {
    if (it != rows_.end()) rows_.erase(it);
  } else {
    Entity after = e;
    bool merge = kind == OpKind::kMerge || kind == OpKind::kInsertOrMerge;
    if (merge && op.before) {
      after = *op.before;
      for (const auto& p : e.properties) after.Set(p.name, p.value);
    }
    after.timestamp = static_cast<int64_t>(r.lsn);
    after.etag = "W/\"" + std::to_string(r.lsn) + "\"";
    op.etag = after.etag;
    op.after = after;
    rows_[key] = std::move(after);
  }
  r.ops.push_back(std::move(op));
  return r;
}

ChangeRecord SourceSim::DeleteTable() {
  ChangeRecord r;
  r.lsn = lsn_++;
  r.kind = ChangeKind::kTableDeleted;
  r.table = table_;
  rows_.clear();
  return r;
}

ChangeRecord SourceSim::RequestArchive(const std::string& pk, const std::vector<std::string>& rks,
                                       const std::string& target) {
  ChangeRecord r;
  r.lsn = lsn_++;
  r.kind = ChangeKind::kArchiveRequested;
  r.table = table_;
  r.partition_key = pk;
  r.target_table = target;
  for (const auto& rk : rks) {
    ChangeOp op;
    op.row_key = rk;
    op.kind = OpKind::kDelete;
    r.ops.push_back(std::move(op));
  }
  return r;
}

std::vector<Entity> SourceSim::Entities() const {
  std::vector<Entity> out;
  for (const auto& [key, e] : rows_) out.push_back(e);
  return out;
}

}  // namespace sidetable::patterns::testing
