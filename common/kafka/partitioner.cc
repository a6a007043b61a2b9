// Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2), written
// from its description: 4-byte little-endian blocks, then the tail, then
// the final avalanche.
#include "common/kafka/partitioner.h"

namespace sidetable::kafka {

uint32_t Murmur2(std::string_view key) {
  constexpr uint32_t kSeed = 0x9747b28c;
  constexpr uint32_t kM = 0x5bd1e995;
  constexpr int kR = 24;
  const auto* data = reinterpret_cast<const uint8_t*>(key.data());
  const size_t length = key.size();
  uint32_t h = kSeed ^ static_cast<uint32_t>(length);
  const size_t blocks = length / 4;
  for (size_t i = 0; i < blocks; i++) {
    const uint8_t* p = data + 4 * i;
    uint32_t k = uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
    k *= kM;
    k ^= k >> kR;
    k *= kM;
    h *= kM;
    h ^= k;
  }
  const uint8_t* tail = data + 4 * blocks;
  switch (length & 3) {
    case 3: h ^= uint32_t{tail[2]} << 16; [[fallthrough]];
    case 2: h ^= uint32_t{tail[1]} << 8; [[fallthrough]];
    case 1:
      h ^= uint32_t{tail[0]};
      h *= kM;
  }
  h ^= h >> 13;
  h *= kM;
  h ^= h >> 15;
  return h;
}

int32_t KafkaPartitionFor(std::string_view key, int32_t partitions) {
  if (partitions <= 1) return 0;
  return static_cast<int32_t>((Murmur2(key) & 0x7fffffff) % static_cast<uint32_t>(partitions));
}

}  // namespace sidetable::kafka
