// libFuzzer target for JSON string escaping: json::AppendJsonString and
// JsonWriter (events/json_writer.h), which write every string
// of the change events, the CLI's JSON and the audit output.
//
// For any byte string s:
//   - the output is a quoted string with no raw byte below 0x20, no raw DEL
//     and no unescaped '"' or '\', and undoing exactly the escapes the writer
//     uses (\" \\ \b \f \n \r \t, \u00xx for other controls and DEL,
//     \u0080-\u009f, \u2028-\u202e, \u2066-\u2069) gives s back;
//   - s valid UTF-8: the output parses with simdjson back to exactly s, both
//     alone and as a key and a value in a JsonWriter object;
//   - s invalid UTF-8: the writer does not validate (the engine accepts only
//     valid UTF-8, engine/limits.cc, so stored strings never are): it copies
//     the bytes it does not escape as they are. The output is then not JSON,
//     and simdjson must reject it for its UTF-8 and nothing else (UTF8_ERROR).
// Validity is sidetable::IsValidUtf8's verdict, so this also checks that it
// agrees with simdjson's parser. Any violation aborts with the input.
//
// The same file is linked into entity_json_test (tests/tools), which replays
// the seed corpus and generated inputs through LLVMFuzzerTestOneInput; it
// must therefore not define main().
#include <simdjson.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/utf8.h"
#include "events/json_writer.h"

namespace {

[[noreturn]] void Fail(const char* what, std::string_view input, std::string_view output) {
  auto dump = [](std::string_view s) {
    for (unsigned char c : s) {
      if (c >= 0x20 && c < 0x7F) std::fputc(c, stderr);
      else std::fprintf(stderr, "\\x%02X", c);
    }
  };
  std::fprintf(stderr, "json_escape_fuzz: %s\n  input (%zu bytes): ", what, input.size());
  dump(input);
  std::fprintf(stderr, "\n  output: ");
  dump(output);
  std::fputc('\n', stderr);
  std::abort();
}

int Hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // the writer uses lower case only
}

// Undoes the writer's escapes; false on anything it never writes.
bool Unescape(std::string_view quoted, std::string* out) {
  if (quoted.size() < 2 || quoted.front() != '"' || quoted.back() != '"') return false;
  const std::string_view body = quoted.substr(1, quoted.size() - 2);
  for (size_t i = 0; i < body.size(); i++) {
    const auto c = static_cast<unsigned char>(body[i]);
    if (c < 0x20 || c == 0x7F || c == '"') return false;
    if (c != '\\') {
      out->push_back(static_cast<char>(c));
      continue;
    }
    if (++i >= body.size()) return false;
    switch (body[i]) {
      case '"': out->push_back('"'); break;
      case '\\': out->push_back('\\'); break;
      case 'b': out->push_back('\b'); break;
      case 'f': out->push_back('\f'); break;
      case 'n': out->push_back('\n'); break;
      case 'r': out->push_back('\r'); break;
      case 't': out->push_back('\t'); break;
      case 'u': {
        if (i + 4 >= body.size()) return false;
        int v = 0;
        for (int k = 1; k <= 4; k++) {
          const int h = Hex(body[i + k]);
          if (h < 0) return false;
          v = v * 16 + h;
        }
        // Only what the writer escapes this way: controls without a short
        // escape, DEL, C1 controls, U+2028/U+2029 and the bidirectional
        // controls (written back as their UTF-8 bytes).
        const bool short_escape = v == '\b' || v == '\f' || v == '\n' || v == '\r' || v == '\t';
        if ((v < 0x20 && !short_escape) || v == 0x7F) {
          out->push_back(static_cast<char>(v));
        } else if (v >= 0x80 && v <= 0x9F) {
          out->push_back(static_cast<char>(0xC2));
          out->push_back(static_cast<char>(v));
        } else if ((v >= 0x2028 && v <= 0x202E) || (v >= 0x2066 && v <= 0x2069)) {
          out->push_back(static_cast<char>(0xE2));
          out->push_back(static_cast<char>(0x80 | ((v >> 6) & 0x3F)));
          out->push_back(static_cast<char>(0x80 | (v & 0x3F)));
        } else {
          return false;
        }
        i += 4;
        break;
      }
      default: return false;
    }
  }
  return true;
}

simdjson::dom::parser& Parser() {
  static simdjson::dom::parser parser;  // libFuzzer and the replay test are single-threaded
  return parser;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::string quoted;
  sidetable::json::AppendJsonString(input, &quoted);
  std::string back;
  if (!Unescape(quoted, &back) || back != input) Fail("escapes do not undo to the input", input, quoted);

  const bool valid = sidetable::IsValidUtf8(input);
  simdjson::dom::element doc;
  const simdjson::error_code err = Parser().parse(simdjson::padded_string(quoted)).get(doc);
  if (!valid) {
    if (err != simdjson::UTF8_ERROR) Fail("invalid UTF-8 not rejected as UTF8_ERROR", input, quoted);
    return 0;
  }
  std::string_view parsed;
  if (err != simdjson::SUCCESS || doc.get_string().get(parsed) != simdjson::SUCCESS) {
    Fail("valid UTF-8 does not parse back", input, quoted);
  }
  if (parsed != input) Fail("parsed string differs from the input", input, quoted);

  // Through JsonWriter: the first half as a key, the rest as a value, cut
  // where the halves stay valid UTF-8.
  size_t cut = size / 2;
  while (cut > 0 && (static_cast<unsigned char>(input[cut]) & 0xC0) == 0x80) cut--;
  const std::string_view key = input.substr(0, cut), value = input.substr(cut);
  sidetable::json::JsonWriter w;
  w.BeginObject().Key(key).String(value).EndObject();
  simdjson::dom::object obj;
  if (Parser().parse(simdjson::padded_string(w.str())).get(obj) != simdjson::SUCCESS) {
    Fail("JsonWriter object does not parse", input, w.str());
  }
  size_t fields = 0;
  for (auto field : obj) {
    std::string_view v;
    if (field.key != key || field.value.get_string().get(v) != simdjson::SUCCESS || v != value) {
      Fail("JsonWriter key or value differs", input, w.str());
    }
    fields++;
  }
  if (fields != 1) Fail("JsonWriter object does not have one field", input, w.str());
  return 0;
}
