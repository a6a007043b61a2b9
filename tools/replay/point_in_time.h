// PointInTime: one table (or a key range of it) as it was at a cut, rebuilt
// from its change records alone.
//
// Every entity operation in the log carries the entity's full after image,
// so the state at a cut is, per key, the image of the last operation at or
// before the cut (absent after a delete). Table events bound the history: a
// TableCreated starts the table's state afresh (a re-created table starts
// empty), a TableDeleted ends it. The rebuild therefore needs the history
// from the table's creation on; when the replay starts later (a trimmed
// change log, Kafka retention) it says so instead of guessing.
//
// The cut is a prefix of the commit order: "at LSN n" is the state after
// commit n; "at time T" the state after the last commit whose commit time is
// <= T (records are read in LSN order; the first record past T ends the
// prefix, so a backwards clock step cannot mix two histories).
//
// Memory: the rebuilt state (the key range's entities), not the history.
//
// Thread safety: a value; use from one thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/change_record.h"
#include "engine/status.h"
#include "engine/utf8.h"
#include "tools/replay/filter.h"

namespace sidetable::replay {

struct Cut {
  uint64_t lsn = 0;                 // 0: no LSN bound
  std::optional<int64_t> time;      // DateTime ticks, inclusive
};

// (PartitionKey, RowKey) in the engine's order (ordinal UTF-16).
struct KeyLess {
  bool operator()(const std::pair<std::string, std::string>& a,
                  const std::pair<std::string, std::string>& b) const {
    int c = CompareOrdinal(a.first, b.first);
    return c != 0 ? c < 0 : CompareOrdinal(a.second, b.second) < 0;
  }
};
using EntityMap = std::map<std::pair<std::string, std::string>, Entity, KeyLess>;

class PointInTime {
 public:
  // `range` supplies the key range (pk, rk_from, rk_to); its other fields are
  // ignored.
  PointInTime(std::string table, const ReplayFilter& range, Cut cut);

  // Feed every record in LSN order (any table: others are skipped). Once a
  // record lies past the cut it is not applied and past_cut() turns true:
  // the caller may stop reading.
  void Apply(const ChangeRecord& r);
  // The same, taking the images out of `r` instead of copying them.
  void Apply(ChangeRecord&& r);
  // Where the source's history is whole from (RecordSource::whole_from_lsn()
  // of the first run; kept in the checkpoint): State() refuses a table
  // created before it, whose later changes may be among those lost.
  void SetWholeFrom(uint64_t lsn) { whole_from_ = lsn; }
  bool past_cut() const { return past_cut_; }
  uint64_t last_applied_lsn() const { return last_applied_; }

  // The state at the cut. TableNotFound: the table did not exist at the cut
  // (its deletion was read), or nothing of it was read at all. ResourceNotFound:
  // changes of the table were read but not its creation (the history read
  // starts too late), or its creation is older than the source's whole
  // history (SetWholeFrom), or a record of the table carries an epoch (a
  // scale-out service's, which this cannot order); the messages name the
  // LSNs involved.
  Result<const EntityMap*> State() const;

  // Checkpoint form: the builder's fields as JSON and the state as JSON lines.
  std::string SaveMeta() const;
  std::string SaveState() const;
  Status Load(std::string_view meta, std::string_view state);

 private:
  bool InRange(const std::string& pk, const std::string& rk) const;
  // The record's effect on everything but the entity rows; true when its
  // operations are to be applied.
  bool Accept(const ChangeRecord& r);

  std::string table_;  // as the caller named it (names compare case-insensitively)
  ReplayFilter range_;
  Cut cut_;
  bool past_cut_ = false;
  uint64_t last_applied_ = 0;
  uint64_t first_seen_ = 0;  // LSN of the first record read
  // Whether the table's existence at the current point is known: a
  // TableCreated or TableDeleted of it has been read.
  bool known_ = false;
  bool exists_ = false;
  uint32_t table_id_ = 0;
  uint64_t event_lsn_ = 0;   // LSN of that TableCreated/TableDeleted
  // First entity record of the table read while !known_: its history
  // started before the replay did.
  uint64_t orphan_lsn_ = 0;
  uint64_t whole_from_ = 0;
  // LSN of the first record of the table with an epoch (a scale-out
  // service's): State() refuses it.
  uint64_t stamped_lsn_ = 0;
  EntityMap state_;
};

}  // namespace sidetable::replay
