// The hand-written MessagePack writer protocol/msgpack.cc had before
// issue 11, kept only as codec_bench's reference, behind the method names of
// msgpack::packer so the same encoding code drives both
// (bench/codecs/msgpack_lib_pack.cc).
#pragma once

#include <cstdint>
#include <string>

namespace sidetable::bench::codecs {

class HandWrittenPacker {
 public:
  explicit HandWrittenPacker(std::string* out) : out_(out) {}
  HandWrittenPacker& pack_true() { out_->push_back(static_cast<char>(0xC3)); return *this; }
  HandWrittenPacker& pack_false() { out_->push_back(static_cast<char>(0xC2)); return *this; }
  HandWrittenPacker& pack_int32(int32_t v) { return pack_int64(v); }
  HandWrittenPacker& pack_int64(int64_t v);
  HandWrittenPacker& pack_uint64(uint64_t v);
  // uint32 in its fixed-width form (0xce and 4 bytes), whatever the value.
  HandWrittenPacker& pack_fix_uint32(uint32_t v) {
    out_->push_back(static_cast<char>(0xCE));
    Be(v, 4);
    return *this;
  }
  HandWrittenPacker& pack_double(double d);  // always float64
  HandWrittenPacker& pack_str(uint32_t n);
  HandWrittenPacker& pack_str_body(const char* p, uint32_t n) { out_->append(p, n); return *this; }
  HandWrittenPacker& pack_bin(uint32_t n);
  HandWrittenPacker& pack_bin_body(const char* p, uint32_t n) { out_->append(p, n); return *this; }
  HandWrittenPacker& pack_array(uint32_t n);
  HandWrittenPacker& pack_map(uint32_t n);
  // The type byte follows the header, so it is written here.
  HandWrittenPacker& pack_ext(size_t n, int8_t type);
  HandWrittenPacker& pack_ext_body(const char* p, uint32_t n) { out_->append(p, n); return *this; }

 private:
  void Be(uint64_t v, int bytes);
  std::string* out_;
};

}  // namespace sidetable::bench::codecs
