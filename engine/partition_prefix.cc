#include "engine/internal/partition_prefix.h"

#include "engine/internal/codec.h"

namespace sidetable::internal {
namespace {

class PartitionPrefixTransform final : public rocksdb::SliceTransform {
 public:
  const char* Name() const override { return "sidetable.PartitionPrefix"; }
  rocksdb::Slice Transform(const rocksdb::Slice& key) const override {
    return rocksdb::Slice(key.data(), codec::PartitionPrefixLength(key.ToStringView()));
  }
  bool InDomain(const rocksdb::Slice& key) const override {
    return codec::PartitionPrefixLength(key.ToStringView()) != 0;
  }
};

}  // namespace

std::shared_ptr<const rocksdb::SliceTransform> NewPartitionPrefixTransform() {
  return std::make_shared<PartitionPrefixTransform>();
}

}  // namespace sidetable::internal
