#include "sidecar/read_session.h"

#include <algorithm>

#include "common/kafka/partitioner.h"
#include "engine/table_name.h"
#include "sidecar/changestream/publisher.h"

namespace sidetable::sidecar {

Status ResolveSession(const Engine& engine, const Watermarks& watermarks, SourceRoutes* routes,
                      const wire::Request& read, std::vector<Requirement>* waiting) {
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
    const std::optional<Watermarks::Registration> pair =
        watermarks.Registered(read.table, t.source);
    if (!pair) continue;  // not a source of this table: nothing to wait for
    const int32_t partitions = pair->partitions;
    Requirement req{derived_key, TableKey(t.source).str(), -1, partitions, t.lsn};
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
      req.partition = kafka::KafkaPartitionFor(changestream::KeyFor(r), partitions);
    }  // else trimmed: every partition must be past it (partition -1)
    SourceRoutes::Routes known;
    if (routes != nullptr && t.lsn > pair->since && routes->Newest(t.source, partitions, &known) &&
        t.lsn >= known.complete_from) {
      // Every change of the source up to the token, since the pair was
      // registered: on each partition, the newest such record at most the
      // token (or the token itself when a later record is the newest: a
      // partition is applied in LSN order). Records before the registration
      // are not promised (a new derived table's worker may never see them:
      // Kafka no longer holds them), so an idle partition never waits.
      for (int32_t q = 0; q < partitions; q++) {
        const uint64_t newest = known.newest[static_cast<size_t>(q)];
        if (newest <= pair->since) continue;
        Requirement per{derived_key, req.source_key, q, partitions, std::min(t.lsn, newest)};
        if (!watermarks.Covers(per)) waiting->push_back(std::move(per));
      }
      continue;  // the token's own record is among them
    }
    // A token from before the registration, or older than what the routes
    // know whole: its own record only, as before session 46.
    if (!watermarks.Covers(req)) waiting->push_back(std::move(req));
  }
  return Status::OK();
}

}  // namespace sidetable::sidecar
