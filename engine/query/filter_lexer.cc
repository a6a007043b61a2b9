#include "engine/query/filter_lexer.h"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <iterator>

#include "engine/utf8.h"

namespace sidetable::query::internal {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

struct Keyword {
  std::string_view word;
  TokenKind kind;
  CompareOp op;
};
// Lower-case only, as in OData: `AND` is an identifier (and then an error).
constexpr Keyword kKeywords[] = {
    {"and", TokenKind::kAnd, CompareOp::kEq},     {"or", TokenKind::kOr, CompareOp::kEq},
    {"not", TokenKind::kNot, CompareOp::kEq},     {"eq", TokenKind::kCompareOp, CompareOp::kEq},
    {"ne", TokenKind::kCompareOp, CompareOp::kNe}, {"gt", TokenKind::kCompareOp, CompareOp::kGt},
    {"ge", TokenKind::kCompareOp, CompareOp::kGe}, {"lt", TokenKind::kCompareOp, CompareOp::kLt},
    {"le", TokenKind::kCompareOp, CompareOp::kLe},
};

}  // namespace

bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool IsIdentChar(char c) { return IsIdentStart(c) || IsDigit(c); }

Status FilterError(size_t pos, std::string_view what, std::string_view detail) {
  std::string msg = "$filter: ";
  msg.append(what);
  msg += " at position ";
  msg += std::to_string(pos);
  if (!detail.empty()) {
    msg += ": ";
    msg.append(detail);
  }
  return Status(Code::kInvalidInput, std::move(msg));
}

std::string QuoteForMessage(std::string_view text) {
  constexpr size_t kMax = 40;
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (size_t i = 0; i < text.size() && i < kMax; i++) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7F && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (text.size() > kMax) out += "...";
  return out;
}

std::string DescribeToken(const Token& token) {
  if (token.kind == TokenKind::kEnd) return "end of input";
  return "token '" + QuoteForMessage(token.text) + "'";
}

size_t Lexer::SkipBlanks() {
  while (pos_ < text_.size() && IsBlank(text_[pos_])) pos_++;
  return pos_;
}

Status Lexer::Next(Token* token) {
  const size_t start = SkipBlanks();
  token->pos = start;
  token->text = {};
  if (start == text_.size()) {
    token->kind = TokenKind::kEnd;
    return Status::OK();
  }
  const char c = text_[start];
  if (c == '(' || c == ')') {
    token->kind = c == '(' ? TokenKind::kLParen : TokenKind::kRParen;
    token->text = text_.substr(start, 1);
    pos_++;
    return Status::OK();
  }
  if (c == '\'') return LexQuoted(start, start, token);
  if (IsDigit(c) || (c == '-' && start + 1 < text_.size() && IsDigit(text_[start + 1]))) {
    return LexNumber(token);
  }
  if (IsIdentStart(c)) return LexWord(token);
  return FilterError(start, "unexpected character '" + QuoteForMessage(text_.substr(start, 1)) + "'");
}

// [-]digits[.digits][(e|E)[+|-]digits][L|l|D|d]. No regex and no strtod
// (locale-dependent): std::from_chars does the conversion.
Status Lexer::LexNumber(Token* token) {
  const size_t start = pos_;
  size_t i = start;
  auto digits = [&] {
    const size_t from = i;
    while (i < text_.size() && IsDigit(text_[i])) i++;
    return i > from;
  };
  auto malformed = [&] {
    size_t end = i;
    while (end < text_.size() && (IsIdentChar(text_[end]) || text_[end] == '.')) end++;
    return FilterError(start, "malformed number '" + QuoteForMessage(text_.substr(start, end - start)) + "'");
  };
  if (text_[i] == '-') i++;
  digits();
  bool is_double = false;
  if (i < text_.size() && text_[i] == '.') {
    i++;
    if (!digits()) return malformed();
    is_double = true;
  }
  if (i < text_.size() && (text_[i] == 'e' || text_[i] == 'E')) {
    i++;
    if (i < text_.size() && (text_[i] == '+' || text_[i] == '-')) i++;
    if (!digits()) return malformed();
    is_double = true;
  }
  const size_t number_end = i;
  bool is_int64 = false;
  if (i < text_.size()) {
    const char s = text_[i];
    if ((s == 'L' || s == 'l') && !is_double) {
      is_int64 = true;
      i++;
    } else if (s == 'D' || s == 'd') {
      is_double = true;
      i++;
    }
  }
  // `12abc`, `1.5L`, `1.2.3`: a number must end at a delimiter.
  if (i < text_.size() && (IsIdentChar(text_[i]) || text_[i] == '.')) return malformed();

  const char* first = text_.data() + start;
  const char* last = text_.data() + number_end;
  const std::string_view spelled = text_.substr(start, i - start);
  token->kind = TokenKind::kLiteral;
  token->text = spelled;
  if (is_double) {
    double d = 0;
    auto [ptr, ec] = std::from_chars(first, last, d, std::chars_format::general);
    if (ec != std::errc() || ptr != last) {
      return FilterError(start, "Double literal '" + QuoteForMessage(spelled) + "' out of range");
    }
    token->literal = Value::Double(d);
  } else if (is_int64) {
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || ptr != last) {
      return FilterError(start, "Int64 literal '" + QuoteForMessage(spelled) + "' out of range");
    }
    token->literal = Value::Int64(v);
  } else {
    int32_t v = 0;
    auto [ptr, ec] = std::from_chars(first, last, v);
    if (ec != std::errc() || ptr != last) {
      return FilterError(start, "Int32 literal '" + QuoteForMessage(spelled) + "' out of range",
                         "add the L suffix for an Int64");
    }
    token->literal = Value::Int32(v);
  }
  pos_ = i;
  return Status::OK();
}

