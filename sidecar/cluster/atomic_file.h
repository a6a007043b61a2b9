// WriteFileAtomically: the small files a member keeps beside its data
// (table_incarnations.h, known_offsets.h) are rewritten whole so that a
// crash leaves either the old file or the new one.
//
// Thread safety: a stateless function; callers serialise writes of a path.
#pragma once

#include <string>

#include "engine/status.h"

namespace sidetable::cluster {

// A temp file (`path`.tmp), fsynced, renamed over `path`, and the directory
// fsynced. kInternal naming the file and the errno on any failure.
Status WriteFileAtomically(const std::string& path, const std::string& text);

}  // namespace sidetable::cluster
