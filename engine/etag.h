// ETags: every stored entity version has one, W/"<version>", where the
// version is the LSN of the commit that wrote it (so it only grows for a
// given entity, across delete and re-insert). The engine makes them; the
// patterns, the workers and the tools read the version back out of them to
// fence derived writes. One format, one parser.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sidetable {

std::string MakeETag(uint64_t version);
// 42 from W/"42"; nullopt for any other shape ("*", a strong ETag, junk).
std::optional<uint64_t> VersionFromETag(std::string_view etag);

}  // namespace sidetable
