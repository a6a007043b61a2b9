// Checkpoints: where an interrupted replay, audit or rebuild resumes.
//
// A checkpoint file is one JSON header line, then (rebuilds only) the
// rebuilt state so far as JSON lines. It is replaced atomically (write a
// temporary file, fsync, rename), so a crash leaves the previous or the new
// checkpoint, never a torn one. The header holds:
//   command, fingerprint  what run made it; a resume with other arguments
//                         (source, filters, cut, target) is refused
//   position              the source position (source.h)
//   events                records read so far
//   outputBytes           how much of the output file belongs to the run so
//                         far: a resume truncates the file there first, so
//                         rows written after the checkpoint are not doubled
//   summary / rebuild     the audit summary or the rebuild's builder fields
//
// Thread safety: stateless functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "engine/status.h"
#include "tools/replay/source.h"

namespace sidetable::replay {

struct Checkpoint {
  std::string command;
  std::string fingerprint;
  Position position;
  uint64_t events = 0;
  uint64_t output_bytes = 0;
  std::string summary;       // JSON object text, or empty
  std::string rebuild_meta;  // JSON object text, or empty
  std::string state;         // JSON lines (rebuilds), after the header line
};

Status SaveCheckpoint(const std::string& path, const Checkpoint& c);
// nullopt when there is no file at `path`. InvalidInput for a file that is
// not a checkpoint.
Result<std::optional<Checkpoint>> LoadCheckpoint(const std::string& path);
// Removes the file (a finished run leaves none); absent is fine.
Status RemoveCheckpoint(const std::string& path);

}  // namespace sidetable::replay
