// The byte-at-a-time JSON string escaper json_writer.cc had before issue 11,
// kept only as codec_bench's reference row. Same output as
// json::AppendJsonString.
#pragma once

#include <string>
#include <string_view>

namespace sidetable::bench::codecs {

void ByteAtATimeJsonString(std::string_view s, std::string* out);

}  // namespace sidetable::bench::codecs
