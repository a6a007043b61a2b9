#include "patterns/archive/archive.h"

#include "engine/etag.h"
#include "engine/query/filter.h"
#include "patterns/common.h"

namespace sidetable::patterns {

namespace {

// A rule's filter is sent to the sidecar as "(<filter>) and Timestamp lt
// datetime'...'" at every evaluation. A filter that does not parse was
// accepted before session 39: the worker started, said ok, and the rule
// logged a warning each interval and never moved anything. Both the filter
// alone (so that a stray ')' cannot escape the parentheses) and the query
// as the rule sends it must parse.
Status CheckRuleFilter(const std::optional<std::string>& given) {
  if (!given) return Status::OK();
  const std::string& filter = *given;
  // Set but blank (a template's empty variable, say) turned the rule on with
  // no condition: without min_age_seconds it moved every entity of the
  // source table (session 39). Leaving the setting out says "no filter".
  if (filter.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Status(Code::kInvalidInput,
                  "is empty: leave it out for no filter (a rule then needs min_age_seconds)");
  }
  auto alone = query::ParseFilter(filter);
  if (!alone.ok()) return Status(Code::kInvalidInput, "is not valid: " + alone.status().message());
  auto sent =
      query::ParseFilter("(" + filter + ") and Timestamp lt datetime'2000-01-01T00:00:00Z'");
  if (!sent.ok()) {
    return Status(Code::kInvalidInput, "is not valid with the rule's Timestamp condition added: " +
                                           sent.status().message());
  }
  return Status::OK();
}

}  // namespace

Result<ArchiveConfig> ArchiveConfig::FromSettings(const PatternConfig& config) {
  SettingsReader r(config);
  ST_RETURN_IF_ERROR(
      r.CheckKnown({"source", "target", "filter", "min_age_seconds", "interval_seconds"}));
  ArchiveConfig out;
  auto source = r.RequiredTable("source");
  if (!source.ok()) return source.status();
  out.source_ = std::move(*source);
  auto target = r.RequiredTable("target");
  if (!target.ok()) return target.status();
  out.target_ = std::move(*target);
  if (TableNameEquals(out.source_, out.target_))
    return r.Error("target", "must differ from source");

  auto filter = r.Optional("filter");
  if (!filter.ok()) return filter.status();
  out.filter_ = std::move(*filter);
  if (Status parsed = CheckRuleFilter(out.filter_); !parsed.ok()) {
    return r.Error("filter", parsed.message());
  }
  constexpr int64_t kTenYears = 10LL * 366 * 24 * 3600;
  auto min_age = r.OptionalInt("min_age_seconds", 0, kTenYears);
  if (!min_age.ok()) return min_age.status();
  out.min_age_seconds_ = *min_age;
  auto interval = r.OptionalInt("interval_seconds", 1, 7 * 24 * 3600);
  if (!interval.ok()) return interval.status();
  if (interval->has_value()) {
    if (!out.has_rule()) {
      return r.Error("interval_seconds", "needs a rule: set filter or min_age_seconds");
    }
    out.interval_seconds_ = **interval;
  }
  return out;
}

TableOp MakeArchiveMove(const ArchiveConfig& config, const std::string& target,
                        const std::string& pk, const std::string& rk, uint64_t version) {
  TableOp op;
  op.kind = TableOp::Kind::kMove;
  op.table = target.empty() ? config.target() : target;
  op.source_table = config.source();
  op.entity.partition_key = pk;
  op.entity.row_key = rk;
  op.version = version;
  return op;
}

void ArchiveMoves(const ArchiveConfig& config, const std::vector<Entity>& found,
                  std::vector<TableOp>* out) {
  for (const auto& e : found) {
    // An entity without a readable ETag cannot be fenced: leave it for the
    // next evaluation rather than move an unknown state.
    auto version = VersionFromETag(e.etag);
    if (!version) continue;
    out->push_back(MakeArchiveMove(config, "", e.partition_key, e.row_key, *version));
  }
}

Result<std::unique_ptr<Pattern>> ArchivePattern::Create(const PatternConfig& config) {
  auto parsed = ArchiveConfig::FromSettings(config);
  if (!parsed.ok()) return parsed.status();
  return std::unique_ptr<Pattern>(new ArchivePattern(std::move(*parsed)));
}

bool ArchivePattern::Wants(const ChangeRecord& record) const {
  return record.kind == ChangeKind::kArchiveRequested &&
         TableNameEquals(record.table, config_.source());
}

Status ArchivePattern::Apply(const ChangeRecord& record, std::vector<TableOp>* out) const {
  if (!Wants(record)) return Status::OK();
  for (const auto& op : record.ops) {
    out->push_back(MakeArchiveMove(config_, record.target_table, record.partition_key, op.row_key,
                                   record.lsn));
  }
  return Status::OK();
}

}  // namespace sidetable::patterns
