#include "engine/etag.h"

#include <charconv>

namespace sidetable {

// Called for every entity a read returns: one allocation-free format into a
// small buffer (the string fits its inline storage for versions below 10^11).
std::string MakeETag(uint64_t version) {
  char buf[32] = {'W', '/', '"'};
  char* end = std::to_chars(buf + 3, buf + sizeof buf - 1, version).ptr;
  *end++ = '"';
  return std::string(buf, end);
}

std::optional<uint64_t> VersionFromETag(std::string_view etag) {
  if (etag.size() < 5 || etag.substr(0, 3) != "W/\"" || etag.back() != '"') return std::nullopt;
  const std::string_view digits = etag.substr(3, etag.size() - 4);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return v;
}

}  // namespace sidetable
