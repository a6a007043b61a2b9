// MoveMany: the archive pattern's moves (TableOp::kMove) of many entities in
// a few round trips instead of four per entity. For each entity: read the
// source (pipelined, unless the caller already holds it, as an archive rule
// does from its query page); skip it when absent, or when its version is
// above the op's (rewritten after the move was decided, as OpApplier::Move);
// copy it into the target with a fenced upsert (GroupedWrites: one EGT per
// target partition); then delete the sources If-Match the ETag copied, one
// EGT per source partition. A source that changed after its copy fails its
// EGT's If-Match: that entity is moved again alone through OpApplier::Move
// (which copies the new state), the rest of the EGT is sent again.
//
// Failures are per entity: an entity whose copy cannot fit the limits
// (move_copy.h: refused before any write) or whose copy the sidecar refuses
// stays in the source, and every other entity, of its event too, is still
// copied and deleted. Its event's slot in `failures` gets the first failure,
// naming the entity (a transient one replaces a permanent one, so the event
// is retried whole). A caller that wants each entity's own outcome gives
// each item its own `event` (the archive rule does).
//
// The isolation caveat of docs/patterns.md holds as before: between copy and
// delete an entity is in both tables.
//
// Thread safety: not thread-safe; one per thread (like the store).
#pragma once

#include <optional>
#include <vector>

#include "apply/grouped_writes.h"
#include "apply/op_applier.h"
#include "apply/table_store.h"
#include "patterns/pattern.h"

namespace sidetable::apply {

struct MoveItem {
  const patterns::TableOp* op;    // kMove
  std::optional<Entity> source;   // the source as read, if the caller has it
  size_t event = 0;               // for failures
};

// `failures` as GroupedWrites::Apply; `moved` counts entities moved.
void MoveMany(TableStore* store, OpApplier* applier, GroupedWrites* writes, const std::vector<MoveItem>& items,
              std::vector<EventFailure>* failures, ApplyObserver* observer, uint64_t* moved);

}  // namespace sidetable::apply
