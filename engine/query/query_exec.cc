// Running one page of a query over a consistent snapshot.
#include <algorithm>

#include "engine/limits.h"
#include "engine/query/query.h"
#include "engine/table_name.h"
#include "engine/utf8.h"

namespace sidetable::query {
namespace {

bool IsSystemName(std::string_view name) {
  return name == kPartitionKeyName || name == kRowKeyName || name == kTimestampName;
}

Status ValidateQuery(const Query& q) {
  if (q.top && (*q.top < 1 || *q.top > kMaxPageSize)) {
    return Status(Code::kInvalidInput, "$top must be between 1 and 1000, got " + std::to_string(*q.top));
  }
  ST_RETURN_IF_ERROR(ValidateSelect(q.select));
  if (q.continuation) {
    Status a = ValidateKey(q.continuation->next_partition_key, "NextPartitionKey");
    Status b = ValidateKey(q.continuation->next_row_key, "NextRowKey");
    if (!a.ok() || !b.ok()) {
      return Status(Code::kInvalidInput,
                    "invalid continuation: " + (a.ok() ? b.message() : a.message()));
    }
  }
  if (q.max_examined == 0) return Status(Code::kInvalidInput, "max_examined must be positive");
  if (q.max_bytes == 0) return Status(Code::kInvalidInput, "max_bytes must be positive");
  return Status::OK();
}

Result<std::unique_ptr<FilterNode>> ParseOptional(const std::string& text) {
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return std::unique_ptr<FilterNode>();
  }
  return ParseFilter(text);
}

// (pk, rk) pairs in storage order.
bool PairLess(const std::pair<std::string, std::string>& a, const std::pair<std::string, std::string>& b) {
  const int c = CompareOrdinal(a.first, b.first);
  return c < 0 || (c == 0 && CompareOrdinal(a.second, b.second) < 0);
}

// The plan's bounds intersected with the confinement; false when nothing
// is left.
bool Confine(const ScanBounds& confine, ScanBounds* b) {
  if (confine.start && (!b->start || PairLess(*b->start, *confine.start))) b->start = confine.start;
  if (confine.end && (!b->end || PairLess(*confine.end, *b->end))) b->end = confine.end;
  return !(b->start && b->end && !PairLess(*b->start, *b->end));
}

bool Inside(const ScanBounds& b, const std::string& pk, const std::string& rk) {
  const std::pair<std::string, std::string> key{pk, rk};
  return !(b.start && PairLess(key, *b.start)) && !(b.end && !PairLess(key, *b.end));
}

Status ReadToEnd(const RowView& row) {
  PropertyReader r(row);
  for (PropertyView p; r.Next(&p);) {
  }
  return r.status();
}

Result<VisitedPage> VisitPoint(const Engine& engine, const Query& q, const Plan& plan,
                               const FilterNode* filter, RowVisitor& visitor) {
  VisitedPage page;
  page.stats.plan = plan.kind;
  if (q.continuation) {
    // A point read fits one page; a continuation can only be past it.
    if (PairLess({plan.point_partition_key, plan.point_row_key},
                 {q.continuation->next_partition_key, q.continuation->next_row_key})) {
      return page;
    }
  }
  bool found = false;
  Status s = engine.GetRow(q.table, plan.point_partition_key, plan.point_row_key, [&](const RowView& row) {
    found = true;
    page.stats.examined = 1;
    Status corrupt;
    if (filter != nullptr && !Matches(*filter, row, &corrupt)) {
      return corrupt.ok() ? ReadToEnd(row) : corrupt;
    }
    ST_RETURN_IF_ERROR(corrupt);
    page.stats.returned = 1;
    return visitor.Visit(row);
  });
  // Not found is an empty page; whatever the visitor returns is its own.
  if (!s.ok() && (found || s.code() != Code::kResourceNotFound)) return s;
  return page;
}

// Builds the Entity pages of ExecuteQuery.
class EntityCollector : public RowVisitor {
 public:
  EntityCollector(QueryPage* page, const std::vector<std::string>* keep) : page_(page), keep_(keep) {}
  Status Visit(const RowView& row) override {
    // The stored size: about what the Entity built from it holds.
    bytes_ += row.partition_key().size() + row.row_key().size() + row.properties_bytes().size();
    return RowToEntity(row, &page_->entities.emplace_back(), keep_);
  }
  uint64_t bytes() const override { return bytes_; }

 private:
  QueryPage* page_;
  const std::vector<std::string>* keep_;
  uint64_t bytes_ = 0;
};

}  // namespace

std::optional<std::vector<std::string>> UserSelect(const std::vector<std::string>& select) {
  if (select.empty()) return std::nullopt;
  std::vector<std::string> out;
  for (const auto& s : select) {
    if (!IsSystemName(s)) out.push_back(s);
  }
  return out;
}

Result<Plan> Explain(const Query& query) {
  ST_RETURN_IF_ERROR(ValidateQuery(query));
  auto filter = ParseOptional(query.filter);
  if (!filter.ok()) return filter.status();
  return MakePlan(filter->get());
}

