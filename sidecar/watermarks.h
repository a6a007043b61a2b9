// Watermarks: how far each derived table has applied the change records of
// each of its source tables, per Kafka partition of the change stream
// (docs/consistency.md). Pattern workers report them with
// AdvanceWatermarks; reads carrying session tokens wait on them.
//
// Per (derived, source) pair it keeps the topic's partition count and, per
// partition, the highest LSN reported and its commit time. A stored LSN
// only grows (max of what was reported), so a zombie worker's late report
// never moves it back. Table names compare case-insensitively (TableKey).
//
// Durability: every Advance() is one engine settings write (all pairs it
// touches, atomically) before the memory copy changes, so what a read was
// answered on survives a crash; Load() reads them back at start-up. One
// setting per pair, "wm/<derived key>/<source key>", holding the whole pair:
// a change of the partition count replaces the pair in one write; and
// "wm-registered", written with the first pair ever registered; and per
// pair "wm-since/<derived key>/<source key>", its registration LSN, written
// with the pair's first report (a key of its own: binaries before session
// 46 read the pair's setting unchanged).
//
// Thread safety: every method may be called from any thread. Advance()
// calls are serialised among themselves; readers take a shared lock and
// never wait for the engine write.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "protocol/wire.h"

namespace sidetable::sidecar {

// What a waiting read needs: `derived` has applied record `lsn` of
// `source`, which travels on `partition` of `partitions` (-1: the record
// was trimmed, so every partition of the pair must be past it).
struct Requirement {
  std::string derived_key;  // TableKey form
  std::string source_key;
  int32_t partition = -1;
  int32_t partitions = 0;
  uint64_t lsn = 0;
};

class Watermarks {
 public:
  static Result<std::unique_ptr<Watermarks>> Load(Engine* engine);

  // Validates every entry (lsn at most the engine's last LSN; one partition
  // count per pair in a request), then raises each stored LSN to the
  // reported one if higher, durably. InvalidInput changes nothing.
  Status Advance(const std::vector<wire::WatermarkEntry>& entries);

  // Forgets every pair whose derived table is `derived`, durably: called
  // when that table is deleted. Until session 42 a deleted derived table
  // stayed registered for good: `sidetable-cli lag` showed it falling
  // further behind, and each restart on the embedded Kafka published the
  // log again from its last watermark, forever. A worker still deriving
  // the table registers it again with its next report.
  Status ForgetDerived(std::string_view derived);

  // Every reported (or registered, lsn 0) partition, of one derived table
  // or ("") of all, ordered by derived, source, partition.
  std::vector<wire::WatermarkEntry> Read(std::string_view derived) const;

  // Cheap: false for a table nothing is registered as derived into (every
  // read without a registered derived table stays on the fast path).
  bool IsDerived(std::string_view derived) const;
  // The pair's partition count and the change log's last LSN when it was
  // first registered (for a pair registered before session 46: when this
  // process started); nullopt when the pair is not registered.
  struct Registration {
    int32_t partitions = 0;
    uint64_t since = 0;
  };
  std::optional<Registration> Registered(std::string_view derived, std::string_view source) const;
  // The highest LSN that every registered derived table has applied on
  // every partition of each of its sources: each record up to it is
  // applied everywhere. 0 when some partition has not reported (or a pair
  // is only registered); nullopt when nothing is registered. An embedded
  // Kafka restarts empty, so the publisher goes back to it (server.cc).
  std::optional<uint64_t> LowestApplied() const;
  // Whether any pair was ever registered in this data directory, deleted
  // ones included (a durable flag written with the first registration).
  // Tells "no worker has run yet", when the records the last embedded
  // Kafka held were read by no one, from "every derived table was
  // deleted", when nobody needs them again.
  bool EverRegistered() const;
  // Called with the partition count of every pair an Advance() wrote,
  // after the write (the server tracks session routes for it,
  // source_routes.h). Set before requests are served; must be cheap.
  void OnPartitionCount(std::function<void(int32_t)> fn) { on_count_ = std::move(fn); }
  bool Covers(const Requirement& req) const;
  bool CoversAll(const std::vector<Requirement>& reqs) const;

 private:
  struct Applied {
    uint64_t lsn = 0;
    int64_t time = 0;
  };
  struct Pair {
    std::string derived, source;  // display names (as last reported)
    int32_t partitions = 1;
    std::map<int32_t, Applied> applied;
    uint64_t since = 0;         // Registered()
    bool since_stored = false;  // its "wm-since/" setting exists
  };
  using PairKey = std::pair<std::string, std::string>;  // (derived key, source key)

  explicit Watermarks(Engine* engine) : engine_(engine) {}
  static std::string Encode(const Pair& p);
  static bool Decode(std::string_view value, Pair* p);
  bool CoversLocked(const Requirement& req) const;

  Engine* engine_;
  std::mutex advance_mu_;  // one Advance at a time: read, persist, publish
  mutable std::shared_mutex mu_;
  std::map<PairKey, Pair> pairs_;
  std::map<std::string, int> derived_;  // derived key -> pairs registered
  bool ever_ = false;                   // EverRegistered()
  std::function<void(int32_t)> on_count_;
};

}  // namespace sidetable::sidecar
