// Reading a key file: the one place that opens, checks and reads the files
// that hold keys (token signing keys, CURVE key pairs), so every key file
// gets the same checks.
//
// The mode is read from the open descriptor (fstat), so the file checked is
// the file read: no window to swap it between a stat and an open. Buffers
// that held key bytes are wiped (sodium_memzero) before they are freed.
//
// Thread safety: a stateless function.
#pragma once

#include <cstddef>
#include <string>

#include "engine/status.h"

namespace sidetable::keyfile {

// The whole of `path`: a regular file of at most `max_bytes`; with
// `owner_only`, one that neither group nor others may read or write. Every
// failure is InvalidInput naming the file ("cannot open key file P", "key
// file P is not a regular file", "... chmod 600 P", "... larger than N bytes").
Result<std::string> Read(const std::string& path, bool owner_only, size_t max_bytes);

// Overwrites `bytes` with zeros (sodium_memzero: not optimised away), for a
// caller's copy of what Read returned once it is decoded.
void Wipe(std::string* bytes);

}  // namespace sidetable::keyfile
