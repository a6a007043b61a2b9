// ResolveSession: what a Get or Query carrying session tokens (`after`)
// must wait for before it may be answered (docs/consistency.md).
//
// For each token whose source table is registered as a source of the read's
// table (AdvanceWatermarks), the change record `lsn` is read (one point read
// of the change log) to find the Kafka partition its key travels on; the
// read may be answered once the watermark of (table, source, that
// partition) is at least `lsn`. A trimmed record needs every partition of
// the pair past it. Tokens of unregistered sources have nothing to wait
// for and are skipped.
//
// Thread safety: a pure function over thread-safe objects.
#pragma once

#include <vector>

#include "engine/engine.h"
#include "protocol/wire.h"
#include "sidecar/watermarks.h"

namespace sidetable::sidecar {

// InvalidInput for a token above the engine's last LSN or one whose record
// belongs to another table; otherwise *waiting receives the requirements
// not covered yet (empty: answer now).
Status ResolveSession(const Engine& engine, const Watermarks& watermarks, const wire::Request& read,
                      std::vector<Requirement>* waiting);

}  // namespace sidetable::sidecar
