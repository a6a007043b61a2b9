// libFuzzer target for the $filter parser, printer and evaluator.
//
// Arbitrary bytes go to ParseFilter(). A rejection must be a well-formed
// kInvalidInput error; an accepted filter must satisfy the tree invariants
// promised in filter.h, print to canonical text that parses back to the same
// tree (and prints identically: a fixed point), and evaluate identically
// before and after the round trip. Any violation aborts with the input.
//
// The same file is linked into filter_test (tests/engine/query), which calls
// LLVMFuzzerTestOneInput on a deterministic set of inputs, so the checks run
// in the ordinary suite too. It must therefore not define main().
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>

#include "engine/edm.h"
#include "engine/query/filter.h"

namespace {

using sidetable::Code;
using sidetable::Entity;
using sidetable::Value;
using sidetable::query::FilterLimits;
using sidetable::query::FilterNode;

[[noreturn]] void Fail(const char* what, std::string_view input, std::string_view detail) {
  std::fprintf(stderr, "filter_fuzz: %s\n  input (%zu bytes): ", what, input.size());
  for (unsigned char c : input) {
    if (c >= 0x20 && c < 0x7F) std::fputc(c, stderr);
    else std::fprintf(stderr, "\\x%02X", c);
  }
  std::fprintf(stderr, "\n  detail: %.*s\n", static_cast<int>(detail.size()), detail.data());
  std::abort();
}

bool IsName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); i++) {
    const char c = s[i];
    const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// The invariants filter.h promises for parsed trees.
const char* BrokenInvariant(const FilterNode& n) {
  using Kind = FilterNode::Kind;
  switch (n.kind) {
    case Kind::kAnd:
    case Kind::kOr:
      if (n.children.size() < 2) return "and/or with fewer than 2 children";
      for (const auto& c : n.children) {
        if (c->kind == n.kind) return "and/or not flattened";
      }
      break;
    case Kind::kNot:
      if (n.children.size() != 1) return "not without exactly one child";
      break;
    case Kind::kCompare:
      if (!n.children.empty()) return "comparison with children";
      if (!IsName(n.property)) return "comparison on an invalid property name";
      break;
  }
  for (const auto& c : n.children) {
    if (const char* broken = BrokenInvariant(*c)) return broken;
  }
  return nullptr;
}

// Short names too: mutated inputs mostly produce one- or two-letter names.
const Entity& FixedEntity() {
  static const Entity entity = [] {
    Entity e;
    e.partition_key = "pk";
    e.row_key = "rk\xEF\xBC\xA1";  // ends in U+FF21, which sorts above non-BMP
    e.timestamp = 635'442'654'320'000'000;  // 2014-08-22T00:50:32Z
    e.Set("Name", Value::String("Ada"));
    e.Set("Age", Value::Int32(36));
    e.Set("Big", Value::Int64(1LL << 40));
    e.Set("Score", Value::Double(1.5));
    e.Set("Nan", Value::Double(std::numeric_limits<double>::quiet_NaN()));
    e.Set("Active", Value::Boolean(true));
    e.Set("Born", Value::DateTime(635'442'654'320'000'000));
    e.Set("Id", Value::MakeGuid(*sidetable::ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833")));
    e.Set("Blob", Value::Binary(std::string("\x0A\x1B", 2)));
    e.Set("a", Value::Int32(1));
    e.Set("b", Value::String("b"));
    e.Set("c", Value::Double(0.0));
    e.Set("x", Value::Int64(-1));
    e.Set("y", Value::Boolean(false));
    return e;
  }();
  return entity;
}

void CheckRejection(std::string_view input, const sidetable::Status& s) {
  if (s.code() != Code::kInvalidInput) Fail("error code is not InvalidInput", input, s.message());
  const std::string& m = s.message();
  if (m.rfind("$filter: ", 0) != 0) Fail("message without the $filter: prefix", input, m);
  // The quoted token may itself contain " at position ", so accept the
  // message if any occurrence is followed by a plausible offset and then the
  // end or ": ". Exact positions are checked by the unit tests.
  constexpr std::string_view kAt = " at position ";
  for (size_t at = m.find(kAt); at != std::string::npos; at = m.find(kAt, at + 1)) {
    size_t i = at + kAt.size(), pos = 0, digits = 0;
    for (; i < m.size() && m[i] >= '0' && m[i] <= '9' && digits < 12; i++, digits++) {
      pos = pos * 10 + static_cast<size_t>(m[i] - '0');
    }
    const bool ends = i == m.size() || m.compare(i, 2, ": ") == 0;
    if (digits > 0 && ends && pos <= input.size()) return;
  }
  Fail("no valid position in the message", input, m);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  auto parsed = sidetable::query::ParseFilter(input);
  if (!parsed.ok()) {
    CheckRejection(input, parsed.status());
    return 0;
  }
  const FilterNode& tree = **parsed;
  if (const char* broken = BrokenInvariant(tree)) Fail("tree invariant", input, broken);

  // Canonical text may be longer than the input (datetime spelled in full,
  // `1d` as `1.0`), never deeper or with more comparisons: only the length
  // limit is relaxed.
  const std::string canonical = sidetable::query::ToString(tree);
  FilterLimits relaxed;
  relaxed.max_length = std::numeric_limits<size_t>::max();
  auto again = sidetable::query::ParseFilter(canonical, relaxed);
  if (!again.ok()) Fail("canonical text does not parse", input, canonical + " -> " + again.status().message());
  if (!(**again == tree)) Fail("round trip changed the tree", input, canonical);
  if (sidetable::query::ToString(**again) != canonical) Fail("ToString is not a fixed point", input, canonical);
  if (!(*tree.Clone() == tree)) Fail("Clone differs", input, canonical);

  const Entity& entity = FixedEntity();
  if (sidetable::query::Matches(tree, entity) != sidetable::query::Matches(**again, entity)) {
    Fail("evaluation changed by the round trip", input, canonical);
  }
  static const Entity empty;
  (void)sidetable::query::Matches(tree, empty);
  return 0;
}
