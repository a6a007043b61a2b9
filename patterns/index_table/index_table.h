// index_table: the inter-partition secondary index pattern. For every entity
// of `source` and every indexed property it has, one entry in `target`:
//   PartitionKey  the layout applied to the escaped value text (index_keys.h)
//   RowKey        MakeSourceRowKey(source PartitionKey, source RowKey)
//   properties    SourcePartitionKey, SourceRowKey (String), SourceVersion
//                 (Int64), IndexedProperty (String; only with several
//                 properties), then the projected properties.
// Values whose key would be too long, sources whose keys do not fit one
// RowKey, and entries over the entity size limit are not indexed.
//
// Thread safety: immutable after construction; Apply() may run concurrently.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/change_record.h"
#include "engine/edm.h"
#include "engine/status.h"
#include "patterns/index_table/index_keys.h"
#include "patterns/pattern.h"
#include "patterns/registry.h"

namespace sidetable::patterns {

inline constexpr const char* kIndexTableName = "index_table";
inline constexpr const char* kSourcePartitionKeyProperty = "SourcePartitionKey";
inline constexpr const char* kSourceRowKeyProperty = "SourceRowKey";
inline constexpr const char* kIndexedPropertyProperty = "IndexedProperty";

struct IndexTableConfig {
  std::string source;
  std::string target;
  std::vector<std::string> properties;  // one or more
  IndexLayout layout;
  std::vector<std::string> project;

  // From the worker's settings: source, target, properties, layout, prefix,
  // project. InvalidInput naming the setting for anything missing or wrong.
  static Result<IndexTableConfig> FromSettings(const PatternConfig& config);
};

// The entry for `property` of the source entity (pk, rk) whose state is
// `image` at `version`; nullopt when it has no such property or cannot be
// indexed. The one place entries are made: Apply and ExpectedIndex use it.
std::optional<Entity> MakeIndexEntry(const IndexTableConfig& config, const std::string& property,
                                     const std::string& pk, const std::string& rk,
                                     const Entity& image, uint64_t version);

// What `target` must contain for the given source entities (each with its
// keys, properties and ETag W/"<version>", as a query returns them), sorted
// by (PartitionKey, RowKey). Entries have no Timestamp or ETag. `skipped`, if
// given, receives the number of (entity, property) pairs that had the
// property but could not be indexed.
std::vector<Entity> ExpectedIndex(const IndexTableConfig& config,
                                  const std::vector<Entity>& source_entities,
                                  size_t* skipped = nullptr);

class IndexTablePattern final : public Pattern {
 public:
  static Result<std::unique_ptr<Pattern>> Create(const PatternConfig& config);
  explicit IndexTablePattern(IndexTableConfig config) : config_(std::move(config)) {}

  const std::string& name() const override { return name_; }
  bool Wants(const ChangeRecord& record) const override;
  Status Apply(const ChangeRecord& record, std::vector<TableOp>* out) const override;
  std::vector<Derivation> Derivations() const override { return {{config_.source, config_.target}}; }

  const IndexTableConfig& config() const { return config_; }

 private:
  void ApplyOp(const ChangeRecord& record, const ChangeOp& op, std::vector<TableOp>* out) const;

  std::string name_ = kIndexTableName;
  IndexTableConfig config_;
};

}  // namespace sidetable::patterns
