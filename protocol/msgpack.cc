#include "protocol/msgpack.h"

#include <msgpack/pack.hpp>

#include <cstring>

namespace sidetable::msgpack {
namespace {

// msgpack::packer writes through any stream with write(data, size); ours is
// the caller's string, so a frame is built in place.
struct StringStream {
  std::string* out;
  void write(const char* p, size_t n) { out->append(p, n); }
};
using Packer = ::msgpack::packer<StringStream>;

}  // namespace

// ---- Writer: msgpack-cxx's packer ----------------------------------------------
// Each method picks the smallest encoding, as docs/protocol.md specifies;
// codec_bench checks that the bytes are the ones the hand-written writer
// produced before issue 11.

void Writer::Nil() {
  StringStream s{out_};
  Packer(s).pack_nil();
}

void Writer::Bool(bool b) {
  StringStream s{out_};
  b ? Packer(s).pack_true() : Packer(s).pack_false();
}

void Writer::Int(int64_t v) {
  StringStream s{out_};
  Packer(s).pack_int64(v);
}

void Writer::Uint(uint64_t v) {
  StringStream s{out_};
  Packer(s).pack_uint64(v);
}

// Not pack_double: it writes a double that holds an integer (2.0, -0.0) as a
// MessagePack integer, which readers take for Edm.Int32. A Double stays a
// float64 on the wire.
void Writer::Double(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  char buf[9];
  buf[0] = static_cast<char>(0xCB);
  for (int i = 0; i < 8; i++) buf[1 + i] = static_cast<char>(bits >> (56 - 8 * i));
  out_->append(buf, sizeof buf);
}

void Writer::Str(std::string_view v) {
  StringStream s{out_};
  Packer(s).pack_str(static_cast<uint32_t>(v.size())).pack_str_body(v.data(), static_cast<uint32_t>(v.size()));
}

void Writer::Bin(std::string_view v) {
  StringStream s{out_};
  Packer(s).pack_bin(static_cast<uint32_t>(v.size())).pack_bin_body(v.data(), static_cast<uint32_t>(v.size()));
}

void Writer::ArrayHeader(uint32_t n) {
  StringStream s{out_};
  Packer(s).pack_array(n);
}

void Writer::MapHeader(uint32_t n) {
  StringStream s{out_};
  Packer(s).pack_map(n);
}

void Writer::Ext(int8_t type, std::string_view data) {
  StringStream s{out_};
  Packer(s).pack_ext(data.size(), type).pack_ext_body(data.data(), static_cast<uint32_t>(data.size()));
}

// ---- Reader ------------------------------------------------------------------

bool Reader::Take(size_t n, const char** at) {
  if (remaining() < n) return false;
  *at = p_;
  p_ += n;
  return true;
}

bool Reader::BeN(int bytes, uint64_t* v) {
  const char* at;
  if (!Take(static_cast<size_t>(bytes), &at)) return false;
  uint64_t r = 0;
  for (int i = 0; i < bytes; i++) r = r << 8 | static_cast<uint8_t>(at[i]);
  *v = r;
  return true;
}

Kind Reader::Peek() const {
  if (p_ >= end_) return Kind::kInvalid;
  auto b = static_cast<uint8_t>(*p_);
  if (b <= 0x7F) return Kind::kUint;
  if (b <= 0x8F) return Kind::kMap;
  if (b <= 0x9F) return Kind::kArray;
  if (b <= 0xBF) return Kind::kStr;
  if (b >= 0xE0) return Kind::kInt;
  switch (b) {
    case 0xC0: return Kind::kNil;
    case 0xC2: case 0xC3: return Kind::kBool;
    case 0xC4: case 0xC5: case 0xC6: return Kind::kBin;
    case 0xC7: case 0xC8: case 0xC9: case 0xD4: case 0xD5: case 0xD6: case 0xD7: case 0xD8:
      return Kind::kExt;
    case 0xCA: case 0xCB: return Kind::kDouble;
    case 0xCC: case 0xCD: case 0xCE: case 0xCF: return Kind::kUint;
    case 0xD0: case 0xD1: case 0xD2: case 0xD3: return Kind::kInt;
    case 0xD9: case 0xDA: case 0xDB: return Kind::kStr;
    case 0xDC: case 0xDD: return Kind::kArray;
    case 0xDE: case 0xDF: return Kind::kMap;
    default: return Kind::kInvalid;  // 0xC1 is reserved
  }
}

bool Reader::Nil() {
  if (Peek() != Kind::kNil) return false;
  p_++;
  return true;
}

bool Reader::Bool(bool* b) {
  if (Peek() != Kind::kBool) return false;
  *b = static_cast<uint8_t>(*p_++) == 0xC3;
  return true;
}

bool Reader::Uint(uint64_t* v) {
  int64_t i;
  if (p_ < end_ && static_cast<uint8_t>(*p_) == 0xCF) {
    p_++;
    return BeN(8, v);
  }
  if (!Int(&i) || i < 0) return false;
  *v = static_cast<uint64_t>(i);
  return true;
}

bool Reader::Int(int64_t* v) {
  if (p_ >= end_) return false;
  auto b = static_cast<uint8_t>(*p_);
  uint64_t u = 0;
  if (b <= 0x7F) {
    p_++;
    *v = b;
    return true;
  }
  if (b >= 0xE0) {
    p_++;
    *v = static_cast<int8_t>(b);
    return true;
  }
  const char* save = p_;
  p_++;
  bool ok = true;
  switch (b) {
    case 0xCC: ok = BeN(1, &u); *v = static_cast<int64_t>(u); break;
    case 0xCD: ok = BeN(2, &u); *v = static_cast<int64_t>(u); break;
    case 0xCE: ok = BeN(4, &u); *v = static_cast<int64_t>(u); break;
    case 0xCF: ok = BeN(8, &u) && u <= INT64_MAX; *v = static_cast<int64_t>(u); break;
    case 0xD0: ok = BeN(1, &u); *v = static_cast<int8_t>(u); break;
    case 0xD1: ok = BeN(2, &u); *v = static_cast<int16_t>(u); break;
    case 0xD2: ok = BeN(4, &u); *v = static_cast<int32_t>(u); break;
    case 0xD3: ok = BeN(8, &u); *v = static_cast<int64_t>(u); break;
    default: ok = false;
  }
  if (!ok) p_ = save;
  return ok;
}

bool Reader::Double(double* d) {
  if (p_ >= end_) return false;
  auto b = static_cast<uint8_t>(*p_);
  uint64_t u;
  const char* save = p_;
  p_++;
  if (b == 0xCB && BeN(8, &u)) {
    std::memcpy(d, &u, sizeof *d);
    return true;
  }
  if (b == 0xCA && BeN(4, &u)) {
    uint32_t bits = static_cast<uint32_t>(u);
    float f;
    std::memcpy(&f, &bits, sizeof f);
    *d = f;
    return true;
  }
  p_ = save;
  return false;
}

bool Reader::Str(std::string_view* s) {
  if (p_ >= end_) return false;
  auto b = static_cast<uint8_t>(*p_);
  const char* save = p_;
  uint64_t n;
  p_++;
  bool ok;
  if (b >= 0xA0 && b <= 0xBF) {
    n = b & 0x1F;
    ok = true;
  } else if (b == 0xD9) {
    ok = BeN(1, &n);
  } else if (b == 0xDA) {
    ok = BeN(2, &n);
  } else if (b == 0xDB) {
    ok = BeN(4, &n);
  } else {
    ok = false;
  }
  const char* at;
  if (!ok || !Take(static_cast<size_t>(n), &at)) {
    p_ = save;
    return false;
  }
  *s = std::string_view(at, static_cast<size_t>(n));
  return true;
}

bool Reader::Bin(std::string_view* out) {
  if (p_ >= end_) return false;
  auto b = static_cast<uint8_t>(*p_);
  if (b < 0xC4 || b > 0xC6) return false;
  const char* save = p_;
  p_++;
  uint64_t n;
  const char* at;
  if (!BeN(b == 0xC4 ? 1 : b == 0xC5 ? 2 : 4, &n) || !Take(static_cast<size_t>(n), &at)) {
    p_ = save;
    return false;
  }
  *out = std::string_view(at, static_cast<size_t>(n));
  return true;
}

bool Reader::ArrayHeader(uint32_t* n) {
  if (p_ >= end_) return false;
  auto b = static_cast<uint8_t>(*p_);
  uint64_t u;
  if (b >= 0x90 && b <= 0x9F) {
    p_++;
    *n = b & 0x0F;
    return true;
  }
  if (b != 0xDC && b != 0xDD) return false;
  const char* save = p_;
  p_++;
  if (!BeN(b == 0xDC ? 2 : 4, &u)) {
    p_ = save;
    return false;
  }
  *n = static_cast<uint32_t>(u);
  return true;
}

bool Reader::MapHeader(uint32_t* n) {
  if (p_ >= end_) return false;
  auto b = static_cast<uint8_t>(*p_);
  uint64_t u;
  if (b >= 0x80 && b <= 0x8F) {
    p_++;
    *n = b & 0x0F;
    return true;
  }
  if (b != 0xDE && b != 0xDF) return false;
  const char* save = p_;
  p_++;
  if (!BeN(b == 0xDE ? 2 : 4, &u)) {
    p_ = save;
    return false;
  }
  *n = static_cast<uint32_t>(u);
  return true;
}

bool Reader::Ext(int8_t* type, std::string_view* data) {
  if (p_ >= end_) return false;
  auto b = static_cast<uint8_t>(*p_);
  const char* save = p_;
  p_++;
  uint64_t n = 0;
  bool ok = true;
  switch (b) {
    case 0xD4: n = 1; break;
    case 0xD5: n = 2; break;
    case 0xD6: n = 4; break;
    case 0xD7: n = 8; break;
    case 0xD8: n = 16; break;
    case 0xC7: ok = BeN(1, &n); break;
    case 0xC8: ok = BeN(2, &n); break;
    case 0xC9: ok = BeN(4, &n); break;
    default: ok = false;
  }
  const char* t;
  const char* at;
  if (!ok || !Take(1, &t) || !Take(static_cast<size_t>(n), &at)) {
    p_ = save;
    return false;
  }
  *type = static_cast<int8_t>(*t);
  *data = std::string_view(at, static_cast<size_t>(n));
  return true;
}

bool Reader::Skip(int depth) {
  if (depth <= 0) return false;
  std::string_view s;
  int64_t i;
  uint64_t u;
  double d;
  bool b;
  int8_t t;
  uint32_t n;
  switch (Peek()) {
    case Kind::kNil: return Nil();
    case Kind::kBool: return Bool(&b);
    case Kind::kInt: return Int(&i);
    case Kind::kUint: return Uint(&u);
    case Kind::kDouble: return Double(&d);
    case Kind::kStr: return Str(&s);
    case Kind::kBin: return Bin(&s);
    case Kind::kExt: return Ext(&t, &s);
    case Kind::kArray:
      if (!ArrayHeader(&n)) return false;
      for (uint32_t k = 0; k < n; k++) {
        if (!Skip(depth - 1)) return false;
      }
      return true;
    case Kind::kMap:
      if (!MapHeader(&n)) return false;
      for (uint32_t k = 0; k < 2 * static_cast<uint64_t>(n); k++) {
        if (!Skip(depth - 1)) return false;
      }
      return true;
    default:
      return false;
  }
}

}  // namespace sidetable::msgpack
