#include "tools/replay/filter.h"

#include <cctype>
#include <charconv>

#include "engine/table_name.h"
#include "engine/utf8.h"
#include "patterns/common.h"

namespace sidetable::replay {
namespace {

void AddField(std::string* out, const char* name, const std::optional<std::string>& v) {
  if (!v) return;
  *out += name;
  *out += '=';
  *out += std::to_string(v->size());  // length-prefixed: values may hold any character
  *out += ':';
  *out += *v;
  *out += ';';
}

}  // namespace

bool ReplayFilter::MatchesRecord(const ChangeRecord& r) const {
  if (!table.empty() && !TableNameEquals(table, r.table)) return false;
  if (from_lsn != 0 && r.lsn < from_lsn) return false;
  if (to_lsn != 0 && r.lsn > to_lsn) return false;
  if (since && r.commit_time < *since) return false;
  if (until && r.commit_time >= *until) return false;
  if (caller && *caller != r.caller) return false;
  const bool keyed = r.kind == ChangeKind::kEntities || r.kind == ChangeKind::kArchiveRequested;
  if (!keyed) return !pk && !rk_from && !rk_to;
  if (pk && *pk != r.partition_key) return false;
  return true;
}

bool ReplayFilter::MatchesRowKey(std::string_view rk) const {
  if (rk_from && CompareOrdinal(rk, *rk_from) < 0) return false;
  if (rk_to && CompareOrdinal(rk, *rk_to) >= 0) return false;
  return true;
}

bool ReplayFilter::Matches(const ChangeRecord& r) const {
  if (!MatchesRecord(r)) return false;
  if (r.kind != ChangeKind::kEntities && r.kind != ChangeKind::kArchiveRequested) return true;
  if (!rk_from && !rk_to) return true;
  for (const ChangeOp& op : r.ops) {
    if (MatchesRowKey(op.row_key)) return true;
  }
  return false;
}

std::string ReplayFilter::Fingerprint() const {
  std::string out;
  AddField(&out, "table", table.empty() ? std::nullopt : std::optional<std::string>(TableKey(table).str()));
  AddField(&out, "pk", pk);
  AddField(&out, "rkFrom", rk_from);
  AddField(&out, "rkTo", rk_to);
  AddField(&out, "caller", caller);
  if (since) out += "since=" + std::to_string(*since) + ';';
  if (until) out += "until=" + std::to_string(*until) + ';';
  if (from_lsn) out += "fromLsn=" + std::to_string(from_lsn) + ';';
  if (to_lsn) out += "toLsn=" + std::to_string(to_lsn) + ';';
  return out;
}

std::optional<int64_t> ParseTimeArgument(std::string_view text) {
  if (auto ticks = ParseDateTime(text)) return ticks;
  auto unit = [&](std::string_view suffix, int64_t ticks_per_unit) -> std::optional<int64_t> {
    if (text.size() <= suffix.size() || text.substr(text.size() - suffix.size()) != suffix) {
      return std::nullopt;
    }
    std::string_view digits = text.substr(0, text.size() - suffix.size());
    // Unsigned: a sign is rejected (as signed, from_chars read "-0s" as 0).
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
    if (ec != std::errc() || p != digits.data() + digits.size()) return std::nullopt;
    if (v > static_cast<uint64_t>((kMaxDateTimeTicks - kUnixEpochTicks) / ticks_per_unit)) {
      return std::nullopt;
    }
    return kUnixEpochTicks + static_cast<int64_t>(v) * ticks_per_unit;
  };
  if (auto t = unit("ms", kTicksPerSecond / 1000)) return t;
  return unit("s", kTicksPerSecond);
}

}  // namespace sidetable::replay
