// EpochFilter: the fencing rule every reader of a scale-out change topic
// applies (docs/scale-out.md, "The claim").
//
// Per Kafka partition (one shard), in partition order: a ShardClaimed record
// raises the partition's floor to its epoch; a record whose epoch is below
// the floor was written by an owner that had already been replaced, and is
// skipped. Claims themselves are not data and are not admitted either.
// Records with epoch 0 come from sidecars outside a cluster and are always
// admitted while no claim has been read on their partition.
//
// Thread safety: one filter per consuming thread.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "engine/change_record.h"

namespace sidetable::events {

class EpochFilter {
 public:
  enum class Verdict { kApply, kClaim, kFenced };

  // What to do with `record`, read at its place on `partition`.
  Verdict Check(int32_t partition, const ChangeRecord& record) {
    uint64_t& floor = floors_[partition];
    if (record.kind == ChangeKind::kShardClaimed) {
      if (record.epoch > floor) floor = record.epoch;
      claims_++;
      return Verdict::kClaim;
    }
    if (record.epoch < floor) {
      fenced_++;
      return Verdict::kFenced;
    }
    return Verdict::kApply;
  }
  bool Admit(int32_t partition, const ChangeRecord& record) {
    return Check(partition, record) == Verdict::kApply;
  }

  // The highest claim epoch read on `partition` (0 = none yet).
  uint64_t Floor(int32_t partition) const {
    auto it = floors_.find(partition);
    return it == floors_.end() ? 0 : it->second;
  }
  // A reader that starts mid-partition (from a committed offset) seeds the
  // floor it had reached; a restart from the beginning needs nothing.
  void SeedFloor(int32_t partition, uint64_t epoch) {
    uint64_t& floor = floors_[partition];
    if (epoch > floor) floor = epoch;
  }
  uint64_t fenced() const { return fenced_; }
  uint64_t claims() const { return claims_; }

 private:
  std::unordered_map<int32_t, uint64_t> floors_;
  uint64_t fenced_ = 0;
  uint64_t claims_ = 0;
};

}  // namespace sidetable::events
