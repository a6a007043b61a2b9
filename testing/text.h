// Small text helpers for tests that read a process's output.
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace sidetable::testing {

// The lines of `text`, without their '\n'.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline bool Contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// How many times `part` (not empty) occurs in `s`, not overlapping.
inline size_t CountOf(std::string_view s, std::string_view part) {
  size_t n = 0;
  for (size_t at = s.find(part); at != std::string_view::npos; at = s.find(part, at + part.size()))
    n++;
  return n;
}

}  // namespace sidetable::testing
