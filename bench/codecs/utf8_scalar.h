// The hand-written UTF-8 validator engine/utf8.cc used before issue 11,
// kept only as codec_bench's reference row (docs/performance.md).
#pragma once

#include <string_view>

namespace sidetable::bench::codecs {

bool ScalarIsValidUtf8(std::string_view s);

}  // namespace sidetable::bench::codecs
