#include "protocol/msgpack.h"

#include <cstring>

namespace sidetable::msgpack {

void Writer::Be(uint64_t v, int bytes) {
  char buf[8];
  for (int i = 0; i < bytes; i++) buf[i] = static_cast<char>(v >> (8 * (bytes - 1 - i)));
  out_->append(buf, static_cast<size_t>(bytes));
}

void Writer::Int(int64_t v) {
  if (v >= 0) return Uint(static_cast<uint64_t>(v));
  if (v >= -32) {
    out_->push_back(static_cast<char>(v));
  } else if (v >= INT8_MIN) {
    out_->push_back(static_cast<char>(0xD0));
    Be(static_cast<uint64_t>(v), 1);
  } else if (v >= INT16_MIN) {
    out_->push_back(static_cast<char>(0xD1));
    Be(static_cast<uint64_t>(v), 2);
  } else if (v >= INT32_MIN) {
    out_->push_back(static_cast<char>(0xD2));
    Be(static_cast<uint64_t>(v), 4);
  } else {
    out_->push_back(static_cast<char>(0xD3));
    Be(static_cast<uint64_t>(v), 8);
  }
}

void Writer::Uint(uint64_t v) {
  if (v < 128) {
    out_->push_back(static_cast<char>(v));
  } else if (v <= UINT8_MAX) {
    out_->push_back(static_cast<char>(0xCC));
    Be(v, 1);
  } else if (v <= UINT16_MAX) {
    out_->push_back(static_cast<char>(0xCD));
    Be(v, 2);
  } else if (v <= UINT32_MAX) {
    out_->push_back(static_cast<char>(0xCE));
    Be(v, 4);
  } else {
    out_->push_back(static_cast<char>(0xCF));
    Be(v, 8);
  }
}

void Writer::Double(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  out_->push_back(static_cast<char>(0xCB));
  Be(bits, 8);
}

void Writer::Str(std::string_view s) {
  const size_t n = s.size();
  if (n < 32) {
    out_->push_back(static_cast<char>(0xA0 | n));
  } else if (n <= UINT8_MAX) {
    out_->push_back(static_cast<char>(0xD9));
    Be(n, 1);
  } else if (n <= UINT16_MAX) {
    out_->push_back(static_cast<char>(0xDA));
    Be(n, 2);
  } else {
    out_->push_back(static_cast<char>(0xDB));
    Be(n, 4);
  }
  out_->append(s.data(), n);
}

void Writer::Bin(std::string_view b) {
  const size_t n = b.size();
  if (n <= UINT8_MAX) {
    out_->push_back(static_cast<char>(0xC4));
    Be(n, 1);
  } else if (n <= UINT16_MAX) {
    out_->push_back(static_cast<char>(0xC5));
    Be(n, 2);
  } else {
    out_->push_back(static_cast<char>(0xC6));
    Be(n, 4);
  }
  out_->append(b.data(), n);
}

void Writer::ArrayHeader(uint32_t n) {
  if (n < 16) {
    out_->push_back(static_cast<char>(0x90 | n));
  } else if (n <= UINT16_MAX) {
    out_->push_back(static_cast<char>(0xDC));
    Be(n, 2);
  } else {
    out_->push_back(static_cast<char>(0xDD));
    Be(n, 4);
  }
}

void Writer::MapHeader(uint32_t n) {
  if (n < 16) {
    out_->push_back(static_cast<char>(0x80 | n));
  } else if (n <= UINT16_MAX) {
    out_->push_back(static_cast<char>(0xDE));
    Be(n, 2);
  } else {
    out_->push_back(static_cast<char>(0xDF));
    Be(n, 4);
  }
}

void Writer::Ext(int8_t type, std::string_view data) {
  const size_t n = data.size();
  switch (n) {
    case 1: out_->push_back(static_cast<char>(0xD4)); break;
    case 2: out_->push_back(static_cast<char>(0xD5)); break;
    case 4: out_->push_back(static_cast<char>(0xD6)); break;
    case 8: out_->push_back(static_cast<char>(0xD7)); break;
    case 16: out_->push_back(static_cast<char>(0xD8)); break;
    default:
      if (n <= UINT8_MAX) {
        out_->push_back(static_cast<char>(0xC7));
        Be(n, 1);
      } else if (n <= UINT16_MAX) {
        out_->push_back(static_cast<char>(0xC8));
        Be(n, 2);
      } else {
        out_->push_back(static_cast<char>(0xC9));
        Be(n, 4);
      }
  }
  out_->push_back(static_cast<char>(type));
  out_->append(data.data(), n);
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
