// archive: the eventually consistent transactions pattern (Azure's
// "move to archive" example). Entities of `source` move to `target`:
//  - on request: a ChangeRecord of kind ArchiveRequested for the source
//    table and one PartitionKey, one ChangeOp per RowKey (no images), into
//    the record's target_table (RequestArchive requires one; a record
//    without it, which no sidecar writes, goes to the configured target);
//  - by rule: the worker periodically queries the source with `filter` and
//    `min_age_seconds` every `interval_seconds` and hands what it found to
//    ArchiveMoves().
// Both produce one TableOp::kMove per entity (pattern.h says how the worker
// executes it, and docs/patterns.md the isolation caveat).
//
// Thread safety: immutable after construction; Apply() may run concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/change_record.h"
#include "engine/edm.h"
#include "engine/status.h"
#include "patterns/pattern.h"
#include "patterns/registry.h"

namespace sidetable::patterns {

inline constexpr const char* kArchiveName = "archive";

class ArchiveConfig {
 public:
  static constexpr int64_t kDefaultIntervalSeconds = 60;

  // From the worker's settings: source, target, filter, min_age_seconds,
  // interval_seconds. InvalidInput naming the setting for anything wrong.
  static Result<ArchiveConfig> FromSettings(const PatternConfig& config);
  ArchiveConfig() = default;
  ArchiveConfig(std::string source, std::string target)
      : source_(std::move(source)), target_(std::move(target)) {}

  const std::string& source() const { return source_; }
  const std::string& target() const { return target_; }
  // The rule is on when `filter` or `min_age_seconds` is set.
  bool has_rule() const { return filter_.has_value() || min_age_seconds_.has_value(); }
  // The $filter the worker evaluates ("" = every entity).
  const std::string& filter() const { return filter_ ? *filter_ : empty_; }
  // Entities whose Timestamp is older than this qualify (0 = any age).
  int64_t min_age_seconds() const { return min_age_seconds_.value_or(0); }
  int64_t interval_seconds() const { return interval_seconds_; }

 private:
  std::string source_;
  std::string target_;
  std::optional<std::string> filter_;
  std::optional<int64_t> min_age_seconds_;
  int64_t interval_seconds_ = kDefaultIntervalSeconds;
  std::string empty_;
};

// The one path both triggers take: a kMove of (pk, rk) from the config's
// source into `target` (the config's target when empty), at `version`.
TableOp MakeArchiveMove(const ArchiveConfig& config, const std::string& target,
                        const std::string& pk, const std::string& rk, uint64_t version);

// The rule evaluator's half: `found` are the source entities that passed the
// filter and the age (keys and ETag W/"<version>" as a query returns them).
// Appends one kMove per entity, fenced at the version the worker saw, so an
// entity rewritten since the query stays until the next evaluation.
void ArchiveMoves(const ArchiveConfig& config, const std::vector<Entity>& found,
                  std::vector<TableOp>* out);

class ArchivePattern final : public Pattern {
 public:
  static Result<std::unique_ptr<Pattern>> Create(const PatternConfig& config);
  explicit ArchivePattern(ArchiveConfig config) : config_(std::move(config)) {}

  const std::string& name() const override { return name_; }
  // ArchiveRequested records of the source table.
  bool Wants(const ChangeRecord& record) const override;
  Status Apply(const ChangeRecord& record, std::vector<TableOp>* out) const override;
  // The configured target; a request names its own (not tracked).
  std::vector<Derivation> Derivations() const override { return {{config_.source(), config_.target()}}; }

  const ArchiveConfig& config() const { return config_; }

 private:
  std::string name_ = kArchiveName;
  ArchiveConfig config_;
};

}  // namespace sidetable::patterns
