// The Azure Tables $filter language: parse once, evaluate per entity.
//
// Thread safety: ParseFilter(), ToString() and Matches() keep no state of
// their own and may run on any number of threads at once. A parsed tree owns
// all its data (nothing points into the filter text) and evaluation only
// reads it, so one tree may be shared by many threads as long as nobody
// mutates it meanwhile.
//
// Limits: parsing is linear in the text and bounded by FilterLimits (length,
// nesting, comparisons), so hostile input costs little; every error is
// Code::kInvalidInput with "$filter: ... at position N" (N = 0-based byte
// offset into the text). The language and its typing rules are specified in
// docs/queries.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/edm.h"
#include "engine/status.h"

namespace sidetable {
class RowView;
}  // namespace sidetable

namespace sidetable::query {

enum class CompareOp : uint8_t { kEq, kNe, kGt, kGe, kLt, kLe };

// "eq", "ne", ...
std::string_view CompareOpName(CompareOp op);
// The operator to use when the two sides swap: `5 lt X` is `X gt 5`.
// (Not the negation: see docs/queries.md on why `not` cannot be pushed down.)
CompareOp MirrorOp(CompareOp op);

// System properties, resolved from Entity fields rather than properties.
inline constexpr std::string_view kPartitionKeyName = "PartitionKey";
inline constexpr std::string_view kRowKeyName = "RowKey";
inline constexpr std::string_view kTimestampName = "Timestamp";

// One node of a parsed filter. Trees from ParseFilter() hold these invariants:
//  - kAnd / kOr: 2+ children, none of the same kind (nested and/or are
//    flattened: `a and (b and c)` is one kAnd with three children);
//  - kNot: exactly one child;
//  - kCompare: no children; `property` is a valid name and the property is
//    always on the left (`5 lt X` is stored as `X gt 5`); `literal` is any
//    Edm type, Doubles are finite.
struct FilterNode {
  enum class Kind : uint8_t { kAnd, kOr, kNot, kCompare };

  Kind kind = Kind::kCompare;
  std::vector<std::unique_ptr<FilterNode>> children;  // kAnd, kOr, kNot
  std::string property;                                // kCompare
  CompareOp op = CompareOp::kEq;                       // kCompare
  Value literal;                                       // kCompare

  static std::unique_ptr<FilterNode> Compare(std::string property, CompareOp op, Value literal);
  static std::unique_ptr<FilterNode> Not(std::unique_ptr<FilterNode> child);
  // Builds kAnd / kOr as given (no flattening; the parser flattens).
  static std::unique_ptr<FilterNode> And(std::vector<std::unique_ptr<FilterNode>> children);
  static std::unique_ptr<FilterNode> Or(std::vector<std::unique_ptr<FilterNode>> children);

  std::unique_ptr<FilterNode> Clone() const;
  // Structural equality; literals compare with Value::operator== (same type,
  // same value, Doubles bitwise).
  bool operator==(const FilterNode& other) const;
};

// Bounds against hostile input. Defaults are what the sidecar enforces.
struct FilterLimits {
  size_t max_length = 32 * 1024;  // bytes of filter text
  int max_depth = 64;             // each `(` and each `not` opens a level; `not (` opens one
  int max_comparisons = 100;      // Azure allows 15; see docs/queries.md
};

// Parses a $filter expression. An empty (or all-blank) text is an error:
// "no filter" is the caller's decision, not an expression.
Result<std::unique_ptr<FilterNode>> ParseFilter(std::string_view text,
                                                const FilterLimits& limits = FilterLimits());

// True when the entity satisfies the filter (Azure typing: a missing property
// or a literal of another Edm type makes the comparison false, even for `ne`).
bool Matches(const FilterNode& node, const Entity& entity);
// The same over a stored row read in place (no Entity built). A corrupt row
// sets *error (kInternal) and what it returns is then meaningless.
bool Matches(const FilterNode& node, const RowView& row, Status* error);

// One comparison, `actual op literal`, under the same rules; `actual` null
// means the property is missing. For planners that resolve values themselves.
bool CompareMatches(const Value* actual, CompareOp op, const Value& literal);

// Canonical text: single spaces, minimal parentheses, `not (...)` always
// parenthesised, literals in one spelling (`5L`, `1.5`, `X'0A'`,
// `datetime'...7 digits...Z'`). ParseFilter(ToString(t)) == t for every tree
// ParseFilter returns. The text is never deeper and has no more comparisons
// than the input, but may be longer (`1d` -> `1.0`): near max_length,
// re-parse it with a larger limit.
std::string ToString(const FilterNode& node);

}  // namespace sidetable::query
