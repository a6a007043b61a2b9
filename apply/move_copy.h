// What an archive move's copy must fit. The copy of a source entity carries
// one property more than the source, SourceVersion (the fence, Edm.Int64),
// so an entity at the engine's limits can be stored in the source and never
// in the archive: 252 user properties (the copy has 253), or within 42
// bytes of the 1 MiB entity size (the copy is larger). Such an entity is
// refused before any write, alone, with a message naming it; the engine
// would refuse its copy anyway, and the move's delete must not follow.
//
// Thread safety: pure functions.
#pragma once

#include <string>

#include "engine/edm.h"
#include "engine/status.h"
#include "patterns/pattern.h"

namespace sidetable::apply {

// "Orders(pk, rk) -> OrdersArchive": the entity a kMove is about.
std::string MoveName(const patterns::TableOp& move);

// `s` with MoveName(move) in front of its message (no op index: it named an
// operation of an EGT the caller built).
Status NameMove(const patterns::TableOp& move, const Status& s);

// OK when the copy of `source` into the archive fits the entity limits;
// TooManyProperties or EntityTooLarge naming the entity otherwise.
Status CheckMoveCopy(const patterns::TableOp& move, const Entity& source);

}  // namespace sidetable::apply
