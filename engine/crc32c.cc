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
// One dependent chain of 8-byte crc32 steps: about 10 GB/s here, against
// RocksDB's software routine's 1.1 GB/s (bench/crc32c_bench). RocksDB's
// native build interleaves three chains for large buffers; a WAL record is
// at most a few hundred KB, where one chain is already a small cost.
__attribute__((target("sse4.2"))) uint32_t Sse42Extend(uint32_t crc, const char* data, size_t n) {
  uint64_t c = ~crc;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, data, 8);
    c = _mm_crc32_u64(c, v);
    data += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, static_cast<unsigned char>(*data++));
  return ~c32;
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
