// SourceRoutes: for every table written, the newest change record routed to
// each Kafka partition, so that a session token means every change of its
// source up to its LSN (docs/consistency.md, read_session.h).
//
// A token (source, L) is covered by a derived table once, on every
// partition q of the pair, the derived table has applied the newest record
// of the source at or below L that travels on q. Records of one partition
// are published and applied in LSN order, so it is enough that the pair's
// watermark on q reaches min(L, newest record of the source on q): a later
// record on q can only make the read wait a little longer, never answer it
// early. Without this, a session that wrote PartitionKey A then B held only
// B's LSN and the read waited only on B's partition (session 45).
//
// Fed by the engine as records commit (an engine ChangeObserver: records
// still unpublished, or with no Kafka at all, are known too), and read by
// ResolveSession. It is kept per partition count: the count of a derived
// pair is the one its worker registered (the topic's), which is almost
// always kafka.partitions. A count first asked for later is tracked from
// then on; `complete_from` says from which LSN a count's routes are whole.
//
// Durability: Persist() writes the routes of the tables changed since the
// last call and the LSN they are whole up to in one settings write (the
// maintenance loop calls it every second, before the change log's retention
// may trim what it has not persisted). Load() reads that back and the
// headers of the records after it; a record trimmed before it was
// persisted (a crash in between) moves complete_from past it.
//
// Thread safety: Staged/Settled are called by the engine's commit queue,
// one thread at a time (change_observer.h); every other method may be
// called from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/change_observer.h"
#include "engine/engine.h"

namespace sidetable::sidecar {

class SourceRoutes : public ChangeObserver {
 public:
  // `partitions`: the counts tracked from the start (values < 1 ignored).
  explicit SourceRoutes(std::vector<int32_t> partitions);

  // After Engine::Open, before writes are served: the persisted routes,
  // then the headers of at most `max_scan` records after them (a longer
  // unpersisted tail starts the routes at the first record scanned). A
  // damaged snapshot is logged and read again from the log: the routes are
  // derived data, never a reason not to start.
  Status Load(const Engine& engine, uint64_t max_scan);
  // Writes what changed since the last call; OK when nothing did. One
  // caller at a time (the maintenance thread).
  Status Persist(Engine* engine);

  struct Routes {
    // Records with LSN >= complete_from are all known; older ones only if
    // they were known when the count began to be tracked (never, for a
    // count first asked for by Newest()).
    uint64_t complete_from = 1;
    std::vector<uint64_t> newest;  // per partition, 0 = none known
  };
  // The routes of `source` (any case) for `partitions`. False when the
  // count was not tracked yet: it is from now on, and *out is empty.
  bool Newest(std::string_view source, int32_t partitions, Routes* out);
  // Tracks `partitions` from the next record on, if it is not yet (a
  // derived pair registered with it: Watermarks::OnPartitionCount).
  void Track(int32_t partitions);

  // Every record up to it has been observed (0 before Load).
  uint64_t observed() const { return observed_.load(std::memory_order_acquire); }

  void Staged(uint64_t lsn, std::string_view table, std::string_view partition_key) override;
  void Settled(bool written) override;

 private:
  struct Count {
    int32_t partitions;
    uint64_t complete_from;
  };
  struct Source {
    std::string name;                           // as created (the routing key uses it)
    std::vector<std::vector<uint64_t>> newest;  // per tracked count, per partition
    bool dirty = false;
  };
  struct Pending {
    uint64_t lsn = 0;
    uint32_t hash = 0;  // murmur2 of "<table>/<PartitionKey>", sign bit cleared
    std::string table;
  };

  // Under mu_ (exclusive).
  void ApplyLocked(uint64_t lsn, const std::string& table, uint32_t hash);
  Source& SourceLocked(const std::string& table);
  static uint32_t HashOf(std::string_view table, std::string_view partition_key, std::string* buf);

  mutable std::shared_mutex mu_;
  std::vector<Count> counts_;
  std::map<std::string, Source> sources_;             // by TableKey
  std::unordered_map<std::string, Source*> by_name_;  // as created -> sources_ entry
  bool counts_dirty_ = false;
  std::atomic<bool> tracking_{false};  // counts_ is not empty: Staged has work
  std::atomic<uint64_t> observed_{0};

  // The commit queue's head only (no lock: one thread at a time).
  std::vector<Pending> pending_;
  size_t npending_ = 0;
  uint64_t staged_last_ = 0;       // the newest LSN staged, tracked or not
  bool staged_untracked_ = false;  // some were staged while nothing was tracked
  std::string key_buf_;

  uint64_t persisted_ = 0;  // observed() at the last Persist
  bool persist_failing_ = false;
};

}  // namespace sidetable::sidecar
