// The bounds against hostile input: length, nesting depth, comparisons.
// Each is tested at the limit (accepted) and one past it (rejected, with the
// position of the offending token).
#include <gtest/gtest.h>

#include <string>

#include "engine/query/filter.h"

namespace sidetable::query {
namespace {

std::string Repeat(std::string_view s, int n) {
  std::string out;
  for (int i = 0; i < n; i++) out += s;
  return out;
}

void ExpectRejected(const std::string& text, size_t position, std::string_view fragment,
                    const FilterLimits& limits = FilterLimits()) {
  auto r = ParseFilter(text, limits);
  ASSERT_FALSE(r.ok()) << "accepted " << text.size() << " bytes";
  EXPECT_EQ(r.status().code(), Code::kInvalidInput);
  EXPECT_NE(r.status().message().find("at position " + std::to_string(position)), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find(fragment), std::string::npos) << r.status().message();
}

TEST(FilterLimits, DefaultsAreTheDocumentedOnes) {
  const FilterLimits limits;
  EXPECT_EQ(limits.max_length, 32u * 1024);
  EXPECT_EQ(limits.max_depth, 64);
  EXPECT_EQ(limits.max_comparisons, 100);
}

TEST(FilterLimits, Length) {
  const std::string head = "Name eq '";
  std::string at_limit = head + std::string(32 * 1024 - head.size() - 1, 'x') + "'";
  ASSERT_EQ(at_limit.size(), 32u * 1024);
  EXPECT_TRUE(ParseFilter(at_limit).ok());

  std::string over = head + std::string(32 * 1024 - head.size(), 'x') + "'";
  ExpectRejected(over, 32768, "filter too long at position 32768: 32769 bytes, the limit is 32768");

  FilterLimits small;
  small.max_length = 10;
  EXPECT_TRUE(ParseFilter("a eq 12345", small).ok());
  ExpectRejected("a eq 123456", 10, "filter too long", small);
}

TEST(FilterLimits, ParenthesisDepth) {
  EXPECT_TRUE(ParseFilter(Repeat("(", 64) + "a eq 1" + Repeat(")", 64)).ok());
  // The 65th '(' is at offset 64.
  ExpectRejected(Repeat("(", 65) + "a eq 1" + Repeat(")", 65), 64, "nesting too deep");
}

TEST(FilterLimits, NotDepth) {
  EXPECT_TRUE(ParseFilter(Repeat("not ", 64) + "a eq 1").ok());
  ExpectRejected(Repeat("not ", 65) + "a eq 1", 256, "nesting too deep");
  // `not (` opens a single level.
  EXPECT_TRUE(ParseFilter(Repeat("not (", 64) + "a eq 1" + Repeat(")", 64)).ok());
  ExpectRejected(Repeat("not (", 65) + "a eq 1" + Repeat(")", 65), 320, "nesting too deep");
  // ... but `not ((` two: 32 of them reach 64, the 33rd `not` is one too many.
  ExpectRejected(Repeat("not ((", 33) + "a eq 1" + Repeat("))", 33), 6 * 32, "nesting too deep");
}

TEST(FilterLimits, DepthIsPerPathNotTotal) {
  // 100 groups side by side, each 60 deep: deep but not nested past the limit.
  std::string text;
  for (int i = 0; i < 100; i++) {
    if (i > 0) text += " or ";
    text += Repeat("(", 60) + "a eq 1" + Repeat(")", 60);
  }
  EXPECT_TRUE(ParseFilter(text).ok());
}

TEST(FilterLimits, Comparisons) {
  auto chain = [](int n) {
    std::string text;
    for (int i = 0; i < n; i++) text += (i ? " and " : "") + std::string("a eq 1");
    return text;
  };
  auto ok = ParseFilter(chain(100));
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)->children.size(), 100u);
  // The 101st comparison starts at 100 * len("a eq 1 and ").
  ExpectRejected(chain(101), 100 * 11, "too many comparisons at position 1100: the limit is 100");

  FilterLimits azure;  // Azure's own limit, for callers that want it
  azure.max_comparisons = 15;
  EXPECT_TRUE(ParseFilter(chain(15), azure).ok());
  ExpectRejected(chain(16), 15 * 11, "the limit is 15", azure);
}

TEST(FilterLimits, CanonicalTextOfADeepTreeStaysWithinTheDepthLimit) {
  for (const std::string& text : {Repeat("not ", 64) + "a eq 1",
                                  Repeat("not (a eq 1 or ", 32) + "b eq 2" + Repeat(")", 32),
                                  Repeat("(a eq 1 and (b eq 1 or ", 32) + "c eq 1" + Repeat("))", 32)}) {
    auto tree = ParseFilter(text);
    ASSERT_TRUE(tree.ok()) << tree.status().message();
    auto again = ParseFilter(ToString(**tree));
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(**again, **tree);
  }
}

TEST(FilterLimits, HostileInputIsRejectedCheaply) {
  const size_t n = 32 * 1024;
  ExpectRejected(std::string(n, '('), 64, "nesting too deep");
  ExpectRejected(Repeat("not ", static_cast<int>(n / 4)), 256, "nesting too deep");
  ExpectRejected(std::string(n - 1, '\''), 0, "unterminated string literal");
  ExpectRejected(std::string(n, '9'), 0, "Int32 literal");
  ExpectRejected(std::string(n, ' '), n, "empty filter");
  ExpectRejected(std::string(n, '\xFF'), 0, "unexpected character '\\xFF'");
}

}  // namespace
}  // namespace sidetable::query
