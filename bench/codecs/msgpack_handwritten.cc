#include "bench/codecs/msgpack_handwritten.h"

#include <cstring>

namespace sidetable::bench::codecs {

void HandWrittenPacker::Be(uint64_t v, int bytes) {
  char buf[8];
  for (int i = 0; i < bytes; i++) buf[i] = static_cast<char>(v >> (8 * (bytes - 1 - i)));
  out_->append(buf, static_cast<size_t>(bytes));
}

HandWrittenPacker& HandWrittenPacker::pack_int64(int64_t v) {
  if (v >= 0) return pack_uint64(static_cast<uint64_t>(v));
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
  return *this;
}

HandWrittenPacker& HandWrittenPacker::pack_uint64(uint64_t v) {
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
  return *this;
}

HandWrittenPacker& HandWrittenPacker::pack_double(double d) {
  uint64_t bits;
  std::memcpy(&bits, &d, sizeof bits);
  out_->push_back(static_cast<char>(0xCB));
  Be(bits, 8);
  return *this;
}

HandWrittenPacker& HandWrittenPacker::pack_str(uint32_t n) {
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
  return *this;
}

HandWrittenPacker& HandWrittenPacker::pack_bin(uint32_t n) {
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
  return *this;
}

HandWrittenPacker& HandWrittenPacker::pack_array(uint32_t n) {
  if (n < 16) {
    out_->push_back(static_cast<char>(0x90 | n));
  } else if (n <= UINT16_MAX) {
    out_->push_back(static_cast<char>(0xDC));
    Be(n, 2);
  } else {
    out_->push_back(static_cast<char>(0xDD));
    Be(n, 4);
  }
  return *this;
}

HandWrittenPacker& HandWrittenPacker::pack_map(uint32_t n) {
  if (n < 16) {
    out_->push_back(static_cast<char>(0x80 | n));
  } else if (n <= UINT16_MAX) {
    out_->push_back(static_cast<char>(0xDE));
    Be(n, 2);
  } else {
    out_->push_back(static_cast<char>(0xDF));
    Be(n, 4);
  }
  return *this;
}

HandWrittenPacker& HandWrittenPacker::pack_ext(size_t n, int8_t type) {
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
  return *this;
}

}  // namespace sidetable::bench::codecs
