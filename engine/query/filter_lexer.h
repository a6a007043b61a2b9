// Internal: the $filter tokenizer and the error-message helpers shared by the
// lexer and the parser. Not part of the public contract (see filter.h).
//
// The lexer is pull-based (one token at a time) so the parser needs no token
// vector, and it decodes literals as it goes: a token that cannot become a
// Value (bad escape, Int32 overflow, impossible date) fails at its own
// position instead of later in the parser.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "engine/edm.h"
#include "engine/query/filter.h"
#include "engine/status.h"

namespace sidetable::query::internal {

enum class TokenKind : uint8_t {
  kEnd,
  kLParen,
  kRParen,
  kAnd,
  kOr,
  kNot,
  kCompareOp,   // `op` is set
  kIdentifier,  // a property name; `text` is the name
  kLiteral,     // `literal` is set
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  size_t pos = 0;          // byte offset of the first character
  std::string_view text;   // the raw source text of the token
  CompareOp op = CompareOp::kEq;
  Value literal;
};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : text_(text) {}

  // Reads the next token. At the end of the text returns kEnd (repeatedly).
  Status Next(Token* token);

  // Byte offset of the next unread character after skipping blanks.
  size_t SkipBlanks();

 private:
  Status LexNumber(Token* token);
  Status LexQuoted(size_t start, size_t quote, Token* token);
  Status LexWord(Token* token);

  std::string_view text_;
  size_t pos_ = 0;
};

// "$filter: <what> at position <pos>[: <detail>]". Every filter error goes
// through here so the format stays uniform (tests and clients match on it).
Status FilterError(size_t pos, std::string_view what, std::string_view detail = {});

// `text` quoted for an error message: at most 40 bytes, bytes outside
// printable ASCII as \xNN (messages travel in JSON; the input may be any
// bytes).
std::string QuoteForMessage(std::string_view text);

// Describes a token for "unexpected ..." messages: "token 'and'",
// "end of input".
std::string DescribeToken(const Token& token);

bool IsIdentStart(char c);
bool IsIdentChar(char c);

}  // namespace sidetable::query::internal
