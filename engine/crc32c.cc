#include "engine/internal/crc32c.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#define SIDETABLE_CRC32C_WRAP 1
#else
#define SIDETABLE_CRC32C_WRAP 0
#endif

// RocksDB's own rocksdb::crc32c::Extend, under the name the linker's --wrap
// gives it (engine/CMakeLists.txt); declared in RocksDB's util/crc32c.h,
// which Debian does not install.
#if SIDETABLE_CRC32C_WRAP
extern "C" uint32_t __real__ZN7rocksdb6crc32c6ExtendEjPKcm(uint32_t crc, const char* data, size_t n);
#define SIDETABLE_ROCKSDB_EXTEND __real__ZN7rocksdb6crc32c6ExtendEjPKcm
#else
namespace rocksdb::crc32c {
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);
}  // namespace rocksdb::crc32c
#define SIDETABLE_ROCKSDB_EXTEND rocksdb::crc32c::Extend
#endif

namespace sidetable::internal {
namespace {

using ExtendFn = uint32_t (*)(uint32_t, const char*, size_t);

#if SIDETABLE_CRC32C_WRAP
// One dependent chain of 8-byte crc32 steps: the instruction's latency (3
// cycles) sets the pace, about 8 bytes per 3 cycles.
__attribute__((target("sse4.2"))) uint64_t Sse42Chain(uint64_t c, const char* data, size_t n) {
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, data, 8);
    c = _mm_crc32_u64(c, v);
    data += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, static_cast<unsigned char>(*data++));
  return c32;
}

// Three chains at once: the CPU issues one crc32 a cycle, so three
// independent lanes run about 3x faster than one. A block of kLaneBytes x 3
// is summed lane by lane, each lane from a zero register, then joined: the
// CRC register is linear over GF(2), so the register after A then B is
// Shift(reg after A, |B|) xor (B's own register from zero), where
// Shift(r, n) is the register after n zero bytes. Shift by one lane and by
// two lanes are each four table lookups (a 32x32 bit matrix split by
// bytes), computed once from the polynomial.
constexpr size_t kLaneBytes = 512;
constexpr uint32_t kPoly = 0x82F63B78u;  // CRC32C, bit-reflected

struct ShiftTable {
  uint32_t t[4][256];
  uint32_t operator()(uint32_t r) const {
    return t[0][r & 0xff] ^ t[1][(r >> 8) & 0xff] ^ t[2][(r >> 16) & 0xff] ^ t[3][r >> 24];
  }
};

ShiftTable MakeShift(size_t bytes) {
  // Where each bit of the register goes after `bytes` zero bytes.
  uint32_t image[32];
  for (int i = 0; i < 32; i++) {
    uint32_t r = 1u << i;
    for (size_t k = 0; k < 8 * bytes; k++) r = (r >> 1) ^ ((r & 1) ? kPoly : 0);
    image[i] = r;
  }
  ShiftTable st{};
  for (int b = 0; b < 4; b++) {
    for (int v = 0; v < 256; v++) {
      uint32_t r = 0;
      for (int j = 0; j < 8; j++) {
        if (v & (1 << j)) r ^= image[8 * b + j];
      }
      st.t[b][v] = r;
    }
  }
  return st;
}

struct LaneShifts {
  ShiftTable one = MakeShift(kLaneBytes);
  ShiftTable two = MakeShift(2 * kLaneBytes);
};

const LaneShifts& Shifts() {
  static const LaneShifts shifts;
  return shifts;
}

__attribute__((target("sse4.2"))) uint32_t Sse42Extend(uint32_t crc, const char* data, size_t n) {
  uint64_t c = static_cast<uint32_t>(~crc);
  if (n >= 3 * kLaneBytes) {
    const LaneShifts& shift = Shifts();
    while (n >= 3 * kLaneBytes) {
      uint64_t a = c, b = 0, d = 0;
      const char* pa = data;
      const char* pb = data + kLaneBytes;
      const char* pd = data + 2 * kLaneBytes;
      for (size_t i = 0; i < kLaneBytes; i += 8) {
        uint64_t va, vb, vd;
        std::memcpy(&va, pa + i, 8);
        std::memcpy(&vb, pb + i, 8);
        std::memcpy(&vd, pd + i, 8);
        a = _mm_crc32_u64(a, va);
        b = _mm_crc32_u64(b, vb);
        d = _mm_crc32_u64(d, vd);
      }
      c = shift.two(static_cast<uint32_t>(a)) ^ shift.one(static_cast<uint32_t>(b)) ^
          static_cast<uint32_t>(d);
      data += 3 * kLaneBytes;
      n -= 3 * kLaneBytes;
    }
  }
  return ~static_cast<uint32_t>(Sse42Chain(c, data, n));
}
#endif

struct Choice {
  ExtendFn fn;
  const char* name;
};

Choice Choose() {
#if SIDETABLE_CRC32C_WRAP
  const char* forced = std::getenv("SIDETABLE_CRC32C");
  const bool want_rocksdb = forced != nullptr && std::strcmp(forced, "rocksdb") == 0;
  if (!want_rocksdb && __builtin_cpu_supports("sse4.2")) return {&Sse42Extend, "sse4.2"};
#endif
  return {&SIDETABLE_ROCKSDB_EXTEND, "rocksdb"};
}

// Chosen on first use (a function-local static, initialized once and
// thread-safe), not at static initialization, which runs in an unspecified
// order with RocksDB's own.
const Choice& Chosen() {
  static const Choice choice = Choose();
  return choice;
}

std::atomic<uint64_t> g_wrapped_bytes{0};

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, const char* data, size_t n) { return Chosen().fn(crc, data, n); }

uint32_t RocksDbCrc32cExtend(uint32_t crc, const char* data, size_t n) {
  return SIDETABLE_ROCKSDB_EXTEND(crc, data, n);
}

std::string_view Crc32cBackend() { return Chosen().name; }

bool Crc32cWrapped() { return SIDETABLE_CRC32C_WRAP != 0; }

uint64_t Crc32cBytes() { return g_wrapped_bytes.load(std::memory_order_relaxed); }

}  // namespace sidetable::internal

#if SIDETABLE_CRC32C_WRAP
// The wrapper: with --wrap, every call librocksdb's objects make to
// rocksdb::crc32c::Extend lands here.
extern "C" uint32_t __wrap__ZN7rocksdb6crc32c6ExtendEjPKcm(uint32_t crc, const char* data, size_t n) {
  sidetable::internal::g_wrapped_bytes.fetch_add(n, std::memory_order_relaxed);
  return sidetable::internal::Crc32cExtend(crc, data, n);
}
#endif
