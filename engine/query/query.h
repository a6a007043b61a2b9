// Queries: $filter, $select, $top and continuation over one table.
//
// A query is planned into the narrowest key range its filter allows (a point
// read, a range inside one partition, a PartitionKey range, or a table scan);
// the whole filter is then evaluated on each entity in that range. A page
// holds at most 1,000 entities (or $top) and comes from one consistent
// snapshot. When more may follow, the page carries a continuation: the keys of
// the next entity to examine. Resuming from it never skips or repeats an
// entity that existed throughout, whatever was written in between.
//
// A page also stops after examining `max_examined` entities, so a selective
// filter over a big table returns a short (even empty) page with a
// continuation rather than scanning without end (Azure bounds a page at 5 s).
// And it stops once the entities it returns reach `max_bytes`, as its
// visitor counts them (RowVisitor::bytes()): 1,000 entities of 1 MiB would
// otherwise be a reply of 1 GB held in memory at once. The entity that
// reaches the bound is still returned, so every page holds at least one
// entity when one matches and a query of the largest entities progresses.
// A client follows the continuation as for any short page (Azure, too, may
// return fewer than 1,000 entities with a continuation).
//
// Deleted entities cost work until compaction removes them, and a page
// stops after passing over `max_examined` of them too (at least
// kMinSkipBound), with a continuation at the deleted key where it stopped:
// a range of recent deletes returns empty pages that progress instead of
// one page that scans them all.
//
// Thread safety: the functions are stateless; a Query is a value.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/query/filter.h"

namespace sidetable::query {

inline constexpr int kMaxPageSize = 1000;
// The bytes a page stops at (Query::max_bytes): a few entities of the
// largest size (1 MiB of properties), and 1,000 entities of up to ~4 KiB.
inline constexpr uint64_t kMaxPageBytes = 4 << 20;
// The least bound on deleted entities a page passes over (Query::max_examined
// above it counts): RocksDB counts each hidden version of a key, up to ~9
// before it seeks past the rest, and a bound below that could stop a page
// at the key it started from.
inline constexpr uint64_t kMinSkipBound = 1024;

struct Continuation {
  std::string next_partition_key;
  std::string next_row_key;
  bool operator==(const Continuation& o) const {
    return next_partition_key == o.next_partition_key && next_row_key == o.next_row_key;
  }
};

struct Query {
  std::string table;
  std::string filter;               // "" = every entity
  std::vector<std::string> select;  // empty = every property
  std::optional<int> top;           // 1..1000 entities per page
  std::optional<Continuation> continuation;
  uint64_t max_examined = 100'000;  // work bound of one page (also of deleted entities passed over)
  uint64_t max_bytes = kMaxPageBytes;  // size bound of one page (RowVisitor::bytes())
  // The only keys the query may reach (an access token's range, set by the
  // sidecar): the planned scan is intersected with it, so rows outside are
  // never examined and no continuation leads outside. Absent: the table.
  std::optional<ScanBounds> confine;
};

enum class PlanKind : uint8_t {
  kEmpty,           // the key conditions contradict each other
  kPoint,           // PartitionKey eq and RowKey eq
  kPartitionRange,  // PartitionKey eq, RowKey bounds
  kPartitionScan,   // PartitionKey eq, no RowKey bound
  kKeyRange,        // PartitionKey bounds
  kTableScan,       // nothing usable: every partition is read
};

std::string_view PlanKindName(PlanKind kind);

// One end of a key range: (PartitionKey, RowKey), inclusive or not.
struct KeyBound {
  std::string partition_key;
  std::string row_key;
};

struct Plan {
  PlanKind kind = PlanKind::kTableScan;
  ScanBounds bounds;  // what is scanned (not used for kPoint / kEmpty)
  std::string point_partition_key, point_row_key;  // kPoint
  // "partition scan of 'Sales'", for explain output and logs.
  std::string ToString() const;
};

// Plans a parsed filter (null = no filter).
Plan MakePlan(const FilterNode* filter);

// What is left of `filter` to test per entity once the scan keeps to the
// plan's bounds: the top-level key comparisons the bounds already guarantee
// are dropped (`PartitionKey eq 'p'` of a partition scan, the RowKey range
// of a partition range, the PartitionKey range of a key range). Null when
// nothing is left. `plan` must be MakePlan(filter), possibly confined.
std::unique_ptr<FilterNode> ResidualFilter(const FilterNode* filter, const Plan& plan);

struct QueryStats {
  PlanKind plan = PlanKind::kTableScan;
  uint64_t examined = 0;  // entities read and tested against the filter
  uint64_t returned = 0;
  // Deleted entities and superseded versions passed over, and whether the
  // page stopped because of them (RowCursor::stopped_at).
  uint64_t skipped = 0;
  bool stopped_at_deleted = false;
};

struct QueryPage {
  std::vector<Entity> entities;
  std::optional<Continuation> continuation;  // absent: the query is complete
  QueryStats stats;
};

// Runs one page of the query. Errors: TableNotFound, InvalidInput (filter,
// select, top, continuation), Internal (a corrupt stored row).
Result<QueryPage> ExecuteQuery(const Engine& engine, const Query& query);

// The same page without an Entity per row: each entity the page returns is
// handed to Visit() in order, as its stored row read in place (valid during
// the call only). The row holds every property: applying $select is the
// visitor's (the sidecar writes only the selected ones to the reply;
// RowToEntity takes a select list). An error from Visit() ends the page and
// is what VisitQuery returns.
class RowVisitor {
 public:
  virtual ~RowVisitor() = default;
  virtual Status Visit(const RowView& row) = 0;
  // What the page visited so far weighs, in the visitor's own measure (the
  // sidecar: its reply's encoded bytes; ExecuteQuery: the rows' stored
  // bytes). Asked after each Visit(); the page ends, with a continuation,
  // once it reaches Query::max_bytes.
  virtual uint64_t bytes() const = 0;
};
// A visited page: no entities, the rest of a QueryPage.
struct VisitedPage {
  std::optional<Continuation> continuation;  // absent: the query is complete
  QueryStats stats;
};
// Errors as ExecuteQuery, and whatever Visit() returns.
Result<VisitedPage> VisitQuery(const Engine& engine, const Query& query, RowVisitor& visitor);

// The user properties a $select keeps (system names left out); nullopt when
// the query has no $select (every property).
std::optional<std::vector<std::string>> UserSelect(const std::vector<std::string>& select);

// The plan a query would use, without running it.
Result<Plan> Explain(const Query& query);

// ---- tables ----------------------------------------------------------------
// Listing tables with a $filter on TableName (e.g. "TableName ge 'a' and
// TableName lt 'b'"), a page size and a continuation (the next table name).
struct TableQuery {
  std::string filter;
  std::optional<int> top;
  std::optional<std::string> next_table_name;
  // Tables the caller may see (an access token's scope); null = all. A
  // table it may not see is skipped before the page is counted, so neither
  // a page nor its continuation names one.
  std::function<bool(std::string_view)> visible;
};
struct TablePage {
  std::vector<TableInfo> tables;
  std::optional<std::string> next_table_name;
};
Result<TablePage> QueryTables(const Engine& engine, const TableQuery& query);

}  // namespace sidetable::query
