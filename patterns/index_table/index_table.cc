#include "patterns/index_table/index_table.h"

#include <algorithm>
#include <tuple>

#include "engine/etag.h"
#include "engine/limits.h"
#include "patterns/common.h"

namespace sidetable::patterns {

namespace {

bool IsReservedName(const std::string& name) {
  return name == kSourcePartitionKeyProperty || name == kSourceRowKeyProperty ||
         name == kSourceVersionProperty || name == kIndexedPropertyProperty;
}

// True when `a` is a prefix of `b` or the other way round.
bool PrefixRelated(const std::string& a, const std::string& b) {
  size_t n = std::min(a.size(), b.size());
  return a.compare(0, n, b, 0, n) == 0;
}
bool SuffixRelated(const std::string& a, const std::string& b) {
  size_t n = std::min(a.size(), b.size());
  return a.compare(a.size() - n, n, b, b.size() - n, n) == 0;
}

}  // namespace

Result<IndexTableConfig> IndexTableConfig::FromSettings(const PatternConfig& config) {
  SettingsReader r(config);
  ST_RETURN_IF_ERROR(
      r.CheckKnown({"source", "target", "properties", "layout", "prefix", "project"}));
  IndexTableConfig out;
  auto source = r.RequiredTable("source");
  if (!source.ok()) return source.status();
  out.source = std::move(*source);
  auto target = r.RequiredTable("target");
  if (!target.ok()) return target.status();
  out.target = std::move(*target);
  if (TableNameEquals(out.source, out.target)) {
    return r.Error("target", "must differ from source");
  }

  auto properties = r.RequiredList("properties");
  if (!properties.ok()) return properties.status();
  out.properties = std::move(*properties);
  for (size_t i = 0; i < out.properties.size(); i++) {
    const std::string& p = out.properties[i];
    Status valid = ValidatePropertyName(p);
    if (!valid.ok())
      return r.Error("properties", "has an invalid name '" + p + "': " + valid.message());
    for (size_t j = 0; j < i; j++) {
      if (out.properties[j] == p) return r.Error("properties", "names '" + p + "' twice");
    }
  }

  out.project = r.OptionalList("project");
  for (size_t i = 0; i < out.project.size(); i++) {
    const std::string& p = out.project[i];
    Status valid = ValidatePropertyName(p);
    if (!valid.ok())
      return r.Error("project", "has an invalid name '" + p + "': " + valid.message());
    if (IsReservedName(p)) return r.Error("project", "may not name the entry property '" + p + "'");
    for (size_t j = 0; j < i; j++) {
      if (out.project[j] == p) return r.Error("project", "names '" + p + "' twice");
    }
  }
  if (out.project.size() + 4 > Limits::kMaxUserProperties) {
    return r.Error("project", "names too many properties (at most " +
                                  std::to_string(Limits::kMaxUserProperties - 4) + ")");
  }

  auto prefix = r.Optional("prefix");
  if (!prefix.ok()) return prefix.status();
  auto layout_text = r.Optional("layout");
  if (!layout_text.ok()) return layout_text.status();
  std::string layout = layout_text->value_or(prefix->has_value() ? IndexLayout::kDefaultWithPrefix
                                                                 : IndexLayout::kDefault);
  auto parsed = IndexLayout::Parse(layout, prefix->value_or(""));
  if (!parsed.ok()) return r.Error("layout", "is invalid: " + parsed.status().message());
  out.layout = std::move(*parsed);

  // Entries of different properties of one source share the RowKey, so the
  // layout must keep their PartitionKeys apart for every possible value: the
  // text before {value} (or after it) must differ within the shorter of the two.
  for (size_t i = 0; i < out.properties.size(); i++) {
    for (size_t j = 0; j < i; j++) {
      const auto& a = out.properties[i];
      const auto& b = out.properties[j];
      if (PrefixRelated(out.layout.Before(a), out.layout.Before(b)) &&
          SuffixRelated(out.layout.After(a), out.layout.After(b))) {
        return r.Error("layout", "'" + layout + "' can give entries of '" + b + "' and '" + a +
                                     "' the same PartitionKey; with several properties use "
                                     "{property} so that they differ, e.g. '{property}_{value}'"
                                     " with property names where none is a prefix of another,"
                                     " or '{value}_{property}'");
      }
    }
  }
  return out;
}

namespace {

// The keys of the entry for `property` of (pk, rk) in state `image`; nullopt
// when it has no such property or the keys would be invalid.
std::optional<Entity> EntryKeys(const IndexTableConfig& config, const std::string& property,
                                const std::string& pk, const std::string& rk, const Entity& image) {
  const Value* value = image.Find(property);
  if (value == nullptr) return std::nullopt;
  auto entry_pk = config.layout.PartitionKey(property, *value);
  if (!entry_pk) return std::nullopt;
  auto entry_rk = MakeSourceRowKey(pk, rk);
  if (!entry_rk.ok()) return std::nullopt;
  Entity keys;
  keys.partition_key = std::move(*entry_pk);
  keys.row_key = std::move(*entry_rk);
  return keys;
}

}  // namespace

std::optional<Entity> MakeIndexEntry(const IndexTableConfig& config, const std::string& property,
                                     const std::string& pk, const std::string& rk,
                                     const Entity& image, uint64_t version) {
  auto keys = EntryKeys(config, property, pk, rk, image);
  if (!keys) return std::nullopt;
  Entity& entry = *keys;
  entry.properties.reserve(4 + config.project.size());
  entry.properties.push_back({kSourcePartitionKeyProperty, Value::String(pk)});
  entry.properties.push_back({kSourceRowKeyProperty, Value::String(rk)});
  entry.properties.push_back({kSourceVersionProperty, Value::Int64(static_cast<int64_t>(version))});
  if (config.properties.size() > 1) {
    entry.properties.push_back({kIndexedPropertyProperty, Value::String(property)});
  }
  for (const auto& name : config.project) {
    if (const Value* v = image.Find(name)) entry.properties.push_back({name, *v});
  }
  if (EntitySize(entry) > Limits::kMaxEntityBytes) return std::nullopt;
  return keys;
}

std::vector<Entity> ExpectedIndex(const IndexTableConfig& config,
                                  const std::vector<Entity>& source_entities, size_t* skipped) {
  std::vector<Entity> out;
  size_t missed = 0;
  for (const auto& e : source_entities) {
    uint64_t version = VersionFromETag(e.etag).value_or(0);
    for (const auto& property : config.properties) {
      auto entry = MakeIndexEntry(config, property, e.partition_key, e.row_key, e, version);
      if (entry) {
        out.push_back(std::move(*entry));
      } else if (e.Find(property) != nullptr) {
        missed++;
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const Entity& a, const Entity& b) {
    return std::tie(a.partition_key, a.row_key) < std::tie(b.partition_key, b.row_key);
  });
  if (skipped != nullptr) *skipped = missed;
  return out;
}

Result<std::unique_ptr<Pattern>> IndexTablePattern::Create(const PatternConfig& config) {
  auto parsed = IndexTableConfig::FromSettings(config);
  if (!parsed.ok()) return parsed.status();
  return std::unique_ptr<Pattern>(new IndexTablePattern(std::move(*parsed)));
}

bool IndexTablePattern::Wants(const ChangeRecord& record) const {
  return (record.kind == ChangeKind::kEntities || record.kind == ChangeKind::kTableDeleted) &&
         TableNameEquals(record.table, config_.source);
}

Status IndexTablePattern::Apply(const ChangeRecord& record, std::vector<TableOp>* out) const {
  if (!Wants(record)) return Status::OK();
  if (record.kind == ChangeKind::kTableDeleted) {
    TableOp op;
    op.kind = TableOp::Kind::kFencedClear;
    op.table = config_.target;
    op.version = ClearVersion(record);
    out->push_back(std::move(op));
    return Status::OK();
  }
  for (const auto& op : record.ops) ApplyOp(record, op, out);
  return Status::OK();
}

void IndexTablePattern::ApplyOp(const ChangeRecord& record, const ChangeOp& op,
                                std::vector<TableOp>* out) const {
  const uint64_t version = op.version != 0 ? op.version : record.lsn;
  const std::string& pk = record.partition_key;
  for (const auto& property : config_.properties) {
    // The entry as it should be now (none after a Delete, or when it cannot
    // be written), and the keys of the one the previous state had. An entry
    // too large to write now may have been written at an earlier version,
    // so its old keys are still deleted.
    std::optional<Entity> now;
    if (op.after) now = MakeIndexEntry(config_, property, pk, op.row_key, *op.after, version);
    std::optional<Entity> old;
    if (op.before) old = EntryKeys(config_, property, pk, op.row_key, *op.before);
    if (old && !(now && now->partition_key == old->partition_key)) {
      TableOp del;
      del.kind = TableOp::Kind::kFencedDelete;
      del.table = config_.target;
      del.entity.partition_key = std::move(old->partition_key);
      del.entity.row_key = std::move(old->row_key);
      del.version = version;
      out->push_back(std::move(del));
    }
    if (now) {
      TableOp up;
      up.kind = TableOp::Kind::kFencedUpsert;
      up.table = config_.target;
      up.entity = std::move(*now);
      up.version = version;
      out->push_back(std::move(up));
    }
  }
}

}  // namespace sidetable::patterns
