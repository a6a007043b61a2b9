// msgpack_lib.h's encoders: wire.h's encoding code on msgpack::packer, and
// on the hand-written writer it replaced.
#include <msgpack.hpp>

#include "bench/codecs/msgpack_handwritten.h"
#include "bench/codecs/msgpack_lib.h"

namespace sidetable::bench::codecs {
namespace {

// msgpack::packer writes to any stream with write(data, size).
struct StringStream {
  std::string* s;
  void write(const char* p, size_t n) { s->append(p, n); }
};
using Packer = ::msgpack::packer<StringStream>;

template <typename P>
void PackStr(P& p, std::string_view s) {
  p.pack_str(static_cast<uint32_t>(s.size()));
  p.pack_str_body(s.data(), static_cast<uint32_t>(s.size()));
}

template <typename P>
void PackExt(P& p, int8_t type, std::string_view data) {
  p.pack_ext(data.size(), type);
  p.pack_ext_body(data.data(), static_cast<uint32_t>(data.size()));
}

template <typename P>
void PackBe8(P& p, int8_t type, int64_t v) {
  char b[8];
  for (int i = 0; i < 8; i++) b[i] = static_cast<char>(static_cast<uint64_t>(v) >> (56 - 8 * i));
  PackExt(p, type, std::string_view(b, 8));
}

template <typename P>
void PackValue(P& p, const Value& v) {
  switch (v.type()) {
    case EdmType::kString: PackStr(p, v.bytes()); break;
    case EdmType::kBinary:
      p.pack_bin(static_cast<uint32_t>(v.bytes().size()));
      p.pack_bin_body(v.bytes().data(), static_cast<uint32_t>(v.bytes().size()));
      break;
    case EdmType::kBoolean: v.as_bool() ? p.pack_true() : p.pack_false(); break;
    case EdmType::kDouble: p.pack_double(v.as_double()); break;
    case EdmType::kInt32: p.pack_int32(v.as_int32()); break;
    case EdmType::kInt64: PackBe8(p, wire::kExtInt64, v.as_int64()); break;
    case EdmType::kDateTime: PackBe8(p, wire::kExtDateTime, v.as_ticks()); break;
    case EdmType::kGuid: PackExt(p, wire::kExtGuid, v.bytes()); break;
  }
}

template <typename P>
void PackEntity(P& p, const Entity& e, bool with_meta) {
  p.pack_map(with_meta ? 5 : 3);
  PackStr(p, "pk");
  PackStr(p, e.partition_key);
  PackStr(p, "rk");
  PackStr(p, e.row_key);
  if (with_meta) {
    PackStr(p, "ts");
    PackBe8(p, wire::kExtDateTime, e.timestamp);
    PackStr(p, "etag");
    PackStr(p, e.etag);
  }
  PackStr(p, "props");
  p.pack_map(static_cast<uint32_t>(e.properties.size()));
  for (const auto& prop : e.properties) {
    PackStr(p, prop.name);
    PackValue(p, prop.value);
  }
}

// The bodies of wire::EncodeRequest (kWrite) and wire::EncodeQuery, on any
// writer with msgpack::packer's method names.
template <typename P>
void PackWriteRequest(P& p, const wire::Request& q) {
  p.pack_map(static_cast<uint32_t>(1 + !q.table.empty() + !q.caller.empty()));
  if (!q.table.empty()) {
    PackStr(p, "table");
    PackStr(p, q.table);
  }
  if (!q.caller.empty()) {
    PackStr(p, "caller");
    PackStr(p, q.caller);
  }
  PackStr(p, "ops");
  p.pack_array(static_cast<uint32_t>(q.ops.size()));
  for (const Operation& op : q.ops) {
    p.pack_map(op.if_match.empty() ? 2 : 3);
    PackStr(p, "op");
    PackStr(p, OpKindName(op.kind));
    PackStr(p, "entity");
    PackEntity(p, op.entity, false);
    if (!op.if_match.empty()) {
      PackStr(p, "ifMatch");
      PackStr(p, op.if_match);
    }
  }
}

// `out`: what the packer appends to, for the "tailAt" offset (patched in
// once the entities are written, as wire::EncodeQuery does).
template <typename P>
void PackQuery(P& p, const wire::QueryReply& r, std::string* out) {
  const size_t body_at = out->size();
  p.pack_map(4 + (r.next_pk ? 2 : 0));
  PackStr(p, "tailAt");
  p.pack_fix_uint32(0);
  const size_t tail_value_at = out->size() - 4;
  PackStr(p, "entities");
  p.pack_array(static_cast<uint32_t>(r.entities.size()));
  for (const auto& e : r.entities) PackEntity(p, e, true);
  const size_t tail = out->size() - body_at;
  for (size_t i = 0; i < 4; i++) (*out)[tail_value_at + i] = static_cast<char>(tail >> (24 - 8 * i));
  if (r.next_pk) {
    PackStr(p, "npk");
    PackStr(p, *r.next_pk);
    PackStr(p, "nrk");
    PackStr(p, r.next_rk.value_or(""));
  }
  PackStr(p, "plan");
  PackStr(p, r.plan);
  PackStr(p, "examined");
  p.pack_uint64(r.examined);
}

void AppendRequestHeader(const wire::Request& q, std::string* out) {
  wire::AppendHeader(out, wire::Header{wire::kVersion, static_cast<uint8_t>(q.op), 0, q.id});
}

}  // namespace

void LibEncodeWriteRequest(const wire::Request& q, std::string* out) {
  AppendRequestHeader(q, out);
  StringStream stream{out};
  Packer p(stream);
  PackWriteRequest(p, q);
}

void LibEncodeQuery(const wire::QueryReply& r, std::string* out) {
  StringStream stream{out};
  Packer p(stream);
  PackQuery(p, r, out);
}

void HandWrittenEncodeWriteRequest(const wire::Request& q, std::string* out) {
  AppendRequestHeader(q, out);
  HandWrittenPacker p(out);
  PackWriteRequest(p, q);
}

void HandWrittenEncodeQuery(const wire::QueryReply& r, std::string* out) {
  HandWrittenPacker p(out);
  PackQuery(p, r, out);
}

}  // namespace sidetable::bench::codecs
