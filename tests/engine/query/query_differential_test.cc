// Randomized differential test of the query layer: for many random filters
// over a random table, ExecuteQuery() (planner, paging, continuation, work
// bound, projection) must return exactly what a brute-force evaluation
// returns: every entity of a full scan that Matches() the filter, in
// (PartitionKey, RowKey) order, projected by $select.
//
// The data is built to stress key order: PartitionKeys and RowKeys that are
// prefixes of each other, the empty key, U+E000..U+FFFF against supplementary
// characters (UTF-16 order differs from UTF-8 byte order there), quotes.
// Properties reuse a few names with varying Edm types, and are often missing.
// The filters are biased towards what the planner narrows: conjunctions of
// PartitionKey / RowKey equalities and ranges with literals that exist and
// that do not (neighbours, prefixes, extensions), `or` over RowKeys, `not`,
// typed comparisons with matching and mismatching literal types, Timestamp.
//
// Besides the result, every query is held to the work it should do: pages
// within $top and max_examined, and in total exactly the entities a perfect
// plan for its top-level key conditions examines (so a bound that is merely
// too wide, which still gives the right result, fails too).
//
// Everything is seeded; a failure prints the seed, the filter number, the
// filter text and the query parameters so it can be replayed by hand. The
// first few failures are printed in full, the rest counted.
//
// Known bug (see PartitionKeyBoundWithNulInLiteral at the end): PartitionKey
// bounds whose literal contains U+0000 lose rows; the random filters include
// such literals, so Seed3LargeTable and EverySingleKeyComparison fail on it
// (with only U+0000 filters listed) until the planner is fixed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "engine/limits.h"
#include "engine/query/filter.h"
#include "engine/query/query.h"
#include "engine/utf8.h"
#include "testing/random_keys.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable::query {
namespace {

using sidetable::testing::RandomKeys;
using sidetable::testing::ToUtf16;

constexpr const char* kTable = "Diff";
// The injected clock: the engine makes commit times strictly increase, so
// every commit gets its own timestamp from here on, deterministically.
constexpr int64_t kBaseTicks = kUnixEpochTicks + 1'700'000'000LL * kTicksPerSecond;

std::string Cp(uint32_t cp) {
  std::string s;
  AppendUtf8(&s, cp);
  return s;
}

// Keys with every ordering trap we know of. All are valid Azure keys.
std::vector<std::string> TrickyKeys() {
  return {"",
          "a",
          "ab",
          "abc",
          "abd",
          "b",
          "A",
          "~",
          " ",
          "'",
          "a'b",
          "''",
          Cp(0xE9),                        // é (2 bytes)
          Cp(0xD7FF),                      // just below the surrogates
          Cp(0xE000),                      // private use: after supplementary in UTF-16
          Cp(0xE000) + "a",
          Cp(0xFF21),                      // fullwidth A
          Cp(0xFFFF),
          Cp(0xFFFF) + "a",
          Cp(0x10000),                     // first supplementary
          Cp(0x1F600),                     // emoji
          Cp(0x1F600) + Cp(0xE000),
          Cp(0x10FFFF),
          "a" + Cp(0x1F600),
          "a" + Cp(0xFFFF),
          "a" + Cp(0xE000)};
}

// UTF-16 ordinal order of (PartitionKey, RowKey): the independent oracle.
struct KeyLess {
  bool operator()(const std::pair<std::string, std::string>& a,
                  const std::pair<std::string, std::string>& b) const {
    const auto ap = ToUtf16(a.first), bp = ToUtf16(b.first);
    if (ap != bp) return ap < bp;
    return ToUtf16(a.second) < ToUtf16(b.second);
  }
};

using Key = std::pair<std::string, std::string>;

std::string Show(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string ShowKey(const std::string& pk, const std::string& rk) {
  return "('" + Show(pk) + "', '" + Show(rk) + "')";
}

std::string ShowEntity(const Entity& e) {
  std::string out = ShowKey(e.partition_key, e.row_key) + " ts=" + std::to_string(e.timestamp) +
                    " etag=" + e.etag;
  for (const auto& p : e.properties) {
    out += " " + p.name + ":" + std::string(EdmTypeName(p.value.type())) + "=" + Show(p.value.ToString());
  }
  return out;
}

// ---- property model ----------------------------------------------------

struct PropName {
  const char* name;
  EdmType main;  // the type it usually has; other entities use other types
};
constexpr PropName kProps[] = {
    {"a", EdmType::kInt32},     {"b", EdmType::kInt64},    {"c", EdmType::kDouble},
    {"Age", EdmType::kInt32},   {"Name", EdmType::kString}, {"Flag", EdmType::kBoolean},
    {"When", EdmType::kDateTime}, {"Id", EdmType::kGuid},  {"Blob", EdmType::kBinary},
};
constexpr EdmType kAllTypes[] = {EdmType::kString, EdmType::kBinary,   EdmType::kBoolean,
                                 EdmType::kDateTime, EdmType::kDouble, EdmType::kGuid,
                                 EdmType::kInt32,  EdmType::kInt64};

Guid GuidOf(uint8_t fill) {
  Guid g;
  for (size_t i = 0; i < g.size(); i++) g[i] = static_cast<uint8_t>(fill + i);
  return g;
}

// Small value pools, shared by stored values and literals so that equality
// and the range edges are hit often. `stored` adds values a literal cannot
// spell (NaN, infinities).
Value PoolValue(EdmType t, std::mt19937_64& rng, bool stored) {
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  switch (t) {
    case EdmType::kString: {
      static const std::vector<std::string> k = {"", "a", "ab", "A", Cp(0xE9), Cp(0xE000),
                                                 Cp(0x1F600), "42", "true", "it's"};
      return Value::String(k[pick(k.size())]);
    }
    case EdmType::kBinary: {
      static const std::vector<std::string> k = {std::string(), std::string(1, '\0'),
                                                 std::string("\0\x01", 2), "\xFF", "ab"};
      return Value::Binary(k[pick(k.size())]);
    }
    case EdmType::kBoolean:
      return Value::Boolean(pick(2) == 0);
    case EdmType::kDateTime: {
      static const int64_t k[] = {kMinDateTimeTicks, kUnixEpochTicks, kUnixEpochTicks + 1, kBaseTicks,
                                  kMaxDateTimeTicks};
      return Value::DateTime(k[pick(std::size(k))]);
    }
    case EdmType::kDouble: {
      static const double k[] = {-1.5, -0.0, 0.0, 1.0, 2.0, 3.0, 42.0, 2.5, 1e300};
      if (stored && pick(8) == 0) {
        static const double odd[] = {std::numeric_limits<double>::quiet_NaN(),
                                     std::numeric_limits<double>::infinity(),
                                     -std::numeric_limits<double>::infinity()};
        return Value::Double(odd[pick(3)]);
      }
      return Value::Double(k[pick(std::size(k))]);
    }
    case EdmType::kGuid:
      return Value::MakeGuid(GuidOf(static_cast<uint8_t>(pick(3) * 0x40)));
    case EdmType::kInt32: {
      static const int32_t k[] = {-7, -1, 0, 1, 2, 3, 42, INT32_MIN, INT32_MAX};
      return Value::Int32(k[pick(std::size(k))]);
    }
    case EdmType::kInt64: {
      static const int64_t k[] = {-1, 0, 1, 2, 3, 42, INT64_MIN, INT64_MAX, int64_t{1} << 40};
      return Value::Int64(k[pick(std::size(k))]);
    }
  }
  return Value();
}

// ---- the data set -------------------------------------------------------

struct DataSet {
  std::vector<std::string> pks;                         // the PartitionKeys in use
  std::vector<std::string> all_rks;                     // every RowKey in use (with repeats)
  std::map<std::string, std::vector<std::string>> rks;  // RowKeys per PartitionKey
  std::vector<int64_t> timestamps;                      // timestamps in use
};

// ---- random filters -----------------------------------------------------

class FilterGen {
 public:
  FilterGen(uint64_t seed, const DataSet& data) : rng_(seed), keys_(seed ^ 0x9E3779B97F4A7C15ull), data_(data) {}

  size_t Below(size_t n) { return static_cast<size_t>(rng_() % n); }
  bool Chance(int percent) { return Below(100) < static_cast<size_t>(percent); }
  std::mt19937_64& rng() { return rng_; }

  // A key literal near `s` that most likely does not exist: an extension, a
  // prefix, a neighbour code point, or (unless `valid_key`) a string with
  // U+0001 or U+0000 (never in a key, but valid in a literal and right at
  // the planner's "next key" boundaries).
  std::string Near(const std::string& s, bool valid_key = false) {
    if (!valid_key && Chance(8)) return s + std::string(1, '\0') + (Chance(50) ? "" : "a");
    switch (Below(9)) {
      case 0: return s + "a";
      case 1: return s + Cp(0xE000);
      case 2: return s + Cp(0x1F600);
      case 3: {  // drop the last code point
        if (s.empty()) return s;
        size_t i = s.size() - 1;
        while (i > 0 && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80) i--;
        return s.substr(0, i);
      }
      case 4: {  // the last code point plus or minus one
        if (s.empty()) return " ";
        size_t i = s.size() - 1;
        while (i > 0 && (static_cast<uint8_t>(s[i]) & 0xC0) == 0x80) i--;
        uint32_t cp = 0;
        ForEachCodePoint(std::string_view(s).substr(i), [&](uint32_t c) {
          cp = c;
          return false;
        });
        uint32_t next = Below(2) ? cp + 1 : cp - 1;
        if (next < 0x20 || (next >= 0xD800 && next <= 0xDFFF) || next > 0x10FFFF) next = cp;
        return s.substr(0, i) + Cp(next);
      }
      case 5: return valid_key ? s + "!" : s + "\x01";
      case 6: return keys_.Next(3);
      case 7: {
        const auto tricky = TrickyKeys();
        return tricky[Below(tricky.size())];
      }
      default: return s + " ";
    }
  }

  std::string PkLiteral() {
    const std::string& pk = data_.pks[Below(data_.pks.size())];
    return Chance(70) ? pk : Near(pk);
  }
  std::string RkLiteral(const std::string* pk) {
    const std::vector<std::string>* pool = &data_.all_rks;
    if (pk) {
      auto it = data_.rks.find(*pk);
      if (it != data_.rks.end()) pool = &it->second;
    }
    const std::string& rk = (*pool)[Below(pool->size())];
    return Chance(65) ? rk : Near(rk);
  }

  static std::unique_ptr<FilterNode> Cmp(std::string prop, CompareOp op, Value v) {
    return FilterNode::Compare(std::move(prop), op, std::move(v));
  }
  CompareOp RangeOp() { return static_cast<CompareOp>(2 + Below(4)); }  // gt ge lt le
  CompareOp AnyOp() { return static_cast<CompareOp>(Below(6)); }

  std::unique_ptr<FilterNode> PropCompare() {
    if (Chance(12)) {  // Timestamp
      int64_t t = data_.timestamps[Below(data_.timestamps.size())] + static_cast<int64_t>(Below(3)) - 1;
      Value lit = Chance(90) ? Value::DateTime(t) : Value::Int64(t);  // a mistyped one, too
      return Cmp(std::string(kTimestampName), AnyOp(), std::move(lit));
    }
    if (Chance(5)) return Cmp("Missing", AnyOp(), PoolValue(kAllTypes[Below(8)], rng_, false));
    const PropName& p = kProps[Below(std::size(kProps))];
    const EdmType t = Chance(60) ? p.main : kAllTypes[Below(8)];
    return Cmp(p.name, AnyOp(), PoolValue(t, rng_, false));
  }

  // An `and` of key conditions and a few other terms: what the planner uses.
  std::unique_ptr<FilterNode> KeyConjunction() {
    std::vector<std::unique_ptr<FilterNode>> terms;
    std::optional<std::string> pinned;
    const size_t pk_shape = Below(100);
    if (pk_shape < 15) {
      // no PartitionKey condition
    } else if (pk_shape < 65) {
      pinned = PkLiteral();
      terms.push_back(Cmp(std::string(kPartitionKeyName), CompareOp::kEq, Value::String(*pinned)));
    } else if (pk_shape < 90) {
      // Bounds on the same literal (ties between `gt` and `ge`) now and then.
      std::string lit = PkLiteral();
      for (size_t n = 1 + Below(2); n > 0; n--) {
        if (Chance(70)) lit = PkLiteral();
        terms.push_back(Cmp(std::string(kPartitionKeyName), RangeOp(), Value::String(lit)));
      }
    } else {
      // eq plus another (maybe contradicting, maybe redundant) condition
      pinned = PkLiteral();
      terms.push_back(Cmp(std::string(kPartitionKeyName), CompareOp::kEq, Value::String(*pinned)));
      const std::string other = Chance(40) ? *pinned : PkLiteral();
      terms.push_back(Cmp(std::string(kPartitionKeyName), Chance(50) ? CompareOp::kEq : AnyOp(),
                          Value::String(other)));
    }
    const std::string* rk_pk = pinned ? &*pinned : nullptr;
    const size_t rk_shape = Below(100);
    if (rk_shape < 25) {
      // no RowKey condition
    } else if (rk_shape < 50) {
      terms.push_back(Cmp(std::string(kRowKeyName), CompareOp::kEq, Value::String(RkLiteral(rk_pk))));
      if (Chance(10)) {
        terms.push_back(Cmp(std::string(kRowKeyName), AnyOp(), Value::String(RkLiteral(rk_pk))));
      }
    } else if (rk_shape < 85) {
      std::string lit = RkLiteral(rk_pk);
      for (size_t n = 1 + Below(3); n > 0; n--) {
        if (Chance(70)) lit = RkLiteral(rk_pk);
        terms.push_back(Cmp(std::string(kRowKeyName), RangeOp(), Value::String(lit)));
      }
    } else if (rk_shape < 95) {
      std::vector<std::unique_ptr<FilterNode>> alts;
      for (size_t n = 2 + Below(2); n > 0; n--) {
        alts.push_back(Cmp(std::string(kRowKeyName), Chance(80) ? CompareOp::kEq : RangeOp(),
                           Value::String(RkLiteral(rk_pk))));
      }
      terms.push_back(FilterNode::Or(std::move(alts)));
    } else {
      terms.push_back(Cmp(std::string(kRowKeyName), CompareOp::kNe, Value::String(RkLiteral(rk_pk))));
    }
    for (size_t n = Below(100) < 45 ? 0 : 1 + Below(2); n > 0; n--) {
      switch (Below(4)) {
        case 0: terms.push_back(FilterNode::Not(PropCompare())); break;
        case 1: {
          std::vector<std::unique_ptr<FilterNode>> alts;
          alts.push_back(PropCompare());
          alts.push_back(PropCompare());
          terms.push_back(FilterNode::Or(std::move(alts)));
          break;
        }
        default: terms.push_back(PropCompare()); break;
      }
    }
    if (Chance(4)) {  // a key compared with a non-string literal
      terms.push_back(Cmp(Chance(50) ? std::string(kPartitionKeyName) : std::string(kRowKeyName),
                          AnyOp(), PoolValue(kAllTypes[1 + Below(7)], rng_, false)));
    }
    if (terms.empty()) terms.push_back(PropCompare());
    std::shuffle(terms.begin(), terms.end(), rng_);
    if (terms.size() == 1) return std::move(terms[0]);
    return FilterNode::And(std::move(terms));
  }

  std::unique_ptr<FilterNode> KeyCompare() {
    const bool pk = Chance(50);
    return Cmp(pk ? std::string(kPartitionKeyName) : std::string(kRowKeyName), AnyOp(),
               Value::String(pk ? PkLiteral() : RkLiteral(nullptr)));
  }

  std::unique_ptr<FilterNode> Expr(int depth) {
    if (depth == 0 || Chance(30)) return Chance(35) ? KeyCompare() : PropCompare();
    switch (Below(4)) {
      case 0: return FilterNode::Not(Expr(depth - 1));
      case 1: return KeyConjunction();
      default: {
        std::vector<std::unique_ptr<FilterNode>> children;
        for (size_t n = 2 + Below(2); n > 0; n--) children.push_back(Expr(depth - 1));
        return Chance(50) ? FilterNode::And(std::move(children)) : FilterNode::Or(std::move(children));
      }
    }
  }

  // Null = no filter.
  std::unique_ptr<FilterNode> Filter() {
    const size_t r = Below(100);
    if (r < 3) return nullptr;
    if (r < 70) return KeyConjunction();
    if (r < 80) return FilterNode::Not(KeyConjunction());
    if (r < 88) {  // (PK eq x and RK eq y) or (...): not narrowed, must still be right
      std::vector<std::unique_ptr<FilterNode>> alts;
      for (size_t n = 2; n > 0; n--) alts.push_back(KeyConjunction());
      return FilterNode::Or(std::move(alts));
    }
    return Expr(3);
  }

  // Text for a tree: canonical comparisons, sometimes written the other way
  // round (`'x' lt RowKey`), and-/or-children parenthesised when compound.
  std::string Print(const FilterNode& n) {
    switch (n.kind) {
      case FilterNode::Kind::kCompare: {
        const std::string canonical = ToString(n);
        if (!Chance(25)) return canonical;
        const std::string literal =
            canonical.substr(n.property.size() + 1 + CompareOpName(n.op).size() + 1);
        return literal + " " + std::string(CompareOpName(MirrorOp(n.op))) + " " + n.property;
      }
      case FilterNode::Kind::kNot:
        return "not (" + Print(*n.children[0]) + ")";
      case FilterNode::Kind::kAnd:
      case FilterNode::Kind::kOr: {
        std::string out;
        for (size_t i = 0; i < n.children.size(); i++) {
          if (i > 0) out += n.kind == FilterNode::Kind::kAnd ? " and " : " or ";
          const FilterNode& c = *n.children[i];
          const bool wrap = c.kind == FilterNode::Kind::kAnd || c.kind == FilterNode::Kind::kOr;
          out += wrap ? "(" + Print(c) + ")" : Print(c);
        }
        return out;
      }
    }
    return "";
  }

 private:
  std::mt19937_64 rng_;
  RandomKeys keys_;
  const DataSet& data_;
};

// ---- what the planner should have done ----------------------------------
//
// An oracle for the work a query should do, derived from the meaning of the
// key conditions rather than from key-range arithmetic: the top-level
// conjuncts of the parsed filter that compare PartitionKey / RowKey (`ne`
// narrows nothing), evaluated per key in UTF-16 order.

struct KeyConds {
  std::vector<std::pair<CompareOp, std::u16string>> pk, rk;
  std::optional<std::u16string> pk_eq, rk_eq;  // an `eq` among them
  bool mistyped = false;                       // a key against a non-string literal
};

KeyConds TopLevelKeyConds(const FilterNode* root) {
  KeyConds out;
  if (root == nullptr) return out;
  std::vector<const FilterNode*> terms;
  if (root->kind == FilterNode::Kind::kAnd) {
    for (const auto& c : root->children) terms.push_back(c.get());
  } else {
    terms.push_back(root);
  }
  for (const FilterNode* t : terms) {
    if (t->kind != FilterNode::Kind::kCompare) continue;
    const bool pk = t->property == kPartitionKeyName;
    if (!pk && t->property != kRowKeyName) continue;
    if (t->literal.type() != EdmType::kString) {
      out.mistyped = true;
      continue;
    }
    if (t->op == CompareOp::kNe) continue;
    const std::u16string lit = ToUtf16(t->literal.bytes());
    (pk ? out.pk : out.rk).emplace_back(t->op, lit);
    if (t->op == CompareOp::kEq) (pk ? out.pk_eq : out.rk_eq) = lit;
  }
  return out;
}

bool Holds16(const std::vector<std::pair<CompareOp, std::u16string>>& conds, const std::u16string& key) {
  for (const auto& [op, lit] : conds) {
    const int c = key.compare(lit);
    const bool ok = op == CompareOp::kEq   ? c == 0
                    : op == CompareOp::kGt ? c > 0
                    : op == CompareOp::kGe ? c >= 0
                    : op == CompareOp::kLt ? c < 0
                    : op == CompareOp::kLe ? c <= 0
                                           : true;
    if (!ok) return false;
  }
  return true;
}

// Whether any string satisfies the conditions. If one does, the smallest
// one is "", a literal, or the next string after a literal. Over all strings
// that is literal + U+0000; over keys (which never contain U+0000) it is
// literal + U+0001, and a literal with a U+0000 is first cut before it.
bool Satisfiable(const std::vector<std::pair<CompareOp, std::u16string>>& conds, bool keys_only) {
  if (Holds16(conds, u"")) return true;
  for (const auto& [op, lit] : conds) {
    if (keys_only) {
      const std::u16string cut = lit.substr(0, lit.find(u'\0'));
      if (Holds16(conds, cut) || Holds16(conds, cut + u'\x01')) return true;
    } else if (Holds16(conds, lit) || Holds16(conds, lit + u'\0')) {
      return true;
    }
  }
  return false;
}

// ---- the test ------------------------------------------------------------

class QueryDifferentialTest : public sidetable::testing::EngineTest {
 protected:
  void SetUp() override {
    options_.clock = [] { return kBaseTicks; };
    EngineTest::SetUp();
    ASSERT_TRUE(engine_->CreateTable(kTable).ok());
  }

  // Writes about `count` random entities (and then replaces and deletes some)
  // in batches interleaved across partitions; checks a full scan against the
  // model and keeps it as the reference.
  void Populate(uint64_t seed, size_t count) {
    std::mt19937_64 rng(seed);
    RandomKeys keys(seed * 31 + 7);
    auto below = [&](size_t n) { return static_cast<size_t>(rng() % n); };
    const auto tricky = TrickyKeys();

    // PartitionKeys: most of the tricky keys, with skewed sizes.
    std::vector<std::string> pks;
    for (const auto& k : tricky) {
      if (below(100) < 65) pks.push_back(k);
    }
    pks.push_back("");
    pks.push_back(Cp(0xE000));
    pks.push_back(Cp(0x1F600));
    std::sort(pks.begin(), pks.end());
    pks.erase(std::unique(pks.begin(), pks.end()), pks.end());
    std::vector<size_t> weight;
    for (size_t i = 0; i < pks.size(); i++) weight.push_back(1 + below(4) * below(4));
    std::discrete_distribution<size_t> pick_pk(weight.begin(), weight.end());

    auto random_entity = [&](const std::string& pk, const std::string& rk) {
      Entity e;
      e.partition_key = pk;
      e.row_key = rk;
      for (const PropName& p : kProps) {
        if (below(100) < 40) continue;  // missing
        const EdmType t = below(100) < 50 ? p.main : kAllTypes[below(8)];
        e.Set(p.name, PoolValue(t, rng, true));
      }
      return e;
    };

    std::map<Key, Entity, KeyLess> model;
    std::vector<Entity> fresh;
    for (size_t tries = 0; fresh.size() < count && tries < count * 20; tries++) {
      const std::string& pk = pks[pick_pk(rng)];
      std::string rk;
      const size_t shape = below(100);
      if (shape < 35) {
        rk = tricky[below(tricky.size())];
      } else if (shape < 70) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "r%03zu", below(400));
        rk = buf;
      } else {
        rk = keys.Next(4);
      }
      Entity e = random_entity(pk, rk);
      if (!model.emplace(Key{pk, rk}, e).second) continue;
      fresh.push_back(std::move(e));
    }

    // Batches of one partition, 1..40 operations, flushed in random order so
    // that timestamps interleave across partitions.
    std::map<std::string, Batch> pending;
    std::map<std::string, size_t> flush_at;
    auto flush = [&](const std::string& pk) {
      auto it = pending.find(pk);
      if (it == pending.end()) return;
      auto r = engine_->Execute(it->second);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      pending.erase(it);
    };
    for (auto& e : fresh) {
      const std::string pk = e.partition_key;
      auto [it, added] = pending.try_emplace(pk, Batch(kTable));
      if (added) flush_at[pk] = 1 + below(40);
      it->second.Insert(std::move(e));
      if (it->second.size() >= flush_at[pk]) flush(pk);
      if (::testing::Test::HasFatalFailure()) return;
    }
    while (!pending.empty()) {
      flush(pending.begin()->first);
      if (::testing::Test::HasFatalFailure()) return;
    }

    // Later writes: replace ~8% (new properties, new timestamp), delete ~5%.
    std::vector<Key> all_keys;
    for (const auto& [k, e] : model) all_keys.push_back(k);
    for (const Key& k : all_keys) {
      const size_t r = below(100);
      if (r < 8) {
        Entity e = random_entity(k.first, k.second);
        ASSERT_TRUE(engine_->Execute(std::move(Batch(kTable).InsertOrReplace(e))).ok());
        model[k] = e;
      } else if (r < 13) {
        ASSERT_TRUE(engine_->Execute(std::move(Batch(kTable).Delete(k.first, k.second))).ok());
        model.erase(k);
      }
    }

    // The reference: a full scan, which must hold the model, in UTF-16 order.
    reference_.clear();
    reference_keys_.clear();
    ref16_.clear();
    auto cur = engine_->Scan(kTable, ScanBounds{}, nullptr);
    ASSERT_TRUE(cur.ok()) << cur.status().ToString();
    for (; (*cur)->Valid(); (*cur)->Next()) {
      Entity e;
      ASSERT_TRUE((*cur)->Read(&e).ok());
      reference_.push_back(std::move(e));
    }
    ASSERT_TRUE((*cur)->status().ok());
    ASSERT_EQ(reference_.size(), model.size());
    size_t i = 0;
    for (const auto& [k, want] : model) {
      const Entity& got = reference_[i++];
      ASSERT_EQ(Key(got.partition_key, got.row_key), k) << "scan order differs from UTF-16 order at " << i;
      ASSERT_EQ(got.properties, want.properties) << ShowEntity(got);
    }

    data_ = DataSet();
    std::set<std::string> pk_set;
    std::set<int64_t> ts_set;
    for (const Entity& e : reference_) {
      pk_set.insert(e.partition_key);
      data_.rks[e.partition_key].push_back(e.row_key);
      data_.all_rks.push_back(e.row_key);
      ts_set.insert(e.timestamp);
      partition_count_[e.partition_key]++;
    }
    for (const Entity& e : reference_) {
      reference_keys_.insert(Key(e.partition_key, e.row_key));
      ref16_.emplace_back(ToUtf16(e.partition_key), ToUtf16(e.row_key));
    }
    data_.pks.assign(pk_set.begin(), pk_set.end());
    data_.timestamps.assign(ts_set.begin(), ts_set.end());
    ASSERT_GE(data_.pks.size(), 5u);
    ASSERT_GE(data_.timestamps.size(), 10u);
  }

