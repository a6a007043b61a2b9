// Text helpers shared by the audit rows and the summary (internal to
// tools/replay).
#pragma once

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace sidetable::replay::audit_text {

// RFC 4180 line ends.
inline constexpr std::string_view kCsvEol = "\r\n";

inline void AppendUInt(uint64_t v, std::string* out) {
  char buf[24];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, res.ptr);
}

// RFC 4180: a field holding a comma, a quote, CR or LF is quoted, with its
// quotes doubled. `suffix` is part of the same field.
inline void AppendCsvField(std::string_view text, std::string_view suffix, std::string* out) {
  constexpr std::string_view kSpecial = ",\"\r\n";
  if (text.find_first_of(kSpecial) == std::string_view::npos &&
      suffix.find_first_of(kSpecial) == std::string_view::npos) {
    out->append(text);
    out->append(suffix);
    return;
  }
  out->push_back('"');
  for (std::string_view part : {text, suffix}) {
    size_t start = 0;
    for (size_t q = part.find('"'); q != std::string_view::npos; q = part.find('"', start)) {
      out->append(part.substr(start, q + 1 - start));
      out->push_back('"');
      start = q + 1;
    }
    out->append(part.substr(start));
  }
  out->push_back('"');
}

inline void AppendCsvField(std::string_view text, std::string* out) { AppendCsvField(text, {}, out); }

}  // namespace sidetable::replay::audit_text
