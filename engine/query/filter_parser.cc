// Recursive-descent parser for $filter, one token of look-ahead.
//
//   filter     := or_expr END
//   or_expr    := and_expr ('or' and_expr)*
//   and_expr   := unary ('and' unary)*
//   unary      := 'not' unary | '(' or_expr ')' | comparison
//   comparison := operand cmp_op operand     (exactly one side a property)
//   operand    := identifier | literal
//
// Comparisons are atoms, so `not X eq 1` is `not (X eq 1)`. Only `not` and
// `(` recurse, and each opens a nesting level checked against
// FilterLimits::max_depth, so the C++ stack stays bounded whatever the input.
#include <cctype>
#include <utility>

#include "engine/query/filter.h"
#include "engine/query/filter_lexer.h"

namespace sidetable::query {
namespace {

using internal::DescribeToken;
using internal::FilterError;
using internal::Lexer;
using internal::QuoteForMessage;
using internal::Token;
using internal::TokenKind;

// `AND`, `Eq`, `True`: a likely cause worth naming in the error.
std::string_view KeywordCaseHint(const Token& token) {
  if (token.kind != TokenKind::kIdentifier || token.text.size() > 5) return {};
  std::string lower(token.text);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (std::string_view k : {"and", "or", "not", "eq", "ne", "gt", "ge", "lt", "le", "true", "false"}) {
    if (lower == k) return " (keywords are lower-case)";
  }
  return {};
}

class Parser {
 public:
  Parser(std::string_view text, const FilterLimits& limits) : lexer_(text), limits_(limits) {}

  Result<std::unique_ptr<FilterNode>> Parse() {
    ST_RETURN_IF_ERROR(Advance());
    if (tok_.kind == TokenKind::kEnd) return FilterError(tok_.pos, "empty filter");
    std::unique_ptr<FilterNode> root;
    ST_RETURN_IF_ERROR(ParseOr(&root));
    if (tok_.kind != TokenKind::kEnd) return Unexpected("expected 'and', 'or' or the end of the filter");
    return root;
  }

 private:
  Status Advance() { return lexer_.Next(&tok_); }

  Status Unexpected(std::string_view expected) {
    std::string detail(expected);
    detail += KeywordCaseHint(tok_);
    return FilterError(tok_.pos, "unexpected " + DescribeToken(tok_), detail);
  }

  Status Enter(size_t pos) {
    if (++depth_ > limits_.max_depth) {
      return FilterError(pos, "nesting too deep",
                         "the limit is " + std::to_string(limits_.max_depth) +
                             " levels of parentheses and 'not'");
    }
    return Status::OK();
  }

  // Moves `child` into `children`, splicing it if it is the same kind of
  // node: and/or are associative, and flat trees are simpler to plan.
  static void Append(FilterNode::Kind kind, std::unique_ptr<FilterNode> child,
                     std::vector<std::unique_ptr<FilterNode>>* children) {
    if (child->kind == kind) {
      for (auto& grandchild : child->children) children->push_back(std::move(grandchild));
    } else {
      children->push_back(std::move(child));
    }
  }

  Status ParseOr(std::unique_ptr<FilterNode>* out) {
    return ParseChain(TokenKind::kOr, FilterNode::Kind::kOr, out);
  }

  // or_expr and and_expr share this loop; `op` separates `kind` operands.
  Status ParseChain(TokenKind op, FilterNode::Kind kind, std::unique_ptr<FilterNode>* out) {
    std::unique_ptr<FilterNode> first;
    ST_RETURN_IF_ERROR(kind == FilterNode::Kind::kOr ? ParseChain(TokenKind::kAnd, FilterNode::Kind::kAnd, &first)
                                                     : ParseUnary(&first));
    if (tok_.kind != op) {
      *out = std::move(first);
      return Status::OK();
    }
    std::vector<std::unique_ptr<FilterNode>> children;
    Append(kind, std::move(first), &children);
    while (tok_.kind == op) {
      ST_RETURN_IF_ERROR(Advance());
      std::unique_ptr<FilterNode> next;
      ST_RETURN_IF_ERROR(kind == FilterNode::Kind::kOr ? ParseChain(TokenKind::kAnd, FilterNode::Kind::kAnd, &next)
                                                       : ParseUnary(&next));
      Append(kind, std::move(next), &children);
    }
    auto node = std::make_unique<FilterNode>();
    node->kind = kind;
    node->children = std::move(children);
    *out = std::move(node);
    return Status::OK();
  }

