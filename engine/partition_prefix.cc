#include "engine/internal/partition_prefix.h"

#include <cstring>

namespace sidetable::internal {
namespace {

constexpr size_t kTableIdBytes = 4;

// The length of the prefix (through the separator), or 0 when there is none.
size_t PrefixLength(const rocksdb::Slice& key) {
  if (key.size() <= kTableIdBytes) return 0;
  const void* sep = std::memchr(key.data() + kTableIdBytes, '\0', key.size() - kTableIdBytes);
  if (sep == nullptr) return 0;
  return static_cast<size_t>(static_cast<const char*>(sep) - key.data()) + 1;
}

class PartitionPrefixTransform final : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "sidetable.PartitionPrefix"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return rocksdb::Slice(key.data(), PrefixLength(key));
  }
  bool InDomain(const rocksdb::Slice& key) const override { return PrefixLength(key) != 0; }
};

}  // namespace

std::shared_ptr<const rocksdb::SliceTransform> NewPartitionPrefixTransform() {
  return std::make_shared<PartitionPrefixTransform>();
}

}  // namespace sidetable::internal
