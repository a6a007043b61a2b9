// Key-range planning: intersect the key conditions of the filter's top-level
// conjunction. Only `and` narrows a range; an `or` (even over RowKeys) and
// `not` are left to per-entity evaluation, as in Azure.
#include <optional>

#include "engine/query/query.h"
#include "engine/utf8.h"

namespace sidetable::query {
namespace {

// The smallest string above s in key order: keys never contain U+0000.
std::string After(std::string_view s) {
  std::string out(s);
  out.push_back('\0');
  return out;
}

// A range over one key: [lo, hi] with open/closed ends.
struct Interval {
  std::optional<std::string> lo, hi;
  bool lo_inclusive = true, hi_inclusive = true;
  bool empty = false;

  void Apply(CompareOp op, const std::string& literal) {
    std::string v = literal;
    const size_t nul = literal.find('\0');
    if (nul != std::string::npos) {
      // Keys never contain U+0000, but a literal may, and in a storage key it
      // would collide with the separator. Against keys, a literal u+NUL+... is
      // equivalent to: eq → nothing, lt/le → le u, gt/ge → gt u (where u is
      // the part before the NUL).
      v.resize(nul);
      switch (op) {
        case CompareOp::kEq: empty = true; return;
        case CompareOp::kLt: case CompareOp::kLe: op = CompareOp::kLe; break;
        case CompareOp::kGt: case CompareOp::kGe: op = CompareOp::kGt; break;
        case CompareOp::kNe: return;
      }
    }
    switch (op) {
      case CompareOp::kEq: Lower(v, true); Upper(v, true); break;
      case CompareOp::kGt: Lower(v, false); break;
      case CompareOp::kGe: Lower(v, true); break;
      case CompareOp::kLt: Upper(v, false); break;
      case CompareOp::kLe: Upper(v, true); break;
      case CompareOp::kNe: break;  // not a range
    }
    if (hi && hi->empty() && !hi_inclusive) empty = true;  // below '' there is nothing
    if (lo && hi) {
      int c = CompareOrdinal(*lo, *hi);
      if (c > 0 || (c == 0 && !(lo_inclusive && hi_inclusive))) empty = true;
    }
  }
  void Lower(const std::string& v, bool inclusive) {
    int c = lo ? CompareOrdinal(v, *lo) : 1;
    if (c > 0 || (c == 0 && !inclusive)) {
      lo = v;
      lo_inclusive = inclusive;
    }
  }
  void Upper(const std::string& v, bool inclusive) {
    int c = hi ? CompareOrdinal(v, *hi) : -1;
    if (c < 0 || (c == 0 && !inclusive)) {
      hi = v;
      hi_inclusive = inclusive;
    }
  }
  bool pinned() const { return lo && hi && lo_inclusive && hi_inclusive && *lo == *hi; }
};

void Collect(const FilterNode& node, Interval* pk, Interval* rk, bool* contradiction) {
  if (node.kind == FilterNode::Kind::kAnd) {
    for (const auto& c : node.children) Collect(*c, pk, rk, contradiction);
    return;
  }
  if (node.kind != FilterNode::Kind::kCompare) return;
  const bool is_pk = node.property == kPartitionKeyName;
  const bool is_rk = node.property == kRowKeyName;
  if (!is_pk && !is_rk) return;
  if (node.literal.type() != EdmType::kString) {
    // A key compared with a non-string literal matches nothing (Azure typing).
    *contradiction = true;
    return;
  }
  (is_pk ? pk : rk)->Apply(node.op, node.literal.bytes());
}

// A top-level key comparison the plan's bounds guarantee: one the planner
// folded into the bounds of a key it scans by (a range operator, a string
// literal without U+0000, which the planner rewrites).
bool Implied(const FilterNode& node, const Plan& plan) {
  if (node.kind != FilterNode::Kind::kCompare || node.op == CompareOp::kNe) return false;
  if (node.literal.type() != EdmType::kString) return false;
  if (node.literal.bytes().find('\0') != std::string::npos) return false;
  if (node.property == kPartitionKeyName) {
    return plan.kind == PlanKind::kPartitionScan || plan.kind == PlanKind::kPartitionRange ||
           plan.kind == PlanKind::kKeyRange;
  }
  if (node.property == kRowKeyName) return plan.kind == PlanKind::kPartitionRange;
  return false;
}

}  // namespace

std::unique_ptr<FilterNode> ResidualFilter(const FilterNode* filter, const Plan& plan) {
  if (filter == nullptr) return nullptr;
  if (filter->kind != FilterNode::Kind::kAnd) return Implied(*filter, plan) ? nullptr : filter->Clone();
  std::vector<std::unique_ptr<FilterNode>> rest;
  for (const auto& c : filter->children) {
    if (!Implied(*c, plan)) rest.push_back(c->Clone());
  }
  if (rest.empty()) return nullptr;
  if (rest.size() == 1) return std::move(rest[0]);
  return FilterNode::And(std::move(rest));
}

std::string_view PlanKindName(PlanKind kind) {
  switch (kind) {
    case PlanKind::kEmpty: return "empty";
    case PlanKind::kPoint: return "point";
    case PlanKind::kPartitionRange: return "partition-range";
    case PlanKind::kPartitionScan: return "partition-scan";
    case PlanKind::kKeyRange: return "key-range";
    case PlanKind::kTableScan: return "table-scan";
  }
  return "";
}

std::string Plan::ToString() const {
  std::string out(PlanKindName(kind));
  if (kind == PlanKind::kPoint) {
    out += " ('" + point_partition_key + "', '" + point_row_key + "')";
  } else if (kind != PlanKind::kEmpty) {
    auto show = [](const std::optional<std::pair<std::string, std::string>>& b) {
      return b ? "('" + b->first + "', '" + b->second + "')" : std::string("open");
    };
    out += " from " + show(bounds.start) + " to " + show(bounds.end);
  }
  return out;
}

Plan MakePlan(const FilterNode* filter) {
  Plan plan;
  if (filter == nullptr) return plan;
  Interval pk, rk;
  bool contradiction = false;
  Collect(*filter, &pk, &rk, &contradiction);
  if (contradiction || pk.empty || rk.empty) {
    plan.kind = PlanKind::kEmpty;
    return plan;
  }
  if (pk.pinned()) {
    const std::string& p = *pk.lo;
    if (rk.pinned()) {
      plan.kind = PlanKind::kPoint;
      plan.point_partition_key = p;
      plan.point_row_key = *rk.lo;
      return plan;
    }
    plan.bounds = ScanBounds::Partition(p);
    if (rk.lo || rk.hi) {
      plan.kind = PlanKind::kPartitionRange;
      if (rk.lo) plan.bounds.start = {p, rk.lo_inclusive ? *rk.lo : After(*rk.lo)};
      if (rk.hi) plan.bounds.end = {p, rk.hi_inclusive ? After(*rk.hi) : *rk.hi};
    } else {
      plan.kind = PlanKind::kPartitionScan;
    }
    return plan;
  }
  if (pk.lo || pk.hi) {
    // Whole partitions: (v, "") starts partition v; (v + U+0001, "") is past it.
    plan.kind = PlanKind::kKeyRange;
    if (pk.lo) plan.bounds.start = {pk.lo_inclusive ? *pk.lo : *pk.lo + '\x01', ""};
    if (pk.hi) plan.bounds.end = {pk.hi_inclusive ? *pk.hi + '\x01' : *pk.hi, ""};
    return plan;
  }
  return plan;  // table scan
}

}  // namespace sidetable::query
