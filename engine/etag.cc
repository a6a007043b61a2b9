#include "engine/etag.h"

#include <charconv>

namespace sidetable {

std::string MakeETag(uint64_t version) { return "W/\"" + std::to_string(version) + "\""; }

std::optional<uint64_t> VersionFromETag(std::string_view etag) {
  if (etag.size() < 5 || etag.substr(0, 3) != "W/\"" || etag.back() != '"') return std::nullopt;
  const std::string_view digits = etag.substr(3, etag.size() - 4);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return v;
}

}  // namespace sidetable
