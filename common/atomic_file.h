// Small files written whole, so that a crash leaves either the old file or
// the new one: a scale-out member's files beside its data
// (sidecar/cluster/table_incarnations.h, known_offsets.h), a backup's
// manifest (sidecar/backup.h) and a replay's checkpoint
// (tools/replay/checkpoint.h).
//
// Thread safety: stateless functions; callers serialise writes of a path.
#pragma once

#include <string>

#include "engine/status.h"

namespace sidetable::common {

// A temp file (`path`.tmp), fsynced, renamed over `path`, and the directory
// fsynced. On failure the temp file is removed and the status names the
// file and the errno: kInsufficientStorage for a full disk (ENOSPC, EDQUOT),
// kInternal otherwise.
Status WriteFileAtomically(const std::string& path, const std::string& text);

// fsync of the directory `dir`, so that a rename or a new entry in it
// survives a crash of the machine. kInternal naming it on failure.
Status SyncDirectory(const std::string& dir);

}  // namespace sidetable::common
