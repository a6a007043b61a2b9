// FilterNode construction, comparison and the canonical text (ToString).
//
// The canonical text must re-parse to the same tree and must not nest deeper
// than the text the tree came from (so it passes the same depth limit):
// hence minimal parentheses, except `not (...)`, which the parser counts as
// one level.
#include <charconv>
#include <utility>

#include "engine/query/filter.h"

namespace sidetable::query {
namespace {

void AppendQuoted(std::string_view body, std::string* out) {
  out->push_back('\'');
  for (char c : body) {
    if (c == '\'') out->push_back('\'');  // '' escapes a quote
    out->push_back(c);
  }
  out->push_back('\'');
}

void AppendLiteral(const Value& v, std::string* out) {
  switch (v.type()) {
    case EdmType::kString:
      AppendQuoted(v.bytes(), out);
      return;
    case EdmType::kBinary:
      out->append(v.ToString());  // X'0A1B'
      return;
    case EdmType::kBoolean:
      out->append(v.as_bool() ? "true" : "false");
      return;
    case EdmType::kDateTime:
      out->append("datetime'").append(FormatDateTime(v.as_ticks())).append("'");
      return;
    case EdmType::kDouble: {
      // Shortest text that reads back to the same bits; it must look like a
      // Double (`.` or exponent), else it would re-parse as an Int32.
      char buf[64];
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v.as_double());
      std::string_view text(buf, ec == std::errc() ? static_cast<size_t>(end - buf) : 0);
      out->append(text);
      if (text.find_first_of(".eEn") == std::string_view::npos) out->append(".0");
      return;
    }
    case EdmType::kGuid:
      out->append("guid'").append(FormatGuid(v.as_guid())).append("'");
      return;
    case EdmType::kInt32:
      out->append(std::to_string(v.as_int32()));
      return;
    case EdmType::kInt64:
      out->append(std::to_string(v.as_int64())).push_back('L');
      return;
  }
}

void Print(const FilterNode& node, std::string* out) {
  using Kind = FilterNode::Kind;
  switch (node.kind) {
    case Kind::kCompare:
      out->append(node.property).push_back(' ');
      out->append(CompareOpName(node.op)).push_back(' ');
      AppendLiteral(node.literal, out);
      return;
    case Kind::kNot:
      out->append("not (");
      if (!node.children.empty()) Print(*node.children[0], out);
      out->push_back(')');
      return;
    case Kind::kAnd:
    case Kind::kOr: {
      const bool is_and = node.kind == Kind::kAnd;
      for (size_t i = 0; i < node.children.size(); i++) {
        if (i > 0) out->append(is_and ? " and " : " or ");
        const FilterNode& child = *node.children[i];
        // `and` binds tighter than `or`, so only an `or` inside an `and`
        // needs parentheses (and same-kind nesting, which only hand-built
        // trees have).
        const bool parens = child.kind == Kind::kOr || (child.kind == Kind::kAnd && is_and);
        if (parens) out->push_back('(');
        Print(child, out);
        if (parens) out->push_back(')');
      }
      return;
    }
  }
}

}  // namespace

std::string_view CompareOpName(CompareOp op) {
  switch (op) {
    case CompareOp::kEq: return "eq";
    case CompareOp::kNe: return "ne";
    case CompareOp::kGt: return "gt";
    case CompareOp::kGe: return "ge";
    case CompareOp::kLt: return "lt";
    case CompareOp::kLe: return "le";
  }
  return "?";
}

CompareOp MirrorOp(CompareOp op) {
  switch (op) {
    case CompareOp::kGt: return CompareOp::kLt;
    case CompareOp::kGe: return CompareOp::kLe;
    case CompareOp::kLt: return CompareOp::kGt;
    case CompareOp::kLe: return CompareOp::kGe;
    default: return op;  // eq, ne are symmetric
  }
}

std::unique_ptr<FilterNode> FilterNode::Compare(std::string property, CompareOp op, Value literal) {
  auto n = std::make_unique<FilterNode>();
  n->kind = Kind::kCompare;
  n->property = std::move(property);
  n->op = op;
  n->literal = std::move(literal);
  return n;
}

std::unique_ptr<FilterNode> FilterNode::Not(std::unique_ptr<FilterNode> child) {
  auto n = std::make_unique<FilterNode>();
  n->kind = Kind::kNot;
  n->children.push_back(std::move(child));
  return n;
}

std::unique_ptr<FilterNode> FilterNode::And(std::vector<std::unique_ptr<FilterNode>> children) {
  auto n = std::make_unique<FilterNode>();
  n->kind = Kind::kAnd;
  n->children = std::move(children);
  return n;
}

std::unique_ptr<FilterNode> FilterNode::Or(std::vector<std::unique_ptr<FilterNode>> children) {
  auto n = std::make_unique<FilterNode>();
  n->kind = Kind::kOr;
  n->children = std::move(children);
  return n;
}

std::unique_ptr<FilterNode> FilterNode::Clone() const {
  auto n = std::make_unique<FilterNode>();
  n->kind = kind;
  n->property = property;
  n->op = op;
  n->literal = literal;
  n->children.reserve(children.size());
  for (const auto& c : children) n->children.push_back(c->Clone());
  return n;
}

bool FilterNode::operator==(const FilterNode& o) const {
  if (kind != o.kind || children.size() != o.children.size()) return false;
  if (kind == Kind::kCompare && (property != o.property || op != o.op || literal != o.literal)) {
    return false;
  }
  for (size_t i = 0; i < children.size(); i++) {
    if (!(*children[i] == *o.children[i])) return false;
  }
  return true;
}

std::string ToString(const FilterNode& node) {
  std::string out;
  Print(node, &out);
  return out;
}

}  // namespace sidetable::query
