// EpochFilter: the fencing rule every reader of a scale-out change topic
// applies (docs/scale-out.md, "The claim").
//
// Per Kafka partition (one shard), in partition order: a ShardClaimed record
// raises the partition's floor to its epoch; a record whose epoch is below
// the floor was written by an owner that had already been replaced, and is
// skipped. Claims themselves are not data and are not admitted either.
// Records with epoch 0 come from sidecars outside a cluster and are always
// admitted while no claim has been read on their partition. Table events
// with an epoch are always admitted: one member publishes each, for a
// record of the cluster topic, which alone decides tables
// (docs/scale-out.md, "Table events in a cluster").
//
// A filter that knows its reader's service (the cluster's readers do) only
// lets that service's claims fence: a claim naming another service (a
// sidecar of another service configured with this change topic by mistake)
// is kForeign and leaves the floor alone, since its epochs count another
// group's generations and would otherwise fence every write of this
// service's owners. Claims without a service (written before claims named
// one) are this service's. A filter without a service (workers, replay)
// lets every claim fence, as before.
//
// Thread safety: one filter per consuming thread.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>

#include "engine/change_record.h"

namespace sidetable::events {

class EpochFilter {
 public:
  enum class Verdict { kApply, kClaim, kFenced, kForeign };

  EpochFilter() = default;
  explicit EpochFilter(std::string service) : service_(std::move(service)) {}

  // What to do with `record`, read at its place on `partition`.
  Verdict Check(int32_t partition, const ChangeRecord& record) {
    if (record.kind == ChangeKind::kShardClaimed) {
      if (IsForeign(record)) {
        foreign_claims_++;
        return Verdict::kForeign;
      }
      uint64_t& floor = floors_[partition];
      if (record.epoch > floor) floor = record.epoch;
      claims_++;
      return Verdict::kClaim;
    }
    // A table event with an epoch was published once, by the member that
    // wrote its record on the cluster topic, which decided it (not an
    // owner of this shard): no claim fences it. Table events with epoch 0
    // (every member published one before session 45) are fenced as before.
    if (record.epoch != 0 && IsTableEvent(record)) return Verdict::kApply;
    if (record.epoch < Floor(partition)) {
      fenced_++;
      return Verdict::kFenced;
    }
    return Verdict::kApply;
  }
  bool Admit(int32_t partition, const ChangeRecord& record) {
    return Check(partition, record) == Verdict::kApply;
  }
  static bool IsTableEvent(const ChangeRecord& record) {
    return record.kind == ChangeKind::kTableCreated || record.kind == ChangeKind::kTableDeleted;
  }
  // A claim of another service than this filter's (never with no service).
  bool IsForeign(const ChangeRecord& claim) const {
    return !service_.empty() && !claim.service.empty() && claim.service != service_;
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
  uint64_t foreign_claims() const { return foreign_claims_; }

 private:
  std::string service_;  // "" = every claim fences (not const: readers reset filters by assignment)
  std::unordered_map<int32_t, uint64_t> floors_;
  uint64_t fenced_ = 0;
  uint64_t claims_ = 0;
  uint64_t foreign_claims_ = 0;
};

}  // namespace sidetable::events
