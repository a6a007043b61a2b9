#include "events/json_writer.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>

namespace sidetable::json {

namespace {

constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kHighBits = 0x8080808080808080ull;

uint64_t Load8(const char* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// Whether any byte of w is below n (n <= 0x80). Exact as a yes/no: a borrow
// only starts at a byte that is below n.
constexpr bool AnyByteBelow(uint64_t w, uint8_t n) { return ((w - kOnes * n) & ~w & kHighBits) != 0; }
constexpr bool AnyByteIs(uint64_t w, uint8_t b) { return AnyByteBelow(w ^ (kOnes * b), 1); }

// A control character, '"', '\\' or DEL among the eight bytes, or the first
// byte of a character that may need one (0xC2: C1 controls; 0xE2: the line
// separators and bidirectional controls, see EscapedCharacter).
constexpr bool AnyNeedsEscape(uint64_t w) {
  return AnyByteBelow(w, 0x20) || AnyByteIs(w, '"') || AnyByteIs(w, '\\') || AnyByteIs(w, 0x7F) ||
         AnyByteIs(w, 0xC2) || AnyByteIs(w, 0xE2);
}

// The length of the UTF-8 character at p[0..n) when it is one that is written
// as \uXXXX although JSON allows it as it is, else 0. They are the ones a
// terminal or an editor acts on instead of showing: C1 controls (U+0080-
// U+009F; U+009B is a terminal's CSI), U+2028 and U+2029 (line breaks to
// JavaScript), and the bidirectional embeddings, overrides and isolates
// (U+202A-U+202E, U+2066-U+2069), which can make a value read as another
// ("Trojan Source"). A JSON reader gets the same string back. *code is the
// character.
size_t EscapedCharacter(const unsigned char* p, size_t n, uint32_t* code) {
  if (n >= 2 && p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F) {
    *code = p[1];
    return 2;
  }
  if (n >= 3 && p[0] == 0xE2 &&
      ((p[1] == 0x80 && p[2] >= 0xA8 && p[2] <= 0xAE) ||
       (p[1] == 0x81 && p[2] >= 0xA6 && p[2] <= 0xA9))) {
    *code = 0x2000u | (static_cast<uint32_t>(p[1] & 0x3F) << 6) | (p[2] & 0x3Fu);
    return 3;
  }
  return 0;
}

void AppendUnicodeEscape(uint32_t code, std::string* out) {
  static const char* kHex = "0123456789abcdef";
  const char text[6] = {
      '\\',           'u', kHex[(code >> 12) & 15], kHex[(code >> 8) & 15], kHex[(code >> 4) & 15],
      kHex[code & 15]};
  out->append(text, sizeof text);
}

void AppendEscape(unsigned char c, std::string* out) {
  static const char* kHex = "0123456789abcdef";
  switch (c) {
    case '"': out->append("\\\""); break;
    case '\\': out->append("\\\\"); break;
    case '\b': out->append("\\b"); break;
    case '\f': out->append("\\f"); break;
    case '\n': out->append("\\n"); break;
    case '\r': out->append("\\r"); break;
    case '\t': out->append("\\t"); break;
    default:
      out->append("\\u00");
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
  }
}

}  // namespace

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  // Runs of characters that need no escape (nearly all of them) are copied
  // whole, and found eight bytes at a time: this is on the replay, audit and
  // change-event paths (codec_bench, docs/performance.md, issue 11).
  const char* p = s.data();
  const size_t n = s.size();
  size_t run = 0;  // the first byte not copied yet
  size_t i = 0;
  while (i < n) {
    if (i + 8 <= n && !AnyNeedsEscape(Load8(p + i))) {
      i += 8;
      continue;
    }
    for (const size_t stop = std::min(n, i + 8); i < stop; i++) {
      const auto c = static_cast<unsigned char>(p[i]);
      if (c == 0xC2 || c == 0xE2) {
        uint32_t code = 0;
        const size_t len =
            EscapedCharacter(reinterpret_cast<const unsigned char*>(p + i), n - i, &code);
        if (len == 0) continue;
        out->append(p + run, i - run);
        AppendUnicodeEscape(code, out);
        i += len - 1;  // may pass stop: the outer loop goes on from there
        run = i + 1;
        continue;
      }
      if (c >= 0x20 && c != '"' && c != '\\' && c != 0x7f) continue;
      out->append(p + run, i - run);
      run = i + 1;
      AppendEscape(c, out);
    }
  }
  out->append(p + run, n - run);
  out->push_back('"');
}

std::string FormatDouble(double d) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // "2" would read back as Int32
  return s;
}

void JsonWriter::Separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!first_.empty()) {
    if (!first_.back()) out_.push_back(',');
    first_.back() = false;
  }
}

JsonWriter& JsonWriter::BeginObject() {
  Separate();
  out_.push_back('{');
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndObject() {
  out_.push_back('}');
  first_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::BeginArray() {
  Separate();
  out_.push_back('[');
  first_.push_back(true);
  return *this;
}

JsonWriter& JsonWriter::EndArray() {
  out_.push_back(']');
  first_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::Key(std::string_view key) {
  Separate();
  AppendJsonString(key, &out_);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::String(std::string_view s) {
  Separate();
  AppendJsonString(s, &out_);
  return *this;
}

JsonWriter& JsonWriter::Int(int64_t v) {
  Separate();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::UInt(uint64_t v) {
  Separate();
  out_ += std::to_string(v);
  return *this;
}

JsonWriter& JsonWriter::Bool(bool b) {
  Separate();
  out_ += b ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::Null() {
  Separate();
  out_ += "null";
  return *this;
}

JsonWriter& JsonWriter::Double(double d) {
  Separate();
  out_ += FormatDouble(d);
  return *this;
}

}  // namespace sidetable::json
