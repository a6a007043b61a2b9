// Base64 (RFC 4648, standard alphabet, '=' padding) for Edm.Binary in JSON.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace sidetable::json {

std::string Base64Encode(std::string_view bytes);
// Strict: padded to a multiple of 4, no blanks, unused bits zero (so each
// value has exactly one text). nullopt otherwise.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace sidetable::json