  // Entities of the reference inside scan bounds, with the documented
  // meaning of ScanBounds: (pk, rk) >= start and < end.
  size_t CountInBounds(const ScanBounds& b) const {
    KeyLess less;
    size_t n = 0;
    for (const Entity& e : reference_) {
      const Key k(e.partition_key, e.row_key);
      if (b.start && less(k, *b.start)) continue;
      if (b.end && !less(k, *b.end)) continue;
      n++;
    }
    return n;
  }

  static std::vector<Entity> Project(std::vector<Entity> in, const std::vector<std::string>& select) {
    if (select.empty()) return in;
    for (Entity& e : in) {
      std::vector<Property> kept;
      for (Property& p : e.properties) {
        if (std::find(select.begin(), select.end(), p.name) != select.end()) kept.push_back(std::move(p));
      }
      e.properties = std::move(kept);
    }
    return in;
  }

  // Collects one failure message; the first kShown are reported in full, the
  // rest only counted (one bug tends to fail many queries), so that every
  // query still runs.
  static constexpr int kShown = 8;
  class Reporter {
   public:
    explicit Reporter(int* failed) : failed_(failed) {}
    ~Reporter() {
      if (++*failed_ <= kShown) ADD_FAILURE() << out_.str();
    }
    template <typename T>
    Reporter& operator<<(const T& v) {
      out_ << v;
      return *this;
    }