  Status ParseUnary(std::unique_ptr<FilterNode>* out) {
    if (tok_.kind == TokenKind::kNot) {
      ST_RETURN_IF_ERROR(Enter(tok_.pos));
      ST_RETURN_IF_ERROR(Advance());
      std::unique_ptr<FilterNode> operand;
      // `not (` is one level, so ToString's `not (...)` never nests deeper
      // than the text it came from.
      ST_RETURN_IF_ERROR(tok_.kind == TokenKind::kLParen ? ParseGroup(&operand) : ParseUnary(&operand));
      depth_--;
      *out = FilterNode::Not(std::move(operand));
      return Status::OK();
    }
    if (tok_.kind == TokenKind::kLParen) {
      ST_RETURN_IF_ERROR(Enter(tok_.pos));
      ST_RETURN_IF_ERROR(ParseGroup(out));
      depth_--;
      return Status::OK();
    }
    return ParseComparison(out);
  }

  // '(' or_expr ')', the level already counted by the caller.
  Status ParseGroup(std::unique_ptr<FilterNode>* out) {
    const size_t open = tok_.pos;
    ST_RETURN_IF_ERROR(Advance());
    ST_RETURN_IF_ERROR(ParseOr(out));
    if (tok_.kind != TokenKind::kRParen) {
      return Unexpected("expected ')' to close the '(' at position " + std::to_string(open));
    }
    return Advance();
  }

  static bool IsOperand(const Token& t) {
    return t.kind == TokenKind::kIdentifier || t.kind == TokenKind::kLiteral;
  }

  Status ParseComparison(std::unique_ptr<FilterNode>* out) {
    if (!IsOperand(tok_)) return Unexpected("expected a property name or a literal");
    if (++comparisons_ > limits_.max_comparisons) {
      return FilterError(tok_.pos, "too many comparisons",
                         "the limit is " + std::to_string(limits_.max_comparisons));
    }
    Token left = std::move(tok_);
    ST_RETURN_IF_ERROR(Advance());
    if (left.kind == TokenKind::kIdentifier && tok_.kind == TokenKind::kLParen) {
      // startswith(Name,'a'), substringof(...): OData functions, which the
      // service does not support either. Said so, rather than "unexpected
      // token '('" (before session 38).
      return FilterError(
          left.pos, "unsupported function '" + QuoteForMessage(left.text) + "'",
          "$filter takes comparisons (eq, ne, gt, ge, lt, le) joined by and, or, not; "
          "Azure Tables has no functions");
    }
    if (tok_.kind != TokenKind::kCompareOp) {
      return Unexpected("expected a comparison operator (eq, ne, gt, ge, lt, le)");
    }
    const CompareOp op = tok_.op;
    ST_RETURN_IF_ERROR(Advance());
    if (!IsOperand(tok_)) return Unexpected("expected a property name or a literal");
    if (left.kind == tok_.kind) {
      const bool props = left.kind == TokenKind::kIdentifier;
      std::string detail = props ? "one side of a comparison must be a literal"
                                 : "one side of a comparison must be a property";
      detail += KeywordCaseHint(tok_);
      return FilterError(tok_.pos,
                         std::string(props ? "unexpected property '" : "unexpected literal '") +
                             QuoteForMessage(tok_.text) + "'",
                         detail);
    }
    if (left.kind == TokenKind::kIdentifier) {
      *out = FilterNode::Compare(std::string(left.text), op, std::move(tok_.literal));
    } else {
      *out = FilterNode::Compare(std::string(tok_.text), MirrorOp(op), std::move(left.literal));
    }
    return Advance();
  }

  Lexer lexer_;
  Token tok_;
  const FilterLimits limits_;
  int depth_ = 0;
  int comparisons_ = 0;
};

}  // namespace

Result<std::unique_ptr<FilterNode>> ParseFilter(std::string_view text, const FilterLimits& limits) {
  if (text.size() > limits.max_length) {
    return FilterError(limits.max_length, "filter too long",
                       std::to_string(text.size()) + " bytes, the limit is " +
                           std::to_string(limits.max_length));
  }
  return Parser(text, limits).Parse();
}

}  // namespace sidetable::query
