// crc32c_bench: what RocksDB's checksums cost with Debian's build, and what
// the engine's wrapper (engine/internal/crc32c.h) pays instead (issue 17;
// results in docs/performance.md, "CRC32C").
//
// RocksDB checksums every WAL record with CRC32C. Debian builds librocksdb
// portable (no -msse4.2), so rocksdb::crc32c picks its table-driven software
// routine even on CPUs that have the crc32 instruction; the engine links
// every program with a wrapper that uses the instruction. This program times,
// on the same buffers: RocksDB's own routine (as linked), the engine's
// routine (what RocksDB's calls reach in sidetable's programs), and XXH3
// (the SST block checksum RocksDB 7.8 uses by default) for scale. It checks
// that both CRC32C routines agree, then prints ns per call and GB/s.
//
//   crc32c_bench [--quick]
#include <rocksdb/version.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "engine/internal/crc32c.h"

namespace rocksdb::crc32c {
// Declared in RocksDB's util/crc32c.h, which Debian does not install.
extern std::string IsFastCrc32Supported();
}  // namespace rocksdb::crc32c

namespace {

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
  using sidetable::internal::Crc32cExtend;
  using sidetable::internal::RocksDbCrc32cExtend;
  const bool quick = argc > 1 && std::string(argv[1]) == "--quick";
  std::printf("RocksDB %d.%d.%d; crc32c::IsFastCrc32Supported(): %s\n", ROCKSDB_MAJOR, ROCKSDB_MINOR,
              ROCKSDB_PATCH, rocksdb::crc32c::IsFastCrc32Supported().c_str());
  const std::string backend(sidetable::internal::Crc32cBackend());
  std::printf("the engine's CRC32C: %s (%s)\n", backend.c_str(),
              sidetable::internal::Crc32cWrapped() ? "RocksDB's calls are wrapped" : "not wrapped here");
  std::mt19937_64 rng(17);
  std::printf("%10s %14s %14s %14s %10s\n", "bytes", "rocksdb ns", "engine ns", "xxh3 ns", "ratio");
  for (size_t size : {256, 1024, 2048, 4096, 32768, 262144}) {
    // 64 distinct buffers, so one cached line does not stand for all.
    std::vector<std::string> bufs(64);
    for (auto& b : bufs) {
      b.resize(size);
      for (auto& ch : b) ch = static_cast<char>(rng());
    }
    for (const auto& b : bufs) {
      if (Crc32cExtend(0, b.data(), size) != RocksDbCrc32cExtend(0, b.data(), size)) {
        std::fprintf(stderr, "CRC32C mismatch at %zu bytes\n", size);
        return 1;
      }
    }
    const int calls = std::max(16, static_cast<int>((quick ? 2 : 40) * (1 << 20) / size));
    const double sw = NsPerCall([&](int i) { return RocksDbCrc32cExtend(0, bufs[i & 63].data(), size); }, calls);
    const double hw = NsPerCall([&](int i) { return Crc32cExtend(0, bufs[i & 63].data(), size); }, calls);
    const double xx = NsPerCall([&](int i) { return XXH3_64bits(bufs[i & 63].data(), size); }, calls);
    std::printf("%10zu %14.1f %14.1f %14.1f %9.1fx   (%.2f vs %.2f GB/s)\n", size, sw, hw, xx, sw / hw,
                size / sw, size / hw);
  }
  return 0;
}