   private:
    int* failed_;
    std::ostringstream out_;
  };
  Reporter Report() { return Reporter(&failed_); }
  void TearDown() override {
    if (failed_ > kShown) ADD_FAILURE() << (failed_ - kShown) << " more failing queries not shown";
    EngineTest::TearDown();
  }

  // Runs one query to the end and compares it with brute force. Returns
  // false (after reporting) on the first disagreement.
  bool Check(const std::string& where, const FilterNode* tree, const Query& base) {
    std::ostringstream ctx;
    ctx << where << "\n  filter: [" << Show(base.filter) << "]\n  top: "
        << (base.top ? std::to_string(*base.top) : "none") << ", max_examined: " << base.max_examined
        << ", select: {";
    for (const auto& s : base.select) ctx << s << ",";
    ctx << "}";

    if (base.continuation) {
      ctx << ", starting at continuation "
          << ShowKey(base.continuation->next_partition_key, base.continuation->next_row_key);
    }
    // A query that starts from a continuation covers the keys from there on.
    const std::optional<Key> from =
        base.continuation ? std::optional<Key>(Key(base.continuation->next_partition_key,
                                                   base.continuation->next_row_key))
                          : std::nullopt;
    auto before_start = [&](const Entity& e) {
      return from && KeyLess()(Key(e.partition_key, e.row_key), *from);
    };

    // Brute force over the reference.
    std::vector<Entity> want;
    for (const Entity& e : reference_) {
      if (before_start(e)) continue;
      if (tree == nullptr || Matches(*tree, e)) want.push_back(e);
    }
    want = Project(std::move(want), base.select);

    auto explained = Explain(base);
    if (!explained.ok()) {
      Report() << ctx.str() << "\n  Explain failed: " << explained.status().ToString();
      return false;
    }
    const Plan plan = *explained;
    ctx << "\n  plan: " << Show(plan.ToString());

    std::vector<Entity> got;
    Query q = base;
    uint64_t examined = 0;
    const size_t limit = static_cast<size_t>(base.top.value_or(kMaxPageSize));
    const size_t max_pages = reference_.size() + 5;
    size_t pages = 0;
    for (;; pages++) {
      if (pages > max_pages) {
        Report() << ctx.str() << "\n  no end after " << pages << " pages";
        return false;
      }
      auto r = ExecuteQuery(*engine_, q);
      if (!r.ok()) {
        Report() << ctx.str() << "\n  page " << pages << " failed: " << r.status().ToString();
        return false;
      }
      const QueryPage& page = *r;
      std::string bad;
      if (page.entities.size() > limit) bad += " page larger than $top;";
      if (page.stats.examined > base.max_examined) bad += " examined more than max_examined;";
      if (page.stats.returned != page.entities.size()) bad += " stats.returned wrong;";
      if (page.stats.examined < page.entities.size()) bad += " returned more than examined;";
      if (page.stats.plan != plan.kind) bad += " stats.plan differs from Explain;";
      if (plan.kind == PlanKind::kPoint && page.stats.examined > 1) bad += " point read examined > 1;";
      if ((plan.kind == PlanKind::kPoint || plan.kind == PlanKind::kEmpty) && page.continuation) {
        bad += " continuation on a point/empty plan;";
      }
      if (plan.kind == PlanKind::kEmpty && (page.stats.examined != 0 || !page.entities.empty())) {
        bad += " empty plan read something;";
      }
      if (page.continuation) {
        // The next entity to examine: it exists and is past what was returned.
        const Key next(page.continuation->next_partition_key, page.continuation->next_row_key);
        if (!reference_keys_.count(next)) bad += " continuation names no entity;";
        if (!page.entities.empty() &&
            !KeyLess()(Key(page.entities.back().partition_key, page.entities.back().row_key), next)) {
          bad += " continuation not after the last entity;";
        }
      }
      if (!bad.empty()) {
        Report() << ctx.str() << "\n  page " << pages << ":" << bad << " (entities "
                      << page.entities.size() << ", examined " << page.stats.examined << ", plan "
                      << PlanKindName(page.stats.plan) << ")";
        return false;
      }
      examined += page.stats.examined;
      for (const Entity& e : page.entities) got.push_back(e);
      if (!page.continuation) break;
      q.continuation = page.continuation;
    }

    // The result, entity by entity.
    const size_t n = std::min(got.size(), want.size());
    for (size_t i = 0; i < n; i++) {
      const Entity& g = got[i];
      const Entity& w = want[i];
      if (g.partition_key != w.partition_key || g.row_key != w.row_key || g.properties != w.properties ||
          g.timestamp != w.timestamp || g.etag != w.etag) {
        Report() << ctx.str() << "\n  result #" << i << " differs\n    got:  " << ShowEntity(g)
                      << "\n    want: " << ShowEntity(w) << "\n  (" << got.size() << " returned, "
                      << want.size() << " expected)";
        return false;
      }
    }
    if (got.size() != want.size()) {
      const bool more = got.size() > want.size();
      Report() << ctx.str() << "\n  " << got.size() << " returned, " << want.size()
                    << " expected; first " << (more ? "extra" : "missing") << ": "
                    << ShowEntity(more ? got[n] : want[n]);
      return false;
    }

    // The plan against what the key conditions allow.
    std::string bad;
    auto parsed = base.filter.empty() ? Result<std::unique_ptr<FilterNode>>(std::unique_ptr<FilterNode>())
                                      : ParseFilter(base.filter);
    const KeyConds kc = TopLevelKeyConds(parsed.ok() ? parsed->get() : nullptr);
    // Empty plans must be right about keys; the planner is expected to see
    // what contradicts over all strings (so `PartitionKey eq 'a' + U+0000` may
    // be planned either way: no key is equal to it).
    const bool keys_possible = !kc.mistyped && Satisfiable(kc.pk, true) && Satisfiable(kc.rk, true);
    const bool should_be_empty = kc.mistyped || !Satisfiable(kc.pk, false) || !Satisfiable(kc.rk, false);
    const bool scoped = plan.kind == PlanKind::kPoint || plan.kind == PlanKind::kPartitionRange ||
                        plan.kind == PlanKind::kPartitionScan;
    // Known imprecision, tolerated: `lt ''` (nothing is below "") is not
    // seen as a contradiction; the work check below still holds such plans
    // to examining only what their other conditions allow.
    auto lt_empty = [](const auto& conds) {
      return std::any_of(conds.begin(), conds.end(),
                         [](const auto& c) { return c.first == CompareOp::kLt && c.second.empty(); });
    };
    if (plan.kind == PlanKind::kEmpty && keys_possible) {
      bad += " empty plan, but keys can satisfy the key conditions;";
    } else if (plan.kind != PlanKind::kEmpty && should_be_empty && !lt_empty(kc.pk) && !lt_empty(kc.rk)) {
      bad += " the key conditions contradict each other, but the plan is not empty;";
    } else if (plan.kind != PlanKind::kEmpty && !should_be_empty) {
      if (kc.pk.empty() && plan.kind != PlanKind::kTableScan) bad += " no PartitionKey condition, but not a table scan;";
      if (kc.pk_eq && !scoped) bad += " PartitionKey eq, but not partition-scoped;";
      if (kc.pk_eq && kc.rk_eq && plan.kind != PlanKind::kPoint) bad += " both keys eq, but not a point read;";
      if (plan.kind == PlanKind::kPartitionScan && !kc.rk.empty()) bad += " RowKey conditions unused;";
      if (plan.kind == PlanKind::kPartitionRange && kc.rk.empty()) bad += " partition range without RowKey conditions;";
    }
    // The entities a perfect plan examines: from the start key on, the
    // PartitionKey conditions hold, and, once the partition is pinned, the
    // RowKey conditions as well.
    uint64_t ideal = 0;
    if (plan.kind != PlanKind::kEmpty) {
      for (size_t i = 0; i < reference_.size(); i++) {
        if (before_start(reference_[i])) continue;
        if (!Holds16(kc.pk, ref16_[i].first)) continue;
        if (scoped && !Holds16(kc.rk, ref16_[i].second)) continue;
        ideal++;
      }
      if (plan.kind == PlanKind::kPoint) ideal = std::min<uint64_t>(ideal, 1);
    }
    if (examined != ideal) {
      bad += " examined " + std::to_string(examined) + " entities in all, a perfect " +
             std::string(PlanKindName(plan.kind)) + " plan examines " + std::to_string(ideal) + ";";
    }

    // Execution: a scan examines each entity of its range exactly once across
    // all pages; partition-scoped plans stay inside their partition.
    switch (plan.kind) {
      case PlanKind::kEmpty:
        break;
      case PlanKind::kPoint:
        if (examined > 1) bad += " point read examined " + std::to_string(examined);
        break;
      case PlanKind::kPartitionRange:
      case PlanKind::kPartitionScan:
      case PlanKind::kKeyRange:
      case PlanKind::kTableScan: {
        ScanBounds range = plan.bounds;
        if (from && (!range.start || KeyLess()(*range.start, *from))) range.start = *from;
        const size_t in_range = CountInBounds(range);
        if (examined != in_range) {
          bad += " examined " + std::to_string(examined) + " entities over " + std::to_string(pages + 1) +
                " pages, but the plan's range holds " + std::to_string(in_range);
        }
        if (plan.kind == PlanKind::kPartitionRange || plan.kind == PlanKind::kPartitionScan) {
          const std::string& pk = plan.bounds.start ? plan.bounds.start->first : std::string("?");
          auto it = partition_count_.find(pk);
          const size_t in_partition = it == partition_count_.end() ? 0 : it->second;
          if (examined > in_partition) {
            bad += " examined " + std::to_string(examined) + " > " + std::to_string(in_partition) +
                   " entities of partition '" + Show(pk) + "'";
          }
        }
        break;
      }
    }
    if (!bad.empty()) {
      Report() << ctx.str() << "\n  " << bad;
      return false;
    }
    stats_[plan.kind]++;
    if (!want.empty()) nonempty_[plan.kind]++;
    matched_ += want.size();
    return true;
  }

