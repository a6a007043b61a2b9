#include "patterns/index_table/index_keys.h"

#include <charconv>
#include <cmath>

#include "engine/limits.h"
#include "engine/utf8.h"

namespace sidetable::patterns {

namespace {

const char kHexUpper[] = "0123456789ABCDEF";

void AppendEscaped(std::string* out, uint8_t b) {
  out->push_back(kKeyEscape);
  out->push_back(kHexUpper[b >> 4]);
  out->push_back(kHexUpper[b & 15]);
}

bool NeedsEscapeAscii(uint8_t b) {
  return b < 0x20 || b == 0x7F || b == kKeyEscape || b == kSourceKeySeparator || b == '/' ||
         b == '\\' || b == '#' || b == '?';
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;  // lower case is not canonical
}

bool ValidKey(std::string_view key) { return ValidateKey(key, "key").ok(); }

}  // namespace

std::string EscapeKeyText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); i++) {
    auto b = static_cast<uint8_t>(text[i]);
    if (NeedsEscapeAscii(b)) {
      AppendEscaped(&out, b);
    } else if (b == 0xC2 && i + 1 < text.size() && static_cast<uint8_t>(text[i + 1]) >= 0x80 &&
               static_cast<uint8_t>(text[i + 1]) <= 0x9F) {
      // U+0080..U+009F (C1 controls).
      AppendEscaped(&out, b);
      AppendEscaped(&out, static_cast<uint8_t>(text[++i]));
    } else {
      out.push_back(static_cast<char>(b));
    }
  }
  return out;
}

Result<std::string> UnescapeKeyText(std::string_view escaped) {
  std::string out;
  out.reserve(escaped.size());
  for (size_t i = 0; i < escaped.size(); i++) {
    if (escaped[i] != kKeyEscape) {
      out.push_back(escaped[i]);
      continue;
    }
    int hi = i + 2 < escaped.size() ? HexDigit(escaped[i + 1]) : -1;
    int lo = i + 2 < escaped.size() ? HexDigit(escaped[i + 2]) : -1;
    if (hi < 0 || lo < 0) {
      return Status(Code::kInvalidInput, "bad escape sequence at offset " + std::to_string(i));
    }
    out.push_back(static_cast<char>(hi << 4 | lo));
    i += 2;
  }
  // Only the canonical form maps back: "%41" for "A" would make two spellings
  // of one key.
  if (!IsValidUtf8(out) || EscapeKeyText(out) != escaped) {
    return Status(Code::kInvalidInput, "not a canonically escaped key text");
  }
  return out;
}

std::string IndexValueText(const Value& value) {
  switch (value.type()) {
    case EdmType::kString:
      return value.bytes();
    case EdmType::kBinary: {
      static const char* kHex = "0123456789abcdef";
      std::string out;
      out.reserve(2 * value.bytes().size());
      for (unsigned char c : value.bytes()) {
        out += kHex[c >> 4];
        out += kHex[c & 15];
      }
      return out;
    }
    case EdmType::kDouble: {
      double d = value.as_double();
      if (std::isnan(d)) return "NaN";
      if (std::isinf(d)) return d > 0 ? "INF" : "-INF";
      if (d == 0) return "0";  // -0 and 0 are equal in $filter: one partition
      char buf[32];
      auto res = std::to_chars(buf, buf + sizeof buf, d);
      return std::string(buf, res.ptr);
    }
    case EdmType::kBoolean:
    case EdmType::kDateTime:
    case EdmType::kGuid:
    case EdmType::kInt32:
    case EdmType::kInt64:
      return value.ToString();
  }
  return value.ToString();
}

Result<std::string> MakeSourceRowKey(std::string_view partition_key, std::string_view row_key) {
  std::string out = EscapeKeyText(partition_key);
  out.push_back(kSourceKeySeparator);
  out += EscapeKeyText(row_key);
  Status valid = ValidateKey(out, "index RowKey");
  if (!valid.ok()) return valid;
  return out;
}

