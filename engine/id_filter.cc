#include "engine/internal/id_filter.h"

#include <algorithm>

namespace sidetable::internal {

IdFilter::IdFilter(uint64_t expected_ids) {
  // 10 bits an id in 512-bit blocks; at least one block, at most kMaxBytes.
  const uint64_t ids = std::clamp<uint64_t>(expected_ids, 1, uint64_t{kMaxBytes} * 8 / 10);
  const uint64_t bits = ids * 10;
  const uint64_t blocks = std::min<uint64_t>((bits + 511) / 512, kMaxBytes / sizeof(Block));
  blocks_.resize(static_cast<size_t>(blocks));
}

size_t IdFilter::BlockIndex(uint64_t hash) const {
  // The high 32 bits choose the block (a multiply-shift range reduction,
  // no division); the low 32 bits the bits inside it (BitOf).
  return static_cast<size_t>(((hash >> 32) * blocks_.size()) >> 32);
}

// Probe i takes 9 bits of the low word: which of the block's 512 bits. The
// low word is mixed with an odd constant per probe so that the probes of
// one id are spread even when its hash's low bits are close to another's.
namespace {
inline uint32_t BitOf(uint64_t hash, int probe) {
  const uint32_t x =
      static_cast<uint32_t>(hash) * (0x9E3779B1u + 2u * static_cast<uint32_t>(probe));
  return x >> 23;  // 0..511
}
}  // namespace

void IdFilter::Add(uint64_t hash) {
  Block& b = blocks_[BlockIndex(hash)];
  for (int i = 0; i < kProbes; i++) {
    const uint32_t bit = BitOf(hash, i);
    b.words[bit >> 6] |= uint64_t{1} << (bit & 63);
  }
}

bool IdFilter::MayContain(uint64_t hash) const {
  const Block& b = blocks_[BlockIndex(hash)];
  for (int i = 0; i < kProbes; i++) {
    const uint32_t bit = BitOf(hash, i);
    if ((b.words[bit >> 6] & (uint64_t{1} << (bit & 63))) == 0) return false;
  }
  return true;
}

}  // namespace sidetable::internal
