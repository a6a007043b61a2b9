// Backups: the sidecar's half of the Backup operation (docs/operations.md,
// "Backup and restore"). A backup is a new directory in storage.backup_dir,
// named by its UTC time (backup-20261207T031502.123Z), that holds a
// checkpoint of the whole data directory (Engine::Checkpoint) and a
// manifest, sidetable-backup.json, saying what it holds: the sidecar, the
// change log's LSNs, the Kafka topic those went to. The directory is a data
// directory: a sidecar started on it (or on a copy) serves what the backup
// held. After each backup the oldest beyond storage.backup_keep are removed.
//
// Thread safety: TakeBackup must not run twice at once on one directory
// (the server runs every Backup on one thread of its own).
#pragma once

#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/status.h"
#include "protocol/wire.h"

namespace sidetable::sidecar {

inline constexpr std::string_view kBackupPrefix = "backup-";
inline constexpr std::string_view kBackupManifest = "sidetable-backup.json";
// A backup being made: backup-<time>.partial, renamed to backup-<time> once
// it is checked and has its manifest.
inline constexpr std::string_view kPartialSuffix = ".partial";

struct BackupSettings {
  std::string dir;       // storage.backup_dir ("" = off)
  uint64_t keep = 0;     // storage.backup_keep (0 = all)
  std::string data_dir;  // storage.path
  std::string sidecar_id;
  std::string kafka_topic;  // "" without a change stream
};

// Configuration check (no side effects): "" or a directory that is neither
// storage.path nor inside it (a backup inside the database it copies would
// be copied by the next backup, and by every copy of storage.path).
Status CheckBackupDir(const std::string& backup_dir, const std::string& data_dir);

// At start-up, with backups on: creates the directory when missing, checks
// that this process may write there, removes what a backup interrupted by
// a crash left (backup-*.partial, backup-*.partial.tmp), and logs whether backups will be hard
// links (the data directory's filesystem) or copies.
Status PrepareBackupDir(const BackupSettings& settings);

// The backups in `dir` (directories named backup-... with a manifest),
// oldest first.
std::vector<std::string> ListBackups(const std::string& dir);

// Makes one backup and applies the retention. Errors: InvalidInput when
// backups are off, the engine's (Engine::Checkpoint) otherwise, with
// nothing left in the directory.
Result<wire::BackupReply> TakeBackup(Engine* engine, const BackupSettings& settings);

}  // namespace sidetable::sidecar
