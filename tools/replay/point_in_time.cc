#include "tools/replay/point_in_time.h"

#include <simdjson.h>

#include "engine/table_name.h"
#include "events/entity_json.h"
#include "events/entity_json_dom.h"
#include "events/json_writer.h"
#include "patterns/common.h"
#include "tools/replay/source.h"

namespace sidetable::replay {

PointInTime::PointInTime(std::string table, const ReplayFilter& range, Cut cut)
    : table_(std::move(table)), cut_(cut) {
  range_.pk = range.pk;
  range_.rk_from = range.rk_from;
  range_.rk_to = range.rk_to;
}

bool PointInTime::InRange(const std::string& pk, const std::string& rk) const {
  if (range_.pk && *range_.pk != pk) return false;
  return range_.MatchesRowKey(rk);
}

bool PointInTime::Accept(const ChangeRecord& r) {
  // A shard claim is ownership, not data: no LSN, no table, no rows. The
  // sources consume claims (events/epoch_filter.h); one fed here anyway
  // must not move the cut or the LSNs this builder reports.
  if (r.kind == ChangeKind::kShardClaimed) return false;
  if (past_cut_) return false;
  if ((cut_.lsn != 0 && r.lsn > cut_.lsn) || (cut_.time && r.commit_time > *cut_.time)) {
    past_cut_ = true;
    return false;
  }
  if (first_seen_ == 0) first_seen_ = r.lsn;
  last_applied_ = r.lsn;
  if (!TableNameEquals(r.table, table_)) return false;
  if (r.epoch != 0 && stamped_lsn_ == 0) stamped_lsn_ = r.lsn;
  switch (r.kind) {
    case ChangeKind::kTableCreated:
    case ChangeKind::kTableDeleted:
      known_ = true;
      exists_ = r.kind == ChangeKind::kTableCreated;
      table_id_ = r.table_id;
      event_lsn_ = r.lsn;
      orphan_lsn_ = 0;
      state_.clear();
      return false;
    case ChangeKind::kArchiveRequested:
      return false;  // writes no rows: the archive worker's own writes follow as records
    case ChangeKind::kShardClaimed:
      return false;  // refused above
    case ChangeKind::kEntities:
      break;
  }
  if (!known_) {
    if (orphan_lsn_ == 0) orphan_lsn_ = r.lsn;
  } else if (r.table_id != table_id_) {
    return false;  // a record of another incarnation (cannot happen in LSN order)
  }
  return true;
}

void PointInTime::Apply(const ChangeRecord& r) {
  if (!Accept(r)) return;
  for (const ChangeOp& op : r.ops) {
    if (!InRange(r.partition_key, op.row_key)) continue;
    auto key = std::make_pair(r.partition_key, op.row_key);
    if (op.after) state_[std::move(key)] = *op.after;
    else state_.erase(key);
  }
}

void PointInTime::Apply(ChangeRecord&& r) {
  if (!Accept(r)) return;
  for (ChangeOp& op : r.ops) {
    if (!InRange(r.partition_key, op.row_key)) continue;
    auto key = std::make_pair(r.partition_key, op.row_key);
    if (op.after) state_[std::move(key)] = std::move(*op.after);
    else state_.erase(key);
  }
}

Result<const EntityMap*> PointInTime::State() const {
  // A scale-out service's records (docs/scale-out.md, "Table events in a
  // cluster"): each owner numbers its own commits and each member has its
  // own local table ids, so neither the order read nor tableId says which
  // rows follow the creation. Since session 45 its table events are read
  // (before, the fencing rule skipped them and this was "creation not
  // read"); taken as they come, a creation sorted after rows of shards with
  // lower epochs would drop those rows silently.
  if (stamped_lsn_ != 0) {
    return Status(
        Code::kResourceNotFound,
        "table '" + table_ + "' is a scale-out service's (its record at LSN " +
            std::to_string(stamped_lsn_) +
            " carries an owner epoch): its members' LSNs and table ids do not order one history, "
            "so it cannot be rebuilt from its change records; nothing was rebuilt");
  }
  const std::string from = first_seen_ ? " (the history read starts at LSN " + std::to_string(first_seen_) + ")" : "";
  if (!known_) {
    if (orphan_lsn_ != 0) {
      return Status(Code::kResourceNotFound,
                    "the history is incomplete: table '" + table_ + "' has changes from LSN " +
                        std::to_string(orphan_lsn_) + " but its creation is not in the history read" + from +
                        "; replay from an older start (Kafka with longer retention, or a change log that "
                        "keeps more)");
    }
    return Status(Code::kTableNotFound, "no record of table '" + table_ +
                                            "' at or before the cut in the history read" + from +
                                            ": it did not exist then, or its history is gone");
  }
  if (!exists_) {
    return Status(Code::kTableNotFound, "table '" + table_ + "' did not exist at the cut (deleted at LSN " +
                                            std::to_string(event_lsn_) + ")");
  }
  // Every record after the creation must have been there to read. Before
  // session 42 a topic of one table whose creation sat on a partition that
  // kept it, while another partition had lost the table's later changes,
  // gave a state without them, exit 0.
  if (whole_from_ > event_lsn_ + 1) {
    const std::string where = whole_from_ == RecordSource::kHistoryLossUnknown
                                  ? "a partition of the source lost its older messages and holds "
                                    "no whole record, so which LSNs it lost is unknown"
                                  : "the source holds every record only from LSN " +
                                        std::to_string(whole_from_) +
                                        " on (retention removed the older messages of a partition)";
    return Status(
        Code::kResourceNotFound,
        "the history is incomplete: table '" + table_ + "' was created at LSN " +
            std::to_string(event_lsn_) + ", but " + where +
            "; rebuild from the sidecar's change log, or from Kafka with longer retention");
  }
  return &state_;
}

std::string PointInTime::SaveMeta() const {
  json::JsonWriter w;
  w.BeginObject();
  w.Key("pastCut").Bool(past_cut_);
  w.Key("lastApplied").UInt(last_applied_);
  w.Key("firstSeen").UInt(first_seen_);
  w.Key("known").Bool(known_);
  w.Key("exists").Bool(exists_);
  w.Key("tableId").UInt(table_id_);
  w.Key("eventLsn").UInt(event_lsn_);
  w.Key("orphanLsn").UInt(orphan_lsn_);
  w.Key("wholeFrom").UInt(whole_from_);
  w.Key("stampedLsn").UInt(stamped_lsn_);
  w.Key("entities").UInt(state_.size());
  w.EndObject();
  return w.Take();
}

std::string PointInTime::SaveState() const {
  std::string out;
  for (const auto& [key, e] : state_) {
    out += json::EntityToJson(e);
    out += '\n';
  }
  return out;
}

Status PointInTime::Load(std::string_view meta, std::string_view state) {
  auto bad = [](const std::string& what) { return Status(Code::kInvalidInput, "rebuild checkpoint: " + what); };
  simdjson::dom::parser parser;
  simdjson::padded_string padded(meta);
  simdjson::dom::element doc;
  if (parser.parse(padded).get(doc) != simdjson::SUCCESS) return bad("state header is not JSON");
  uint64_t entities = 0, table_id = 0;
  if (doc["pastCut"].get(past_cut_) || doc["lastApplied"].get(last_applied_) ||
      doc["firstSeen"].get(first_seen_) || doc["known"].get(known_) || doc["exists"].get(exists_) ||
      doc["tableId"].get(table_id) || doc["eventLsn"].get(event_lsn_) || doc["orphanLsn"].get(orphan_lsn_) ||
      doc["entities"].get(entities)) {
    return bad("state header lacks a field");
  }
  table_id_ = static_cast<uint32_t>(table_id);
  // Absent in checkpoints written before session 42: nothing known lost.
  if (doc["wholeFrom"].get(whole_from_) != simdjson::SUCCESS) whole_from_ = 0;
  // Absent in checkpoints written before session 45.
  if (doc["stampedLsn"].get(stamped_lsn_) != simdjson::SUCCESS) stamped_lsn_ = 0;
  state_.clear();
  simdjson::dom::parser line_parser;
  size_t pos = 0;
  while (pos < state.size()) {
    size_t nl = state.find('\n', pos);
    if (nl == std::string_view::npos) return bad("state file is cut short");
    simdjson::padded_string line(state.substr(pos, nl - pos));
    pos = nl + 1;
    simdjson::dom::element el;
    if (line_parser.parse(line).get(el) != simdjson::SUCCESS) return bad("state line is not JSON");
    Entity e;
    ST_RETURN_IF_ERROR(json::EntityFromJsonElement(el, &e, /*with_timestamp=*/true));
    auto key = std::make_pair(e.partition_key, e.row_key);
    // A repeated key is a corrupt file even when the header's count happens
    // to match the deduplicated map: refuse it rather than keep one image.
    if (!state_.emplace(key, std::move(e)).second) {
      return bad("state file repeats entity (" + key.first + ", " + key.second + ")");
    }
  }
  if (state_.size() != entities) return bad("state file holds " + std::to_string(state_.size()) +
                                            " entities, its header says " + std::to_string(entities));
  return Status::OK();
}

}  // namespace sidetable::replay
