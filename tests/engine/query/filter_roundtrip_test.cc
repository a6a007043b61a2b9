// Round trips: a small random generator writes filter text together with the
// tree it should parse to (random spellings, blanks, redundant parentheses,
// reversed comparisons). The parse must equal that tree, and ToString() of it
// must parse back to the same tree and be a fixed point. Fixed seeds.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>

#include "engine/query/filter.h"
#include "engine/utf8.h"

namespace sidetable::query {
namespace {

using Kind = FilterNode::Kind;

class Generator {
 public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  struct Out {
    std::string text;
    std::unique_ptr<FilterNode> tree;
  };

  Out Filter() {
    comparisons_ = 0;
    return Expr(4);
  }

  // A literal value and one of its accepted spellings.
  std::pair<Value, std::string> Literal() {
    switch (Below(8)) {
      case 0: {
        std::string s;
        static const uint32_t kPoints[] = {'a', 'Z', '0', ' ', '\'', '_', 0xE9, 0x20AC, 0xD7FF,
                                           0xE000, 0xFF21, 0xFFFF, 0x1F600, 0x10FFFF};
        for (size_t n = Below(8); n > 0; n--) AppendUtf8(&s, kPoints[Below(std::size(kPoints))]);
        std::string text = "'";
        for (char c : s) text += c == '\'' ? std::string("''") : std::string(1, c);
        return {Value::String(s), text + "'"};
      }
      case 1: {
        static const int32_t kEdges[] = {0, 1, -1, INT32_MIN, INT32_MAX};
        const int32_t v = Below(3) == 0 ? kEdges[Below(5)] : static_cast<int32_t>(rng_());
        std::string text = std::to_string(v);
        if (v >= 0 && Below(4) == 0) text = "00" + text;  // leading zeros are allowed
        return {Value::Int32(v), text};
      }
      case 2: {
        const auto v = static_cast<int64_t>(rng_());
        return {Value::Int64(v), std::to_string(v) + (Below(2) ? "L" : "l")};
      }
      case 3: {
        double d;
        if (Below(2)) {
          do {
            d = std::bit_cast<double>(static_cast<uint64_t>(rng_()));
          } while (!std::isfinite(d));
        } else {
          d = static_cast<double>(static_cast<int32_t>(rng_() % 20001) - 10000) / 100.0;
        }
        char buf[40];
        std::snprintf(buf, sizeof buf, "%.17g", d);
        std::string text = buf;
        if (text.find_first_of(".e") == std::string::npos) text += Below(2) ? ".0" : "d";
        return {Value::Double(d), text};
      }
      case 4:
        return Below(2) ? std::pair{Value::Boolean(true), std::string("true")}
                        : std::pair{Value::Boolean(false), std::string("false")};
      case 5: {
        int64_t ticks = kMinDateTimeTicks + static_cast<int64_t>(rng_() % static_cast<uint64_t>(
                                                                   kMaxDateTimeTicks - kMinDateTimeTicks + 1));
        if (Below(2)) ticks -= ticks % kTicksPerSecond;
        std::string iso = FormatDateTime(ticks);  // ...SS.fffffffZ
        if (ticks % kTicksPerSecond == 0 && Below(2)) iso = iso.substr(0, 19) + (Below(2) ? "Z" : "+00:00");
        return {Value::DateTime(ticks), "datetime'" + iso + "'"};
      }
      case 6: {
        Guid g;
        for (auto& b : g) b = static_cast<uint8_t>(rng_());
        std::string text = FormatGuid(g);
        if (Below(2)) {
          for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        }
        return {Value::MakeGuid(g), "guid'" + text + "'"};
      }
      default: {
        std::string bytes;
        for (size_t n = Below(6); n > 0; n--) bytes += static_cast<char>(rng_());
        std::string text = Value::Binary(bytes).ToString();  // X'..'
        if (Below(2)) {
          text = "binary" + text.substr(1);
          for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        }
        return {Value::Binary(bytes), text};
      }
    }
  }

 private:
  size_t Below(size_t n) { return static_cast<size_t>(rng_() % n); }

  std::string Blank() {
    static const char* kBlanks[] = {" ", " ", " ", "  ", "\t", "\n", " \r\n "};
    return kBlanks[Below(std::size(kBlanks))];
  }
  std::string MaybeBlank() { return Below(3) == 0 ? Blank() : ""; }

  std::string Paren(const std::string& text) { return "(" + MaybeBlank() + text + MaybeBlank() + ")"; }

  Out Compare() {
    comparisons_++;
    static const char* kNames[] = {"a", "b", "Age", "PartitionKey", "RowKey", "Timestamp",
                                   "_x1", "X", "datetime", "Name"};
    std::string name = kNames[Below(std::size(kNames))];
    const auto op = static_cast<CompareOp>(Below(6));
    auto [value, spelled] = Literal();
    std::string text = Below(3) == 0
                           ? spelled + Blank() + std::string(CompareOpName(MirrorOp(op))) + Blank() + name
                           : name + Blank() + std::string(CompareOpName(op)) + Blank() + spelled;
    return {text, FilterNode::Compare(name, op, std::move(value))};
  }

