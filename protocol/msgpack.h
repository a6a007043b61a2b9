// The MessagePack writer and reader for the wire protocol.
//
// Only what docs/protocol.md uses: nil, bool, int, float64, str, bin, array,
// map and ext.
//
// Writer is msgpack-cxx's packer behind this small interface (msgpack.cc),
// except for Double: the packer writes integral doubles as integers, which
// would turn an Edm.Double into an Int32 on the wire. bench/codec_bench
// measured the packer faster than the hand-written writer it replaced, with
// identical bytes (docs/performance.md, "Codecs: hand-written vs kept
// libraries (issue 11)").
//
// Reader is written here: it pulls values straight into our types from a
// byte span, never reads past it and limits nesting, so hostile frames cost
// little (tests/fuzz/request_fuzz.cc). msgpack-cxx's visitor parser (no
// object tree) decodes the same requests and replies no faster in
// bench/codec_bench, and would turn each decoder into an event-driven state
// machine.
//
// Thread safety: values; one Writer or Reader per thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace sidetable::msgpack {

class Writer {
 public:
  explicit Writer(std::string* out) : out_(out) {}
  void Nil();
  void Bool(bool b);
  void Int(int64_t v);
  void Uint(uint64_t v);
  void Double(double d);
  void Str(std::string_view s);
  void Bin(std::string_view b);
  void ArrayHeader(uint32_t n);
  void MapHeader(uint32_t n);
  void Ext(int8_t type, std::string_view data);

 private:
  std::string* out_;
};

enum class Kind : uint8_t { kNil, kBool, kInt, kUint, kDouble, kStr, kBin, kArray, kMap, kExt, kInvalid };

class Reader {
 public:
  explicit Reader(std::string_view in) : p_(in.data()), end_(in.data() + in.size()) {}

  // The kind of the next value without consuming it (kInvalid at the end or
  // on a reserved byte).
  Kind Peek() const;
  bool Nil();
  bool Bool(bool* b);
  // Any integer encoding that fits int64 (uint64 above INT64_MAX fails).
  bool Int(int64_t* v);
  bool Uint(uint64_t* v);
  // float64 or float32.
  bool Double(double* d);
  bool Str(std::string_view* s);
  bool Bin(std::string_view* b);
  bool ArrayHeader(uint32_t* n);
  bool MapHeader(uint32_t* n);
  bool Ext(int8_t* type, std::string_view* data);
  // Skips one value (with its children), at most `depth` levels deep.
  bool Skip(int depth = 32);

  bool empty() const { return p_ == end_; }
  // Where the next value starts (for callers that keep byte ranges).
  const char* position() const { return p_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }

 private:
  bool Take(size_t n, const char** at);
  bool BeN(int bytes, uint64_t* v);
  const char* p_;
  const char* end_;
};

}  // namespace sidetable::msgpack
