// Helpers for the Prometheus text exposition format, shared by the sidecar's
// and the workers' /metrics.
#pragma once

#include <cstdint>
#include <string>

namespace sidetable::prometheus {

// A label value: backslash, quote and newline escaped.
inline std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

// `name{labels} value`; labels already formatted (`op="Write"`), may be empty.
inline void Line(std::string* out, const std::string& name, const std::string& labels, uint64_t v) {
  *out += name;
  if (!labels.empty()) *out += "{" + labels + "}";
  *out += " " + std::to_string(v) + "\n";
}

inline void Header(std::string* out, const char* name, const char* type, const char* help) {
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// A family of one unlabelled series: its header and its line.
inline void Single(std::string* out, const char* name, const char* type, const char* help, uint64_t v) {
  Header(out, name, type, help);
  Line(out, name, "", v);
}

}  // namespace sidetable::prometheus
