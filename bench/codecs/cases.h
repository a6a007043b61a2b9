// codec_bench's four comparisons, one per hand-written codec (issue 11).
// Each builds its inputs, checks once that both contenders agree on them
// (same bytes out, same values in, same rejections) and exits through
// bench::Die if not, then returns the rows to time.
#pragma once

#include "bench/codecs/runner.h"

namespace sidetable::bench::codecs {

struct Sizes {
  size_t reply_entities = 1000;
};

std::vector<Group> MsgpackGroups(const Sizes& sizes);  // encoding, decoding
Group Utf8Group(const Sizes& sizes);
Group Base64Group(const Sizes& sizes);
std::vector<Group> JsonGroups(const Sizes& sizes);  // events, strings

}  // namespace sidetable::bench::codecs
