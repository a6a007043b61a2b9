// ReplayFilter: which changes a replay, audit or rebuild looks at.
//
// A record passes when every set criterion holds: its table (names compare
// case-insensitively, as tables do), PartitionKey, caller identity, commit
// time window [since, until) and LSN range [from_lsn, to_lsn]. Within a
// record, an operation passes when its RowKey is in [rk_from, rk_to)
// (ordinal UTF-16 order, as the engine sorts keys).
//
// Table events (TableCreated, TableDeleted) have no keys: they pass the key
// criteria only when neither a PartitionKey nor a RowKey bound is set, so an
// audit of a whole table shows its creation and deletion, and an audit of a
// key range shows only changes of entities in it.
//
// Thread safety: a value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "engine/change_record.h"

namespace sidetable::replay {

struct ReplayFilter {
  std::string table;                 // empty: every table
  std::optional<std::string> pk;     // exact PartitionKey
  std::optional<std::string> rk_from;  // inclusive
  std::optional<std::string> rk_to;    // exclusive
  std::optional<std::string> caller;   // exact ("" matches writes without one)
  std::optional<int64_t> since;      // DateTime ticks, inclusive
  std::optional<int64_t> until;      // DateTime ticks, exclusive
  uint64_t from_lsn = 0;             // 0: no lower bound
  uint64_t to_lsn = 0;               // 0: no upper bound

  bool MatchesRecord(const ChangeRecord& r) const;
  bool MatchesRowKey(std::string_view rk) const;
  // MatchesRecord, and for entity records at least one operation's RowKey.
  bool Matches(const ChangeRecord& r) const;
  // A canonical text of the criteria (checkpoints refuse to resume a run
  // whose filter differs).
  std::string Fingerprint() const;
};

// "2026-11-30T10:00:00Z" (ISO 8601, see edm.h) or a Unix time with a unit
// suffix ("1796032800s", "1796032800000ms": 2026-11-30T10:00:00Z) to DateTime ticks.
std::optional<int64_t> ParseTimeArgument(std::string_view text);

}  // namespace sidetable::replay
