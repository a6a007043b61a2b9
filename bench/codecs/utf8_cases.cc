// UTF-8 validation: the hand-written scalar validator, simdjson's
// validate_utf8 (runtime CPU dispatch) and what sidetable::IsValidUtf8 is now.
#include <simdjson.h>

#include <memory>

#include "bench/codecs/cases.h"
#include "bench/codecs/utf8_scalar.h"
#include "bench/harness.h"
#include "engine/utf8.h"

namespace sidetable::bench::codecs {
namespace {

using Strings = std::vector<std::string>;

// Keys and property names: one string of each length 1..100. `insert` is
// put in the middle of each string (after the ASCII part) when it fits.
Strings ShortStrings(std::string_view insert) {
  Strings out;
  const std::string letters = "PropertyName_RowKey-0123456789abcdefghijklmnopqrstuvwxyz";
  for (size_t len = 1; len <= 100; len++) {
    std::string s;
    for (size_t i = 0; s.size() < len; i++) {
      if (!insert.empty() && i == len / 2 && s.size() + insert.size() <= len) s += insert;
      else s += letters[i % letters.size()];
    }
    out.push_back(s);
  }
  return out;
}

// CJK names: 1..33 three-byte characters.
Strings CjkStrings() {
  Strings out;
  for (size_t chars = 1; chars <= 33; chars++) {
    std::string s;
    for (size_t i = 0; i < chars; i++) s += (i % 2 ? "\xE4\xBB\xB7" : "\xE6\xA0\xBC");  // 价 格
    out.push_back(s);
  }
  return out;
}

// Text of `bytes` bytes; with non-ASCII every few words when mixed.
std::string Text(size_t bytes, bool mixed) {
  const char* words[] = {"order ", "Zürich ", "价格 ", "total ", "naïve ", "\xF0\x9F\x98\x80 ", "line "};
  std::string s;
  for (size_t i = 0; s.size() < bytes; i++) s += mixed ? words[i % 7] : words[(i % 2) * 3];
  while (s.size() > bytes) s.pop_back();
  while (!s.empty() && (static_cast<unsigned char>(s.back()) & 0xC0) == 0x80) s.pop_back();
  while (!s.empty() && static_cast<unsigned char>(s.back()) >= 0xC0) s.pop_back();
  return s;
}

bool Simdjson(std::string_view s) { return simdjson::validate_utf8(s.data(), s.size()); }

// A batch of strings through one validator; all must be valid.
template <bool (*Fn)(std::string_view)>
std::function<void()> All(std::shared_ptr<Strings> strings) {
  return [strings] {
    bool ok = true;
    for (const auto& s : *strings) ok &= Fn(s);
    Keep(ok);
  };
}

void CheckUtf8(const Strings& strings) {
  for (const auto& s : strings) {
    if (!ScalarIsValidUtf8(s) || !Simdjson(s) || !IsValidUtf8(s)) Die("utf8: a valid string is rejected");
    std::string bad = s + "\xED\xA0\x80";  // a surrogate
    if (ScalarIsValidUtf8(bad) || Simdjson(bad) || IsValidUtf8(bad)) Die("utf8: a surrogate is accepted");
  }
}

void AddRow(Group& g, std::string name, Strings strings) {
  CheckUtf8(strings);
  auto shared = std::make_shared<Strings>(std::move(strings));
  g.rows.push_back({std::move(name), shared->size(),
                    {All<ScalarIsValidUtf8>(shared), All<Simdjson>(shared), All<IsValidUtf8>(shared)}});
}

}  // namespace

Group Utf8Group(const Sizes&) {
  Group g;
  g.title = std::string("UTF-8 validation: hand-written vs simdjson ") + std::to_string(simdjson::SIMDJSON_VERSION_MAJOR) + "." +
            std::to_string(simdjson::SIMDJSON_VERSION_MINOR) + "." +
            std::to_string(simdjson::SIMDJSON_VERSION_REVISION) +
            " (implementation: " + std::string(simdjson::get_active_implementation()->name()) + ")";
  g.labels = {"scalar (before)", "simdjson", "IsValidUtf8 (now)"};
  AddRow(g, "names 1-100 B, ASCII (per string)", ShortStrings(""));
  AddRow(g, "names 1-100 B, one é in the middle (per string)", ShortStrings("\xC3\xA9"));
  AddRow(g, "names 3-99 B, all CJK (per string)", CjkStrings());
  for (size_t n : {32, 64, 128, 256, 1024}) {
    AddRow(g, "value " + (n < 1024 ? std::to_string(n) + " B" : std::string("1 KiB")) + ", ASCII",
           {Text(n, false)});
  }
  AddRow(g, "value 1 KiB, mixed scripts", {Text(1024, true)});
  AddRow(g, "value 64 KiB, mixed scripts", {Text(64 * 1024, true)});
  return g;
}

}  // namespace sidetable::bench::codecs
