// Test doubles for the pattern tests: SourceSim, a tiny engine that turns
// writes into ChangeRecords with real before/after images, versions and
// ETags; and TableStore, an in-memory table store that executes TableOps
// exactly as patterns/pattern.h defines their fencing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/batch.h"
#include "engine/change_record.h"
#include "engine/edm.h"
#include "patterns/pattern.h"

namespace sidetable::patterns::testing {

using Key = std::pair<std::string, std::string>;  // (PartitionKey, RowKey)
using Table = std::map<Key, Entity>;

// Tables by lower-cased name.
class TableStore {
 public:
  void Apply(const TableOp& op);
  void ApplyAll(const std::vector<TableOp>& ops) {
    for (const auto& op : ops) Apply(op);
  }
  Table& table(const std::string& name);
  // Sorted entities of a table, without Timestamp and ETag (what verify compares).
  std::vector<Entity> Contents(const std::string& name) const;
  // Same tables with the same entities (keys, properties, Timestamp, ETag).
  bool operator==(const TableStore& o) const;

 private:
  std::map<std::string, Table> tables_;
};

// One source table; each write is one EGT of one op (or a table event) and
// returns its ChangeRecord. `store`, if given, is where rows live (so kMove
// in the same store sees them); otherwise a private table.
class SourceSim {
 public:
  explicit SourceSim(std::string table, uint64_t first_lsn = 1)
      : table_(std::move(table)), lsn_(first_lsn) {}

  ChangeRecord Write(OpKind kind, Entity e);
  ChangeRecord Delete(const std::string& pk, const std::string& rk) {
    Entity e;
    e.partition_key = pk;
    e.row_key = rk;
    return Write(OpKind::kDelete, std::move(e));
  }
  ChangeRecord DeleteTable();
  ChangeRecord RequestArchive(const std::string& pk, const std::vector<std::string>& rks,
                              const std::string& target = "");

  const Table& rows() const { return rows_; }
  Table& mutable_rows() { return rows_; }
  std::vector<Entity> Entities() const;
  uint64_t next_lsn() const { return lsn_; }

 private:
  std::string table_;
  uint64_t lsn_;
  Table rows_;
};

Entity MakeEntity(std::string pk, std::string rk, std::vector<Property> props);

}  // namespace sidetable::patterns::testing
