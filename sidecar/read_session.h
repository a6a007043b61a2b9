// ResolveSession: what a Get or Query carrying session tokens (`after`)
// must wait for before it may be answered (docs/consistency.md).
//
// A token (source, L) of a source registered for the read's table
// (AdvanceWatermarks) means every change of the source up to L: on each
// Kafka partition q of the pair, the table's watermark must reach the
// newest record of the source at most L that travels on q, known from
// SourceRoutes (source_routes.h), counting only records after the pair's
// registration (Watermarks::Registered: earlier changes are not promised,
// and a partition idle since then never waits). For a token older than
// what the routes know whole (complete_from) or than the registration,
// only the token's own record is waited for: its partition, or every
// partition when it was trimmed (before session 46 this was the rule for
// every token). The change record L is read once
// (one point read) to check that it is of the token's table. Tokens of
// unregistered sources have nothing to wait for and are skipped.
//
// Thread safety: a pure function over thread-safe objects.
#pragma once

#include <vector>

#include "engine/engine.h"
#include "protocol/wire.h"
#include "sidecar/source_routes.h"
#include "sidecar/watermarks.h"

namespace sidetable::sidecar {

// InvalidInput for a token above the engine's last LSN or one whose record
// belongs to another table; otherwise *waiting receives the requirements
// not covered yet (empty: answer now).
// `routes` may be null (only the token's own record is waited for).
Status ResolveSession(const Engine& engine, const Watermarks& watermarks, SourceRoutes* routes,
                      const wire::Request& read, std::vector<Requirement>* waiting);

}  // namespace sidetable::sidecar