// A quoted literal starting at `start` (the prefix, if any) whose opening
// quote is at `quote`. The prefix (`datetime`, `guid`, `binary`, `X`, or
// none for a string) decides the type.
Status Lexer::LexQuoted(size_t start, size_t quote, Token* token) {
  std::string body;
  size_t i = quote + 1;
  for (;;) {
    const size_t close = text_.find('\'', i);
    if (close == std::string_view::npos) {
      return FilterError(start, "unterminated string literal");
    }
    body.append(text_.substr(i, close - i));
    if (close + 1 < text_.size() && text_[close + 1] == '\'') {  // '' is one quote
      body += '\'';
      i = close + 2;
      continue;
    }
    i = close + 1;
    break;
  }
  const std::string_view prefix = text_.substr(start, quote - start);
  const std::string_view spelled = text_.substr(start, i - start);
  token->kind = TokenKind::kLiteral;
  token->text = spelled;
  auto bad = [&](std::string_view what, std::string_view detail = {}) {
    return FilterError(start, std::string(what) + " '" + QuoteForMessage(spelled) + "'", detail);
  };

  if (prefix.empty()) {
    if (!IsValidUtf8(body)) return bad("invalid UTF-8 in string literal");
    token->literal = Value::String(std::move(body));
  } else if (prefix == "datetime") {
    const std::optional<int64_t> ticks = ParseDateTime(body);
    if (!ticks) return bad("invalid datetime literal");
    if (*ticks < kMinDateTimeTicks || *ticks > kMaxDateTimeTicks) {
      return bad("datetime literal out of range", "Azure's range is 1601-01-01 to 9999-12-31");
    }
    token->literal = Value::DateTime(*ticks);
  } else if (prefix == "guid") {
    const std::optional<Guid> g = ParseGuid(body);
    if (!g) return bad("invalid guid literal");
    token->literal = Value::MakeGuid(*g);
  } else if (prefix == "X" || prefix == "binary") {
    if (body.size() % 2 != 0) return bad("odd number of hex digits in binary literal");
    std::string bytes(body.size() / 2, '\0');
    for (size_t k = 0; k < bytes.size(); k++) {
      const int hi = HexValue(body[2 * k]), lo = HexValue(body[2 * k + 1]);
      if (hi < 0 || lo < 0) return bad("invalid hex digit in binary literal");
      bytes[k] = static_cast<char>(hi << 4 | lo);
    }
    token->literal = Value::Binary(std::move(bytes));
  } else {
    return FilterError(start, "unknown literal prefix '" + QuoteForMessage(prefix) + "'",
                       "expected datetime, guid, binary or X");
  }
  pos_ = i;
  return Status::OK();
}

Status Lexer::LexWord(Token* token) {
  const size_t start = pos_;
  size_t i = start;
  while (i < text_.size() && IsIdentChar(text_[i])) i++;
  const std::string_view word = text_.substr(start, i - start);
  // A word right before a quote is a literal's prefix (datetime'...'),
  // unless it is an operator: blanks are optional next to quotes, so
  // `S eq'abc'` compares with a string.
  const bool keyword = std::any_of(std::begin(kKeywords), std::end(kKeywords),
                                   [&](const Keyword& k) { return k.word == word; });
  if (i < text_.size() && text_[i] == '\'' && !keyword) return LexQuoted(start, i, token);

  token->text = word;
  pos_ = i;
  for (const Keyword& k : kKeywords) {
    if (k.word == word) {
      token->kind = k.kind;
      token->op = k.op;
      return Status::OK();
    }
  }
  if (word == "true" || word == "false") {
    token->kind = TokenKind::kLiteral;
    token->literal = Value::Boolean(word == "true");
    return Status::OK();
  }
  token->kind = TokenKind::kIdentifier;
  return Status::OK();
}

}  // namespace sidetable::query::internal
