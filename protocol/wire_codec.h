// Small pieces the protocol's codec files share (internal to protocol/):
// 8-byte big-endian integers for the ext types, DateTime ext reading, and
// the InvalidInput a malformed request gets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/status.h"
#include "protocol/msgpack.h"
#include "protocol/wire.h"

namespace sidetable::wire::codec {

inline std::string Be8(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; i++) s[i] = static_cast<char>(v >> (56 - 8 * i));
  return s;
}

inline uint64_t FromBe8(std::string_view s) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | static_cast<uint8_t>(s[i]);
  return v;
}

// One Edm value: `v` is a Value or a PropertyView (the same accessors), so
// an entity and a stored row read in place are written alike.
template <typename V>
void WriteTypedValue(msgpack::Writer& w, const V& v) {
  switch (v.type()) {
    case EdmType::kString: w.Str(v.bytes()); break;
    case EdmType::kBinary: w.Bin(v.bytes()); break;
    case EdmType::kBoolean: w.Bool(v.as_bool()); break;
    case EdmType::kDouble: w.Double(v.as_double()); break;
    case EdmType::kInt32: w.Int(v.as_int32()); break;
    case EdmType::kInt64: w.Ext(kExtInt64, Be8(static_cast<uint64_t>(v.as_int64()))); break;
    case EdmType::kDateTime: w.Ext(kExtDateTime, Be8(static_cast<uint64_t>(v.as_ticks()))); break;
    case EdmType::kGuid: w.Ext(kExtGuid, v.bytes()); break;
  }
}

// A DateTime ext (kExtDateTime, 8 bytes): false for anything else.
inline bool ReadDateTime(msgpack::Reader& r, int64_t* ticks) {
  int8_t type;
  std::string_view s;
  if (!r.Ext(&type, &s) || type != kExtDateTime || s.size() != 8) return false;
  *ticks = static_cast<int64_t>(FromBe8(s));
  return true;
}

// One entity map of a reply (the keys, ETag, timestamp and props of
// ReadEntity's kReply mode) read in place into `e`, every value checked.
Status ReadEntityRef(msgpack::Reader& r, EntityRef* e);

inline Status Invalid(std::string message) { return Status(Code::kInvalidInput, std::move(message)); }

}  // namespace sidetable::wire::codec
