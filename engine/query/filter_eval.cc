// Evaluation with Azure's typing: no promotion between Edm types, and a
// comparison that cannot be typed (missing property, other type) is false
// for every operator, `ne` included. `not` then negates that boolean, so
// `not (X eq 1)` holds for an entity without X: the rule composes, it is not
// a three-valued logic (no SQL NULL).
#include <algorithm>
#include <cstring>

#include "engine/query/filter.h"
#include "engine/row_view.h"
#include "engine/utf8.h"

namespace sidetable::query {
namespace {

bool Holds(int cmp, CompareOp op) {
  switch (op) {
    case CompareOp::kEq: return cmp == 0;
    case CompareOp::kNe: return cmp != 0;
    case CompareOp::kGt: return cmp > 0;
    case CompareOp::kGe: return cmp >= 0;
    case CompareOp::kLt: return cmp < 0;
    case CompareOp::kLe: return cmp <= 0;
  }
  return false;
}

template <typename T>
int ThreeWay(T a, T b) {
  return a < b ? -1 : b < a ? 1 : 0;
}

// Bytewise (unsigned), a proper prefix first: Binary and Guid.
int CompareBytes(std::string_view a, std::string_view b) {
  const int c = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
  if (c != 0) return c;
  return ThreeWay(a.size(), b.size());
}

// IEEE: every ordered comparison with a NaN is false and `ne` is true, which
// is exactly what the C++ operators do; a three-way compare would lose it.
bool HoldsDouble(double a, CompareOp op, double b) {
  switch (op) {
    case CompareOp::kEq: return a == b;
    case CompareOp::kNe: return a != b;
    case CompareOp::kGt: return a > b;
    case CompareOp::kGe: return a >= b;
    case CompareOp::kLt: return a < b;
    case CompareOp::kLe: return a <= b;
  }
  return false;
}

// The system properties compare without building a Value per entity.
bool CompareSystem(const FilterNode& node, std::string_view pk, std::string_view rk, int64_t timestamp,
                   bool* handled) {
  *handled = true;
  if (node.property == kPartitionKeyName || node.property == kRowKeyName) {
    if (node.literal.type() != EdmType::kString) return false;
    const std::string_view key = node.property == kPartitionKeyName ? pk : rk;
    return Holds(CompareOrdinal(key, node.literal.bytes()), node.op);
  }
  if (node.property == kTimestampName) {
    if (node.literal.type() != EdmType::kDateTime) return false;
    return Holds(ThreeWay(timestamp, node.literal.as_ticks()), node.op);
  }
  *handled = false;
  return false;
}

// `actual` is a Value or a PropertyView (the same accessors).
template <typename V>
bool CompareActual(const V* actual, CompareOp op, const Value& literal) {
  if (actual == nullptr || actual->type() != literal.type()) return false;
  switch (literal.type()) {
    case EdmType::kString:
      return Holds(CompareOrdinal(actual->bytes(), literal.bytes()), op);
    case EdmType::kBinary:
    case EdmType::kGuid:
      return Holds(CompareBytes(actual->bytes(), literal.bytes()), op);
    case EdmType::kBoolean:
      return Holds(ThreeWay(actual->as_bool(), literal.as_bool()), op);
    case EdmType::kDouble:
      return HoldsDouble(actual->as_double(), op, literal.as_double());
    case EdmType::kInt32:
      return Holds(ThreeWay(actual->as_int32(), literal.as_int32()), op);
    case EdmType::kDateTime:
    case EdmType::kInt64:
      return Holds(ThreeWay(actual->as_int64(), literal.as_int64()), op);
  }
  return false;
}

// One evaluator over an Entity or a stored row: `compare(node)` answers a
// comparison of a user property.
template <typename Compare>
bool Eval(const FilterNode& node, std::string_view pk, std::string_view rk, int64_t timestamp,
          const Compare& compare) {
  switch (node.kind) {
    case FilterNode::Kind::kAnd:
      return std::all_of(node.children.begin(), node.children.end(),
                         [&](const auto& c) { return Eval(*c, pk, rk, timestamp, compare); });
    case FilterNode::Kind::kOr:
      return std::any_of(node.children.begin(), node.children.end(),
                         [&](const auto& c) { return Eval(*c, pk, rk, timestamp, compare); });
    case FilterNode::Kind::kNot:
      return !node.children.empty() && !Eval(*node.children[0], pk, rk, timestamp, compare);
    case FilterNode::Kind::kCompare: {
      bool handled = false;
      const bool result = CompareSystem(node, pk, rk, timestamp, &handled);
      if (handled) return result;
      return compare(node);
    }
  }
  return false;
}

}  // namespace

bool CompareMatches(const Value* actual, CompareOp op, const Value& literal) {
  return CompareActual(actual, op, literal);
}

bool Matches(const FilterNode& node, const Entity& entity) {
  return Eval(node, entity.partition_key, entity.row_key, entity.timestamp, [&](const FilterNode& n) {
    return CompareActual(entity.Find(n.property), n.op, n.literal);
  });
}

bool Matches(const FilterNode& node, const RowView& row, Status* error) {
  return Eval(node, row.partition_key(), row.row_key(), row.timestamp(), [&](const FilterNode& n) {
    PropertyView p;
    const bool found = row.Find(n.property, &p, error);
    return CompareActual(found ? &p : nullptr, n.op, n.literal);
  });
}

}  // namespace sidetable::query