  void RunSeed(uint64_t seed, size_t entities, int filters) {
    Populate(seed, entities);
    if (HasFatalFailure()) return;
    FilterGen gen(seed * 1000003 + 17, data_);
    for (int i = 0; i < filters; i++) {
      std::unique_ptr<FilterNode> tree = gen.Filter();
      Query q;
      q.table = kTable;
      q.filter = tree ? gen.Print(*tree) : std::string();
      // The text must mean the tree (else the comparison below is moot).
      if (tree) {
        auto parsed = ParseFilter(q.filter);
        ASSERT_TRUE(parsed.ok()) << q.filter << ": " << parsed.status().ToString();
      }
      const std::string where = "seed " + std::to_string(seed) + " filter #" + std::to_string(i);
      auto randomize = [&](Query* query) {
        query->top = gen.Chance(10) ? std::nullopt : std::optional<int>(1 + static_cast<int>(gen.Below(50)));
        query->max_examined = gen.Chance(30) ? 1 + gen.Below(gen.Chance(50) ? 3 : 40) : 100'000;
      };
      randomize(&q);
      Check(where, tree.get(), q);
      // Sometimes resume from a continuation a client made up: an existing
      // key or a valid key next to one; for a point read often its own key.
      if (gen.Chance(20)) {
        Query c = q;
        const Entity& at = reference_[gen.Below(reference_.size())];
        Key start(at.partition_key, at.row_key);
        auto plan = Explain(q);
        if (plan.ok() && plan->kind == PlanKind::kPoint && gen.Chance(60) &&
            ValidateKey(plan->point_partition_key, "pk").ok() && ValidateKey(plan->point_row_key, "rk").ok()) {
          start = Key(plan->point_partition_key, plan->point_row_key);
        }
        auto near_key = [&](const std::string& k) {
          std::string n = gen.Near(k, /*valid_key=*/true);
          return ValidateKey(n, "key").ok() ? n : k;
        };
        if (gen.Chance(40)) start.second = near_key(start.second);
        if (gen.Chance(15)) start.first = near_key(start.first);
        c.continuation = Continuation{start.first, start.second};
        randomize(&c);
        Check(where + " from a continuation", tree.get(), c);
      }
      // A point read resumed at its own key must still read it.
      if (auto plan = Explain(q); plan.ok() && plan->kind == PlanKind::kPoint &&
                                  ValidateKey(plan->point_partition_key, "pk").ok() &&
                                  ValidateKey(plan->point_row_key, "rk").ok()) {
        Query c = q;
        c.continuation = Continuation{plan->point_partition_key, plan->point_row_key};
        Check(where + " resumed at its point", tree.get(), c);
      }
      // Again with a $select: user names (present, absent, of varying types),
      // system names, and a name no entity has.
      Query s = q;
      s.select.clear();
      for (size_t n = 1 + gen.Below(4); n > 0; n--) {
        const size_t k = gen.Below(std::size(kProps) + 4);
        if (k < std::size(kProps)) {
          s.select.push_back(kProps[k].name);
        } else {
          static const char* kOther[] = {"PartitionKey", "RowKey", "Timestamp", "Missing"};
          s.select.push_back(kOther[k - std::size(kProps)]);
        }
      }
      randomize(&s);
      Check(where + " with $select", tree.get(), s);
    }
    // Coverage of the planner: each kind must have come up.
    std::string seen;
    for (auto& [kind, n] : stats_) {
      seen += std::string(PlanKindName(kind)) + "=" + std::to_string(n) + " (" +
              std::to_string(nonempty_[kind]) + " non-empty) ";
    }
    RecordProperty("plans", seen);
    for (PlanKind k : {PlanKind::kEmpty, PlanKind::kPoint, PlanKind::kPartitionRange,
                       PlanKind::kPartitionScan, PlanKind::kKeyRange, PlanKind::kTableScan}) {
      EXPECT_GE(stats_[k], 5) << "plan " << PlanKindName(k) << " too rare; seen: " << seen;
    }
    EXPECT_GT(matched_, static_cast<size_t>(filters)) << "filters match almost nothing";
  }

