// Pieces the replay commands share: the source and filter from the
// arguments, the stop signals, the resumable output file, checkpoints.
#pragma once

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "tools/cli/replay_commands.h"
#include "tools/replay/checkpoint.h"
#include "tools/replay/filter.h"
#include "tools/replay/progress.h"
#include "tools/replay/runner.h"
#include "tools/replay/source.h"

namespace sidetable::cli {

// SIGINT and SIGTERM set the returned flag (the run stops at the next batch
// and saves its checkpoint); a second signal ends the process at once.
const std::atomic<bool>* InstallStopSignals();

// The filter criteria of the arguments; InvalidInput for a bad time.
Result<replay::ReplayFilter> BuildFilter(const ReplayArgs& a);
replay::ProgressMode ParseProgressMode(const std::string& text);

// The source the arguments name, positioned at `resume` when given.
Result<std::unique_ptr<replay::RecordSource>> OpenSource(Session& s, const ReplayArgs& a,
                                                         const replay::Position* resume);
// Identifies the source and its range for checkpoints.
std::string SourceFingerprint(const ReplayArgs& a);

// A failure of a file on this machine (--output, --checkpoint): InvalidInput,
// which ReplayFail reports as exit 2 with the message alone, never as a
// server error code such as InternalError (500).
Status LocalFileError(const std::string& message);

// Checks that a checkpoint can be written at `path` (nothing to check when
// empty) by creating its temporary file, as SaveCheckpoint will. The first
// save comes after the first batch or only when the run stops, so a bad path
// would otherwise fail after the work, or never when the run ends first.
Status CheckCheckpointPath(const std::string& path);

// The checkpoint of `command` at a.checkpoint (nullopt: none, or no
// --checkpoint). InvalidInput when it belongs to another command or other
// arguments, or cannot be read.
Result<std::optional<replay::Checkpoint>> LoadMatchingCheckpoint(const ReplayArgs& a, const std::string& command,
                                                                 const std::string& fingerprint);
// replay::SaveCheckpoint and RemoveCheckpoint, failures as LocalFileError.
Status SaveCheckpointFile(const std::string& path, const replay::Checkpoint& c);
Status RemoveCheckpointFile(const std::string& path);

// stdout ("-") or a file. A resumed run truncates the file to the length its
// checkpoint recorded, dropping rows written after that checkpoint.
class Output {
 public:
  ~Output();
  Status Open(const std::string& path, std::optional<uint64_t> resume_at);
  Status Write(std::string_view data);
  // Flushes (and for files, fsyncs); returns the bytes the output holds.
  Result<uint64_t> Sync();

 private:
  std::FILE* f_ = nullptr;
  bool is_stdout_ = false;
  bool is_regular_ = false;  // only regular files are truncated and fsynced
  std::string path_;
  uint64_t bytes_ = 0;
};

// The run control of the arguments: --stop-after, the stop signals
// (installed here) and `progress`.
replay::RunControl MakeRunControl(const ReplayArgs& a, replay::Progress* progress);

// Exit code and message for a run that stopped early.
int ReportStopped(const ReplayArgs& a, uint64_t events);
// For a finished run: `exit` when every message decoded, else a note and
// kExitUndecodable (the messages were named on stderr as they were met).
int ReportUndecodable(uint64_t undecodable, int exit);
// Exit code for a failed replay step (usage for InvalidInput, else the server/IO error).
int ReplayFail(Session& s, const Status& st);

}  // namespace sidetable::cli
