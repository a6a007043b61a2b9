// Backups: the sidecar's half of the Backup operation (docs/operations.md,
// "Backup and restore"). A backup is a new directory in storage.backup_dir,
// named by its UTC time (backup-20261207T031502.123Z), that holds a
// checkpoint of the whole data directory (Engine::Checkpoint) and a
// manifest, sidetable-backup.json, saying what it holds: the sidecar, the
// change log's LSNs, the Kafka topic those went to. The directory is a data
// directory: a sidecar started on it (or on a copy) serves what the backup
// held. After each backup the oldest beyond storage.backup_keep are removed.
//
// A backup directory belongs to one sidecar: PrepareBackupDir locks it for
// the sidecar's life, and retention counts only the backups whose manifest
// names this sidecar's data directory as their source. A data directory a
// sidecar opens is no longer a backup (AdoptRestoredBackup).
//
// Thread safety: TakeBackup must not run twice at once on one directory
// (the server runs every Backup on one thread of its own).
#pragma once

#include <optional>
#include <string>
#include <utility>
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
// A backup's manifest once a sidecar has opened the directory as its data
// directory: kept for the record, no longer counted as a backup.
inline constexpr std::string_view kRestoredManifest = "sidetable-restored-from.json";
// Locked (flock) in storage.backup_dir by the sidecar that uses it.
inline constexpr std::string_view kBackupDirLockFile = ".sidetable-backups.lock";

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

// The lock on a backup directory, released when destroyed (or when the
// process ends, however it ends).
class BackupDirLock {
 public:
  BackupDirLock() = default;
  explicit BackupDirLock(int fd) : fd_(fd) {}
  BackupDirLock(BackupDirLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  BackupDirLock& operator=(BackupDirLock&& other) noexcept;
  BackupDirLock(const BackupDirLock&) = delete;
  BackupDirLock& operator=(const BackupDirLock&) = delete;
  ~BackupDirLock();

 private:
  int fd_ = -1;
};

// At start-up, with backups on: creates the directory when missing, checks
// that this process may write there, locks it (kUnavailable naming
// storage.backup_dir when another sidecar holds it: its retention would
// remove this one's backups and its start-up this one's backup in
// progress), removes what a backup interrupted by a crash left
// (backup-*.partial, backup-*.partial.tmp), and logs whether backups will
// be hard links (the data directory's filesystem) or copies. Without
// backups, an empty lock.
Result<BackupDirLock> PrepareBackupDir(const BackupSettings& settings);

// After the data directory opened: if it holds a backup's manifest (the
// restore pointed storage.path at a backup), renames the manifest to
// kRestoredManifest. The directory is a live database now; left a backup,
// the retention of any sidecar using its backup directory removed it under
// the sidecar running there (found by session 41). Logged; a failure is a
// warning, the retention also skips this sidecar's own data directory.
void AdoptRestoredBackup(const std::string& data_dir);

// The backups in `dir` made from the data directory `source` (directories
// with a name this code gives, backup-<time>, holding a manifest whose
// source is `source`), oldest first.
std::vector<std::string> ListBackups(const std::string& dir, const std::string& source);

// What the newest of this data directory's backups in `dir` says of itself
// (its manifest): when it was made (Unix seconds), the newest change it
// holds and its bytes. Read at start so that the backup gauges do not say
// "never" after every restart (found from outside, session 41). nullopt
// when there is none, or its manifest does not read.
struct LastBackup {
  int64_t unix_seconds = 0;
  uint64_t last_lsn = 0;
  uint64_t bytes = 0;
};
std::optional<LastBackup> NewestBackup(const std::string& dir, const std::string& source);

// Makes one backup and applies the retention. Errors: InvalidInput when
// backups are off, the engine's (Engine::Checkpoint) otherwise, with
// nothing left in the directory.
Result<wire::BackupReply> TakeBackup(Engine* engine, const BackupSettings& settings);

}  // namespace sidetable::sidecar