  std::vector<Entity> reference_;
  std::set<Key> reference_keys_;  // byte order: only for lookups
  std::vector<std::pair<std::u16string, std::u16string>> ref16_;  // keys of reference_ in UTF-16
  DataSet data_;
  std::map<std::string, size_t> partition_count_;
  int failed_ = 0;                    // failing queries
  std::map<PlanKind, int> stats_;     // queries per plan
  std::map<PlanKind, int> nonempty_;  // ... of which returned something
  size_t matched_ = 0;
};

TEST_F(QueryDifferentialTest, Seed1SmallTable) { RunSeed(1, 300, 300); }
TEST_F(QueryDifferentialTest, Seed2MediumTable) { RunSeed(2, 900, 300); }
TEST_F(QueryDifferentialTest, Seed3LargeTable) { RunSeed(3, 2000, 300); }

// Every single key comparison with every literal of interest (each key in
// use and its neighbours), one operator at a time: the planner's bounds in
// isolation, inside each partition and across partitions.
TEST_F(QueryDifferentialTest, EverySingleKeyComparison) {
  Populate(4, 400);
  ASSERT_FALSE(HasFatalFailure());
  FilterGen gen(4, data_);
  std::set<std::string> pk_lits(data_.pks.begin(), data_.pks.end());
  for (const auto& pk : data_.pks) {
    pk_lits.insert(pk + "a");
    pk_lits.insert(pk + "\x01");
    pk_lits.insert(pk + std::string(1, '\0'));
    pk_lits.insert(pk + Cp(0xE000));
    pk_lits.insert(pk + Cp(0x1F600));
  }
  auto run = [&](const std::string& where, std::unique_ptr<FilterNode> tree) {
    Query q;
    q.table = kTable;
    q.filter = ToString(*tree);
    q.top = 1 + static_cast<int>(gen.Below(30));
    if (gen.Chance(25)) q.max_examined = 1 + gen.Below(10);
    Check(where, tree.get(), q);
  };
  for (const auto& lit : pk_lits) {
    for (int op = 0; op < 6; op++) {
      run("PartitionKey literal", FilterNode::Compare(std::string(kPartitionKeyName),
                                                      static_cast<CompareOp>(op), Value::String(lit)));
    }
  }
  // RowKey conditions inside the first and the last partition in byte order
  // ("" and a U+E000.. or supplementary key) and the biggest one.
  std::set<std::string> parts = {data_.pks.front(), data_.pks.back()};
  parts.insert(std::max_element(partition_count_.begin(), partition_count_.end(),
                                [](const auto& a, const auto& b) { return a.second < b.second; })
                   ->first);
  for (const auto& pk : parts) {
    std::set<std::string> rk_lits;
    for (const auto& rk : data_.rks[pk]) {
      rk_lits.insert(rk);
      if (gen.Chance(30)) rk_lits.insert(rk + "\x01");
      if (gen.Chance(30)) rk_lits.insert(rk + std::string(1, '\0'));
      if (gen.Chance(30)) rk_lits.insert(gen.Near(rk));
    }
    for (const auto& lit : rk_lits) {
      for (int op = 0; op < 6; op++) {
        std::vector<std::unique_ptr<FilterNode>> both;
        both.push_back(FilterNode::Compare(std::string(kPartitionKeyName), CompareOp::kEq, Value::String(pk)));
        both.push_back(FilterNode::Compare(std::string(kRowKeyName), static_cast<CompareOp>(op),
                                           Value::String(lit)));
        run("RowKey literal in partition '" + Show(pk) + "'", FilterNode::And(std::move(both)));
      }
    }
  }
}

