// crc32c_bench: what RocksDB's WAL checksum costs with Debian's build, and
// what a RocksDB built with SSE4.2 would pay instead (issue 17; results in
// docs/performance.md, "CRC32C").
//
// RocksDB checksums every WAL record with CRC32C. Debian builds librocksdb
// portable (no -msse4.2), so rocksdb::crc32c picks its table-driven software
// routine even on CPUs that have the crc32 instruction. This program times,
// on the same buffers: RocksDB's own crc32c::Value (as linked), a plain
// SSE4.2 crc32 loop (what a native build's single-stream path does; RocksDB's
// 3-way interleaved version is faster still on large buffers), and XXH3 (the
// SST block checksum RocksDB 7.8 uses by default) for scale. It checks that
// both CRC32C implementations agree, then prints ns per call and GB/s.
//
//   crc32c_bench [--quick]
#include <rocksdb/version.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace rocksdb::crc32c {
// Declared in RocksDB's util/crc32c.h, which Debian does not install; the
// symbols are exported by librocksdb.
extern uint32_t Extend(uint32_t init_crc, const char* data, size_t n);
extern std::string IsFastCrc32Supported();
}  // namespace rocksdb::crc32c

namespace {

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t HardwareCrc32c(uint32_t crc, const char* p, size_t n) {
  uint64_t c = ~crc;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    n -= 8;
  }
  auto c32 = static_cast<uint32_t>(c);
  while (n-- > 0) c32 = _mm_crc32_u8(c32, static_cast<unsigned char>(*p++));
  return ~c32;
}

bool HasSse42() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  return (c & bit_SSE4_2) != 0;
}
#endif

template <typename F>
double NsPerCall(F&& f, int calls) {
  // Median of 5 timed rounds, after one untimed.
  std::vector<double> rounds;
  volatile uint64_t sink = 0;
  for (int r = 0; r < 6; r++) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; i++) sink = sink + f(i);
    const auto t1 = std::chrono::steady_clock::now();
    if (r > 0) rounds.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / calls);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  std::printf("RocksDB %d.%d.%d; crc32c::IsFastCrc32Supported(): %s\n", ROCKSDB_MAJOR, ROCKSDB_MINOR,
              ROCKSDB_PATCH, rocksdb::crc32c::IsFastCrc32Supported().c_str());
#if defined(__x86_64__)
  const bool sse42 = HasSse42();
  std::printf("this CPU has SSE4.2: %s\n", sse42 ? "yes" : "no");
#else
  const bool sse42 = false;
#endif
  std::mt19937_64 rng(17);
  std::printf("%10s %14s %14s %14s %10s\n", "bytes", "rocksdb ns", "sse4.2 ns", "xxh3 ns", "ratio");
  for (size_t size : {256, 1024, 2048, 4096, 32768}) {
    // 64 distinct buffers, so one cached line does not stand for all.
    std::vector<std::string> bufs(64);
    for (auto& b : bufs) {
      b.resize(size);
      for (auto& ch : b) ch = static_cast<char>(rng());
    }
    const int calls = static_cast<int>((quick ? 2 : 40) * (1 << 20) / size);
    const double sw = NsPerCall(
        [&](int i) { return rocksdb::crc32c::Extend(0, bufs[i & 63].data(), size); }, calls);
    const double xx = NsPerCall([&](int i) { return XXH3_64bits(bufs[i & 63].data(), size); }, calls);
    double hw = 0;
#if defined(__x86_64__)
    if (sse42) {
      for (const auto& b : bufs) {
        if (HardwareCrc32c(0, b.data(), size) != rocksdb::crc32c::Extend(0, b.data(), size)) {
          std::fprintf(stderr, "CRC32C mismatch at %zu bytes\n", size);
          return 1;
        }
      }
      hw = NsPerCall([&](int i) { return HardwareCrc32c(0, bufs[i & 63].data(), size); }, calls);
    }
#endif
    std::printf("%10zu %14.1f %14.1f %14.1f %9.1fx   (%.2f vs %.2f GB/s)\n", size, sw, hw, xx,
                hw > 0 ? sw / hw : 0.0, size / sw, hw > 0 ? size / hw : 0.0);
  }
  return 0;
}
