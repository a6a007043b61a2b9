// The wire protocol's request and reply bodies written and read with
// msgpack-cxx instead of protocol/msgpack.h, for codec_bench.
//
// Encoding mirrors wire::EncodeRequest (kWrite requests) and
// wire::EncodeQuery with msgpack::packer, so the bytes must be identical
// (codec_bench checks). Decoding uses msgpack-cxx's visitor API (no object
// tree) with the same checks as wire::DecodeRequest / wire::DecodeQuery on
// these shapes: key and value types, Int32 range, ext type and length, pk
// and rk present, no trailing bytes. Exceptions from msgpack-cxx are caught
// and become InvalidInput.
#pragma once

#include <string>
#include <string_view>

#include "engine/status.h"
#include "protocol/wire.h"

namespace sidetable::bench::codecs {

void LibEncodeWriteRequest(const wire::Request& r, std::string* out);
void LibEncodeQuery(const wire::QueryReply& r, std::string* out);
// The same with the hand-written writer wire.h used before issue 11
// (bench/codecs/msgpack_handwritten.h).
void HandWrittenEncodeWriteRequest(const wire::Request& r, std::string* out);
void HandWrittenEncodeQuery(const wire::QueryReply& r, std::string* out);

Status LibDecodeWriteRequest(std::string_view frame, wire::Request* out);
Status LibDecodeQuery(std::string_view body, wire::QueryReply* out);

// msgpack::unpack into msgpack-cxx's object tree, nothing else: a lower
// bound on what decoding through the tree costs. Returns false on error.
bool LibUnpackTree(std::string_view body);

}  // namespace sidetable::bench::codecs
