// CRC32C for RocksDB's WAL on the CPU's crc32 instruction (internal header).
//
// Why: RocksDB checksums every WAL record with CRC32C in the writing thread,
// i.e. on the request's path. Debian builds librocksdb portable (no
// -msse4.2), so it runs its table-driven software routine at about 1.1 GB/s
// even where the CPU has SSE4.2's crc32 instruction (about 10 GB/s). That was
// 12% of the sidecar's CPU on an EGT of 100 x 1 KiB (docs/performance.md,
// "CRC32C").
//
// How: the engine links RocksDB statically (Debian's RocksDB::rocksdb is
// librocksdb.a), and engine/CMakeLists.txt links every executable that uses
// the engine with `--wrap` on rocksdb::crc32c::Extend: each call that
// librocksdb's objects make to it (the WAL writer and reader, block and file
// checksums) goes to crc32c.cc's wrapper instead. The result is the same
// CRC32C bit for bit (the tests check it against RocksDB's own routine, and
// every WAL written by one is read back by the other). Only x86-64 builds
// wrap; elsewhere RocksDB's routine stays in place.
//
// Which routine runs is chosen once, at the first checksum:
//   - "sse4.2": the crc32 instruction, when the CPU has it, on three
//     interleaved lanes for buffers of 1,536 bytes and more (about 20-24
//     GB/s here against about 10 for one lane; bench/crc32c_bench);
//   - "rocksdb": RocksDB's own routine, when it does not, or when the
//     environment sets SIDETABLE_CRC32C=rocksdb (for A/B measurements with
//     one binary, and as an escape hatch).
//
// Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace sidetable::internal {

// The CRC32C of `data` continuing from `crc` (0 to start), pre- and
// post-inverted like RocksDB's crc32c::Extend: Crc32cExtend(Crc32cExtend(0,
// a), b) is the CRC of a followed by b.
uint32_t Crc32cExtend(uint32_t crc, const char* data, size_t n);

// RocksDB's own routine as linked (Debian's: software), whatever was
// chosen: the reference the tests and the bench compare against.
uint32_t RocksDbCrc32cExtend(uint32_t crc, const char* data, size_t n);

// The routine chosen ("sse4.2" or "rocksdb"); chooses it if no checksum
// has been computed yet.
std::string_view Crc32cBackend();

// Whether this build wraps RocksDB's crc32c::Extend (x86-64 only).
bool Crc32cWrapped();

// Bytes librocksdb has checksummed through the wrapper since the process
// started: how a test sees that the library's WAL writes reach it.
uint64_t Crc32cBytes();

}  // namespace sidetable::internal
