#include "sidecar/read_session.h"

#include "common/kafka/partitioner.h"
#include "engine/table_name.h"
#include "sidecar/changestream/publisher.h"

namespace sidetable::sidecar {

Status ResolveSession(const Engine& engine, const Watermarks& watermarks, const wire::Request& read,
                      std::vector<Requirement>* waiting) {
  waiting->clear();
  const uint64_t last = engine.Stats().last_lsn;
  for (size_t i = 0; i < read.after.size(); i++) {
    if (read.after[i].lsn > last) {
      return Status(Code::kInvalidInput, "'after'[" + std::to_string(i) + "].lsn " +
                                             std::to_string(read.after[i].lsn) +
                                             " is above the change log's last LSN " + std::to_string(last));
    }
  }
  // Most reads are of tables nothing derives into: one lookup, no log read.
  if (!watermarks.IsDerived(read.table)) return Status::OK();
  const std::string derived_key = TableKey(read.table).str();
  for (size_t i = 0; i < read.after.size(); i++) {
    const wire::AfterToken& t = read.after[i];
    if (t.lsn == 0) continue;  // nothing written yet
    const std::optional<int32_t> partitions = watermarks.Partitions(read.table, t.source);
    if (!partitions) continue;  // not a source of this table: nothing to wait for
    Requirement req{derived_key, TableKey(t.source).str(), -1, *partitions, t.lsn};
    // max_bytes 1: exactly the one record (at least one is always returned).
    auto rec = engine.ReadChanges(t.lsn, 1, 1);
    if (!rec.ok()) return rec.status();
    if (!rec->records.empty() && rec->records[0].lsn == t.lsn) {
      const ChangeRecord& r = rec->records[0];
      if (!TableNameEquals(r.table, t.source)) {
        // Not naming the change's table: the reader may not be allowed to
        // know it (the change log needs c on every table).
        return Status(Code::kInvalidInput, "'after'[" + std::to_string(i) + "]: change " +
                                               std::to_string(t.lsn) + " is not of table '" +
                                               t.source + "'");
      }
      req.partition = kafka::KafkaPartitionFor(changestream::KeyFor(r), *partitions);
    }  // else trimmed: every partition must be past it (partition -1)
    if (!watermarks.Covers(req)) waiting->push_back(std::move(req));
  }
  return Status::OK();
}

}  // namespace sidetable::sidecar