Result<SourceKeys> ParseSourceRowKey(std::string_view row_key) {
  size_t sep = row_key.find(kSourceKeySeparator);
  if (sep == std::string_view::npos) {
    return Status(Code::kInvalidInput, "index RowKey has no '|' separator");
  }
  auto pk = UnescapeKeyText(row_key.substr(0, sep));
  if (!pk.ok())
    return Status(Code::kInvalidInput, "index RowKey: PartitionKey part " + pk.status().message());
  auto rk = UnescapeKeyText(row_key.substr(sep + 1));  // a second '|' fails here
  if (!rk.ok())
    return Status(Code::kInvalidInput, "index RowKey: RowKey part " + rk.status().message());
  return SourceKeys{std::move(*pk), std::move(*rk)};
}

Result<IndexLayout> IndexLayout::Parse(std::string_view layout, std::string_view prefix) {
  IndexLayout out;
  out.text_ = std::string(layout);
  out.prefix_ = std::string(prefix);
  auto bad = [&](const std::string& why) {
    return Status(Code::kInvalidInput, "layout '" + std::string(layout) + "': " + why);
  };
  auto check_literal = [&](std::string_view text, const char* what) -> Status {
    if (text.find(kKeyEscape) != std::string_view::npos) {
      return bad(std::string(what) + " may not contain '%'");
    }
    Status s = ValidateKey(text, what);
    if (!s.ok()) return bad(s.message());
    return Status::OK();
  };
  ST_RETURN_IF_ERROR(check_literal(prefix, "prefix"));
  int values = 0;
  bool uses_prefix = false;
  size_t i = 0;
  while (i < layout.size()) {
    if (layout[i] == '{') {
      size_t close = layout.find('}', i);
      if (close == std::string_view::npos) return bad("unclosed '{'");
      std::string_view name = layout.substr(i + 1, close - i - 1);
      if (name == "value") {
        values++;
        out.value_index_ = out.segments_.size();
        out.segments_.push_back({Part::kValue, ""});
      } else if (name == "prefix") {
        uses_prefix = true;
        out.segments_.push_back({Part::kPrefix, ""});
      } else if (name == "property") {
        out.segments_.push_back({Part::kProperty, ""});
      } else {
        return bad("unknown placeholder {" + std::string(name) +
                   "} (known: {value}, {prefix}, {property})");
      }
      i = close + 1;
    } else {
      size_t next = layout.find('{', i);
      if (next == std::string_view::npos) next = layout.size();
      std::string_view literal = layout.substr(i, next - i);
      if (literal.find('}') != std::string_view::npos) return bad("stray '}'");
      ST_RETURN_IF_ERROR(check_literal(literal, "literal text"));
      out.segments_.push_back({Part::kLiteral, std::string(literal)});
      i = next;
    }
  }
  if (values != 1) return bad("needs {value} exactly once");
  if (uses_prefix && prefix.empty()) return bad("uses {prefix} but no prefix is set");
  if (!uses_prefix && !prefix.empty()) return bad("a prefix is set but the layout has no {prefix}");
  return out;
}

std::string IndexLayout::Render(std::string_view property, size_t from, size_t to) const {
  std::string out;
  for (size_t i = from; i < to; i++) {
    const Segment& s = segments_[i];
    switch (s.part) {
      case Part::kLiteral:
        out += s.literal;
        break;
      case Part::kPrefix:
        out += prefix_;
        break;
      case Part::kProperty:
        out += property;
        break;
      case Part::kValue:
        break;
    }
  }
  return out;
}

std::string IndexLayout::Before(std::string_view property) const {
  return Render(property, 0, value_index_);
}

std::string IndexLayout::After(std::string_view property) const {
  return Render(property, value_index_ + 1, segments_.size());
}

bool IndexLayout::uses_property() const {
  for (const auto& s : segments_) {
    if (s.part == Part::kProperty) return true;
  }
  return false;
}

std::optional<std::string> IndexLayout::PartitionKey(std::string_view property,
                                                     const Value& value) const {
  std::string key = Before(property);
  key += EscapeKeyText(IndexValueText(value));
  key += After(property);
  if (!ValidKey(key)) return std::nullopt;  // too long (or not UTF-8): not indexed
  return key;
}

}  // namespace sidetable::patterns