// Minimal reproduction of a planner bug found by the generator above.
//
// A PartitionKey upper bound whose literal contains U+0000 ('a' + U+0000)
// loses every row of partition 'a' except the one with the empty RowKey.
// Matches() is right: "a" < "a\0" (a proper prefix), so both rows satisfy
// `PartitionKey lt 'a\0'` and `PartitionKey le 'a\0'`. The planner builds the
// end bound ("a\0", "") resp. ("a\0\x01", ""); in the storage key
// (ord(PK) 0x00 ord(RK)) the literal's U+0000 collides with the byte that ends
// the PartitionKey, so the bound cuts partition 'a' after RowKey "". The
// planner's comment "keys never contain U+0000" holds for keys, not for
// filter literals (the parser accepts U+0000 inside a string literal).
TEST_F(QueryDifferentialTest, PartitionKeyBoundWithNulInLiteral) {
  for (const char* rk : {"", "x", "y"}) {
    ASSERT_TRUE(Insert(kTable, sidetable::testing::MakeEntity("a", rk)).ok());
  }
  ASSERT_TRUE(Insert(kTable, sidetable::testing::MakeEntity("ab", "z")).ok());
  const std::string nul(1, '\0');
  for (const std::string& f : {"PartitionKey lt 'a" + nul + "'", "PartitionKey le 'a" + nul + "'",
                               "PartitionKey ge 'a' and PartitionKey lt 'a" + nul + "'"}) {
    auto r = ExecuteQuery(*engine_, {.table = kTable, .filter = f});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    std::vector<std::string> rks;
    for (const auto& e : r->entities) rks.push_back(e.row_key);
    EXPECT_EQ(rks, (std::vector<std::string>{"", "x", "y"}))
        << "[" << Show(f) << "], plan " << Show(Explain({.table = kTable, .filter = f})->ToString());
  }
}

}  // namespace
}  // namespace sidetable::query
