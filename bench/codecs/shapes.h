// The realistic values codec_bench encodes and decodes: one entity of ~10
// typed properties (the shape docs/performance.md uses elsewhere), a write
// request of that entity, a query reply of many, and a change record.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "engine/change_record.h"
#include "engine/edm.h"
#include "protocol/wire.h"

namespace sidetable::bench::codecs {

// Strings with non-ASCII text and characters JSON must escape; Int32, Int64,
// Double, Boolean, DateTime, Guid and Binary. `i` varies the keys.
Entity SampleEntity(size_t i);
// A kWrite request of one Insert of SampleEntity(0).
wire::Request SampleWriteRequest();
// A query reply of `n` entities with timestamp and ETag.
wire::QueryReply SampleQueryReply(size_t n);
// A change record of one Merge with before and after images.
ChangeRecord SampleChangeRecord();

}  // namespace sidetable::bench::codecs
