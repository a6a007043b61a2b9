// The crash test's workload, shared by the child that runs it and the parent
// that checks what survived. EGT `id` writes rows_for(id) new rows in one
// partition, merges the partition's counter row, and every other EGT deletes
// the first row of the EGT four before it (same partition).
#pragma once

#include <cstdint>
#include <string>

#include "engine/batch.h"

namespace sidetable::testing::crash {

constexpr int kThreads = 4;

inline uint64_t MakeId(int round, int thread, int i) {
  return static_cast<uint64_t>(round) * 1'000'000 + thread * 100'000 + i;
}
inline int RowsFor(uint64_t id) { return 1 + static_cast<int>(id % 7); }
inline bool DeletesEarlier(uint64_t id) { return id % 100'000 >= 4 && id % 2 == 0; }
inline std::string PartitionFor(int thread, int i) {
  return "p" + std::to_string(thread) + "-" + std::to_string(i % 2);
}
inline std::string RowKey(uint64_t id, int j) {
  return "e" + std::to_string(id) + "-" + std::to_string(j);
}
// Operations in the EGT (its change record must have exactly this many).
inline size_t OpsFor(uint64_t id) { return RowsFor(id) + 1 + (DeletesEarlier(id) ? 1 : 0); }

inline Batch MakeBatch(const std::string& table, int thread, int i, uint64_t id) {
  Batch b(table);
  const std::string pk = PartitionFor(thread, i);
  for (int j = 0; j < RowsFor(id); j++) {
    Entity e;
    e.partition_key = pk;
    e.row_key = RowKey(id, j);
    e.Set("egt", Value::Int64(static_cast<int64_t>(id)))
        .Set("j", Value::Int32(j))
        .Set("pad", Value::String(std::string(100 + 37 * j, 'x')));
    b.Insert(std::move(e));
  }
  Entity counter;
  counter.partition_key = pk;
  counter.row_key = "counter";
  counter.Set("egt", Value::Int64(static_cast<int64_t>(id)))
      .Set("c" + std::to_string(id % 3), Value::Int64(static_cast<int64_t>(id)));
  b.InsertOrMerge(std::move(counter));
  if (DeletesEarlier(id)) b.Delete(pk, RowKey(id - 4, 0));
  return b;
}

}  // namespace sidetable::testing::crash
