// Archive rules: time-based moves for `archive` patterns.
//
// An `archive` pattern configured with `min_age_seconds` (and usually a
// `filter`) is also a rule the worker evaluates every `interval_seconds`
// (default 60): it queries the source table with
//   (<filter>) and Timestamp lt datetime'<now - min_age>'
// following continuations, and applies the kMove operations that
// patterns::ArchiveMoves() makes of each page (op_applier.h), into `target`. Moves are idempotent,
// so two workers running the same rule at once only waste work.
//
// Failures are per entity. An entity that cannot be moved for good (its copy
// over the entity limits, apply/move_copy.h, or another permanent refusal)
// stays in the source alone: every other entity is moved, later pages go on.
// It is reported once (log and metric, UnmovableEntities) and not tried
// again until its version changes. A transient failure (the sidecar busy or
// away) makes the evaluation's status, logged; the rule is tried again at its
// next interval.
//
// Thread safety: ArchiveScheduler runs its own thread with its own client;
// Stop() may be called from any thread, and abandons a request in flight
// (the moves are idempotent: the next run redoes what was cut).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "apply/op_applier.h"
#include "apply/table_store.h"
#include "client/client.h"
#include "engine/status.h"
#include "patterns/archive/archive.h"
#include "patterns/registry.h"
#include "workers/metrics.h"

namespace sidetable::client {
class Client;
}

namespace sidetable::workers {

// patterns/archive/archive.h: source, target, filter, min_age_seconds,
// interval_seconds.
using ArchiveRule = patterns::ArchiveConfig;

// The rules among `patterns`: archive patterns with a filter or
// min_age_seconds (ArchiveConfig::has_rule). Bad settings are InvalidInput
// naming the pattern and the setting.
Status ParseArchiveRules(const std::vector<patterns::PatternConfig>& patterns, std::vector<ArchiveRule>* out);

// The filter of one evaluation at `now_ticks`.
std::string ArchiveFilter(const ArchiveRule& rule, int64_t now_ticks);

// An entity a rule found and cannot move for good, at the version it had.
struct ArchiveFailure {
  std::string partition_key, row_key;
  uint64_t version = 0;
  Status status;  // names the entity and why
};

// What one evaluation did.
struct ArchiveRun {
  uint64_t moved = 0;
  std::vector<ArchiveFailure> failed;   // newly failed for good
  std::vector<ArchiveFailure> skipped;  // known to fail (UnmovableEntities), not tried
  bool complete = false;                // every page was read
};

// The entities of one rule that failed for good, at the version that failed,
// so that each is reported once and skipped until it changes. A complete
// evaluation forgets those it did not find again (moved, changed or deleted
// by hand). At most kMaxRemembered: beyond that, failures are tried and
// reported again at each evaluation.
class UnmovableEntities {
 public:
  static constexpr size_t kMaxRemembered = 10000;
  // The failure remembered for (pk, rk) at `version`, or null.
  const ArchiveFailure* Find(const std::string& pk, const std::string& rk, uint64_t version) const;
  // After an evaluation: remembers its failures.
  void Update(const ArchiveRun& run);
  size_t size() const { return known_.size(); }

 private:
  std::map<std::pair<std::string, std::string>, ArchiveFailure> known_;
};

// One evaluation: moves every matching entity but those `known` (may be
// null) says fail at their current version. Returns the first transient
// failure (the rule is tried again at its next interval), or OK.
Status RunArchiveRule(const ArchiveRule& rule, int64_t now_ticks, apply::TableStore* store,
                      apply::OpApplier* applier, const std::atomic<bool>& stop,
                      const UnmovableEntities* known, ArchiveRun* run);

struct ArchiveOptions {
  std::string endpoint;
  int timeout_ms = 5000;
  std::string caller;
  int fence_attempts = 16;
  std::string token;  // sidecar.token_file's token ("" = none)
  client::CurveClientKeys curve;  // empty: a plain connection
};

class ArchiveScheduler {
 public:
  static Result<std::unique_ptr<ArchiveScheduler>> Start(std::vector<ArchiveRule> rules, const ArchiveOptions& o,
                                                         WorkerMetrics* metrics);
  ~ArchiveScheduler();
  void Stop();

 private:
  ArchiveScheduler() = default;
  void Loop();

  std::vector<ArchiveRule> rules_;
  std::vector<UnmovableEntities> unmovable_;  // per rule
  WorkerMetrics* metrics_ = nullptr;
  // Before client_, which reads it (ClientOptions::abandon).
  std::atomic<bool> stop_{false};
  std::unique_ptr<client::Client> client_;
  std::unique_ptr<apply::TableStore> store_;
  std::unique_ptr<apply::OpApplier> applier_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace sidetable::workers