Result<VisitedPage> VisitQuery(const Engine& engine, const Query& q, RowVisitor& visitor) {
  ST_RETURN_IF_ERROR(ValidateQuery(q));
  auto parsed = ParseOptional(q.filter);
  if (!parsed.ok()) return parsed.status();
  Plan plan = MakePlan(parsed->get());
  if (q.confine) {
    // A point outside the confinement, or a range that misses it, reads
    // nothing (the table must still exist).
    if (plan.kind == PlanKind::kPoint &&
        !Inside(*q.confine, plan.point_partition_key, plan.point_row_key)) {
      plan.kind = PlanKind::kEmpty;
    } else if (plan.kind != PlanKind::kPoint && plan.kind != PlanKind::kEmpty &&
               !Confine(*q.confine, &plan.bounds)) {
      plan.kind = PlanKind::kEmpty;
    }
  }
  // A page that reads nothing still needs the table to exist.
  auto nothing = [&]() -> Result<VisitedPage> {
    ST_RETURN_IF_ERROR(engine.GetTable(q.table).status());
    VisitedPage page;
    page.stats.plan = plan.kind;
    return page;
  };
  if (plan.kind == PlanKind::kEmpty) return nothing();
  if (plan.kind == PlanKind::kPoint) return VisitPoint(engine, q, plan, parsed->get(), visitor);

  if (q.continuation) {
    // The continuation is where the scan starts, a bound rather than a seek
    // after opening at the range's start: that first seek would pass over
    // the deleted rows before it, which may be what stopped the last page.
    ScanBounds from;
    from.start = std::make_pair(q.continuation->next_partition_key, q.continuation->next_row_key);
    if (!Confine(from, &plan.bounds)) return nothing();
  }
  // Only what the bounds do not already guarantee is tested per entity.
  const std::unique_ptr<FilterNode> filter = ResidualFilter(parsed->get(), plan);
  auto view = engine.NewReadView();
  // Passing over deleted rows is work too: a page stops after about as many
  // of them as it may examine (at least kMinSkipBound, so that a handful of
  // versions of one key kept for an older snapshot never stop it in place).
  ScanLimits limits;
  limits.max_skipped = std::max(q.max_examined, kMinSkipBound);
  auto cursor = engine.Scan(q.table, plan.bounds, view.get(), limits);
  if (!cursor.ok()) return cursor.status();
  RowCursor& cur = **cursor;

  VisitedPage page;
  page.stats.plan = plan.kind;
  const uint64_t limit = static_cast<uint64_t>(q.top.value_or(kMaxPageSize));
  bool full = false;  // the page reached max_bytes
  for (; cur.Valid(); cur.Next()) {
    if (full || page.stats.returned >= limit || page.stats.examined >= q.max_examined) {
      page.continuation = Continuation{cur.partition_key(), cur.row_key()};
      break;
    }
    page.stats.examined++;
    auto row = cur.Row();
    if (!row.ok()) return row.status();
    if (filter) {
      Status corrupt;
      const bool match = Matches(*filter, *row, &corrupt);
      ST_RETURN_IF_ERROR(corrupt);
      // Every examined row is read to its end, as a decode would: a corrupt
      // row is an error even when the filter rejects it early.
      if (!match) {
        ST_RETURN_IF_ERROR(ReadToEnd(*row));
        continue;
      }
    }
    page.stats.returned++;
    ST_RETURN_IF_ERROR(visitor.Visit(*row));
    // Checked after the row, so a page always holds one.
    full = visitor.bytes() >= q.max_bytes;
  }
  ST_RETURN_IF_ERROR(cur.status());
  if (!page.continuation && cur.stopped_at()) {
    page.continuation = Continuation{cur.stopped_at()->first, cur.stopped_at()->second};
    page.stats.stopped_at_deleted = true;
  }
  page.stats.skipped = cur.skipped();
  return page;
}

Result<QueryPage> ExecuteQuery(const Engine& engine, const Query& q) {
  const auto select = UserSelect(q.select);
  QueryPage page;
  page.entities.reserve(static_cast<size_t>(std::clamp(q.top.value_or(kMaxPageSize), 1, kMaxPageSize)));
  EntityCollector collect(&page, select ? &*select : nullptr);
  auto visited = VisitQuery(engine, q, collect);
  if (!visited.ok()) return visited.status();
  page.continuation = std::move(visited->continuation);
  page.stats = visited->stats;
  return page;
}

Result<TablePage> QueryTables(const Engine& engine, const TableQuery& q) {
  if (q.top && (*q.top < 1 || *q.top > kMaxPageSize)) {
    return Status(Code::kInvalidInput, "$top must be between 1 and 1000");
  }
  auto parsed = ParseOptional(q.filter);
  if (!parsed.ok()) return parsed.status();
  const FilterNode* filter = parsed->get();
  const size_t limit = static_cast<size_t>(q.top.value_or(kMaxPageSize));
  std::optional<std::string> next;
  if (q.next_table_name) next = TableKey(*q.next_table_name).str();
  TablePage page;
  for (TableInfo& t : engine.ListTables()) {
    // Table names compare case-insensitively, so pages follow the catalog's
    // lower-case order and the continuation is a lower-case name.
    const std::string lower = TableKey(t.name).str();
    if (next && lower < *next) continue;
    if (q.visible && !q.visible(t.name)) continue;
    if (filter) {
      Entity row;
      row.Set("TableName", Value::String(t.name));
      if (!Matches(*filter, row)) continue;
    }
    if (page.tables.size() >= limit) {
      page.next_table_name = lower;
      break;
    }
    page.tables.push_back(std::move(t));
  }
  return page;
}

}  // namespace sidetable::query