  Out Expr(int depth) {
    if (depth == 0 || comparisons_ >= 90 || Below(10) < 3) {
      Out c = Compare();
      if (Below(8) == 0) c.text = Paren(c.text);
      return c;
    }
    const size_t pick = Below(3);
    if (pick == 2) {
      Out child = Expr(depth - 1);
      const bool needs = child.tree->kind == Kind::kAnd || child.tree->kind == Kind::kOr;
      std::string text = "not" + ((needs || Below(2)) ? MaybeBlank() + Paren(child.text) : Blank() + child.text);
      return {text, FilterNode::Not(std::move(child.tree))};
    }
    const Kind kind = pick == 0 ? Kind::kAnd : Kind::kOr;
    std::string text;
    std::vector<std::unique_ptr<FilterNode>> children;
    for (size_t i = 0, n = 2 + Below(2); i < n; i++) {
      Out child = Expr(depth - 1);
      // An `or` inside an `and` needs parentheses; anything may have them.
      const bool needs = kind == Kind::kAnd && child.tree->kind == Kind::kOr;
      if (i > 0) text += Blank() + (kind == Kind::kAnd ? "and" : "or") + Blank();
      text += (needs || Below(5) == 0) ? Paren(child.text) : child.text;
      // The parser flattens same-kind nesting, parenthesised or not.
      if (child.tree->kind == kind) {
        for (auto& g : child.tree->children) children.push_back(std::move(g));
      } else {
        children.push_back(std::move(child.tree));
      }
    }
    return {text, kind == Kind::kAnd ? FilterNode::And(std::move(children)) : FilterNode::Or(std::move(children))};
  }

  std::mt19937_64 rng_;
  int comparisons_ = 0;
};

Entity Probe() {
  Entity e;
  e.partition_key = "p";
  e.row_key = "r";
  e.timestamp = kUnixEpochTicks;
  e.Set("a", Value::Int32(0));
  e.Set("b", Value::Double(0.5));
  e.Set("Age", Value::Int64(40));
  e.Set("Name", Value::String("m"));
  e.Set("X", Value::Boolean(true));
  return e;
}

TEST(FilterRoundTrip, GeneratedFiltersParseToTheirTreeAndPrintCanonically) {
  const Entity probe = Probe();
  int parsed = 0;
  for (uint64_t seed : {1u, 2u, 3u, 42u, 2024u}) {
    Generator gen(seed);
    for (int i = 0; i < 400; i++) {
      const Generator::Out g = gen.Filter();
      auto first = ParseFilter(g.text);
      ASSERT_TRUE(first.ok()) << "seed " << seed << " #" << i << " [" << g.text << "]: " << first.status().message();
      ASSERT_EQ(**first, *g.tree) << "seed " << seed << " #" << i << " [" << g.text << "] parsed as ["
                                  << ToString(**first) << "], wanted [" << ToString(*g.tree) << "]";
      const std::string canonical = ToString(**first);
      auto second = ParseFilter(canonical);
      ASSERT_TRUE(second.ok()) << canonical << ": " << second.status().message();
      ASSERT_EQ(**second, **first) << "[" << g.text << "] -> [" << canonical << "]";
      ASSERT_EQ(ToString(**second), canonical);
      EXPECT_EQ(Matches(**second, probe), Matches(*g.tree, probe)) << canonical;
      parsed++;
    }
  }
  EXPECT_EQ(parsed, 2000);
}

// Every literal kind, many random values: the canonical spelling reads back
// to the identical Value (Doubles bit for bit).
TEST(FilterRoundTrip, LiteralsSurviveToString) {
  Generator gen(7);
  for (int i = 0; i < 20000; i++) {
    auto [value, spelled] = gen.Literal();
    auto node = FilterNode::Compare("P", CompareOp::kGe, value);
    const std::string text = ToString(*node);
    auto back = ParseFilter(text);
    ASSERT_TRUE(back.ok()) << text << ": " << back.status().message();
    ASSERT_EQ((*back)->literal, value) << "spelled " << spelled << ", printed " << text;
    auto from_spelling = ParseFilter("P ge " + spelled);
    ASSERT_TRUE(from_spelling.ok()) << spelled << ": " << from_spelling.status().message();
    ASSERT_EQ((*from_spelling)->literal, value) << spelled;
  }
}

TEST(FilterRoundTrip, HandBuiltNestingIsPrintedWithParentheses) {
  // Not flattened by hand: the text keeps the grouping, and the parser then
  // flattens it (and/or are associative, so the meaning is unchanged).
  std::vector<std::unique_ptr<FilterNode>> inner;
  inner.push_back(FilterNode::Compare("b", CompareOp::kEq, Value::Int32(2)));
  inner.push_back(FilterNode::Compare("c", CompareOp::kEq, Value::Int32(3)));
  std::vector<std::unique_ptr<FilterNode>> outer;
  outer.push_back(FilterNode::Compare("a", CompareOp::kEq, Value::Int32(1)));
  outer.push_back(FilterNode::And(std::move(inner)));
  auto tree = FilterNode::And(std::move(outer));
  EXPECT_EQ(ToString(*tree), "a eq 1 and (b eq 2 and c eq 3)");
  auto parsed = ParseFilter(ToString(*tree));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ((*parsed)->children.size(), 3u);
  EXPECT_FALSE(**parsed == *tree);
  EXPECT_TRUE(*tree->Clone() == *tree);
}

}  // namespace
}  // namespace sidetable::query
