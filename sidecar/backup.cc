#include "sidecar/backup.h"

#include <fcntl.h>
#include <simdjson.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "common/atomic_file.h"
#include "common/http_endpoint.h"
#include "engine/edm.h"

namespace sidetable::sidecar {
namespace {

namespace fs = std::filesystem;

// The absolute form of a configured path, symlinks of its existing part
// resolved, for comparing two of them.
fs::path Resolved(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? fs::absolute(path).lexically_normal() : p;
}

bool Inside(const fs::path& inner, const fs::path& outer) {
  auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
  return o == outer.end() || (std::next(o) == outer.end() && o->empty());
}

// "backup-20261207T031502.123Z": sorts by time as text; a second backup in
// the same millisecond (not possible on one thread, but a clock may step
// back) gets a suffix.
std::string NewName(const std::string& dir) {
  std::string t = FormatDateTime(NowTicks());  // 2026-12-07T03:15:02.1234567Z
  std::string compact;
  for (char c : t.substr(0, 23)) {
    if (c != '-' && c != ':') compact.push_back(c);
  }
  std::string name = std::string(kBackupPrefix) + compact + "Z";
  std::error_code ec;
  for (int n = 2; fs::exists(dir + "/" + name, ec) ||
                  fs::exists(dir + "/" + name + std::string(kPartialSuffix), ec);
       n++) {
    name = std::string(kBackupPrefix) + compact + "Z-" + std::to_string(n);
  }
  return name;
}

std::string Manifest(const BackupSettings& s, const std::string& name, const CheckpointInfo& info) {
  using common::JsonQuote;
  return "{\"name\":" + JsonQuote(name) + ",\"created\":" + JsonQuote(FormatDateTime(NowTicks())) +
         ",\"sidecar\":" + JsonQuote(s.sidecar_id) +
         ",\"source\":" + JsonQuote(Resolved(s.data_dir).string()) +
         ",\"kafka_topic\":" + JsonQuote(s.kafka_topic) +
         ",\"first_lsn\":" + std::to_string(info.first_lsn) +
         ",\"last_lsn\":" + std::to_string(info.last_lsn) +
         ",\"tables\":" + std::to_string(info.tables) + ",\"files\":" + std::to_string(info.files) +
         ",\"bytes\":" + std::to_string(info.bytes) + "}\n";
}

// What an interrupted backup leaves: the checkpoint's staging directory
// (".partial.tmp", RocksDB's) or the checkpoint before its rename.
bool Leftover(const std::string& name) {
  return name.starts_with(kBackupPrefix) &&
         (name.ends_with(kPartialSuffix) || name.ends_with(std::string(kPartialSuffix) + ".tmp"));
}

bool Digits(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return c >= '0' && c <= '9'; });
}

// A name NewName gives: backup-YYYYMMDDTHHMMSS.mmmZ, perhaps with -N. Only
// these are retention's: a copy kept by hand under another name (which
// used to sort after every time stamp and make keep=1 remove the backup
// just made) is the operator's.
bool NameIsOurs(std::string_view name) {
  if (!name.starts_with(kBackupPrefix)) return false;
  std::string_view t = name.substr(kBackupPrefix.size());
  if (t.size() < 20 || !Digits(t.substr(0, 8)) || t[8] != 'T' || !Digits(t.substr(9, 6)) ||
      t[15] != '.' || !Digits(t.substr(16, 3)) || t[19] != 'Z') {
    return false;
  }
  std::string_view suffix = t.substr(20);
  return suffix.empty() || (suffix.size() > 1 && suffix[0] == '-' && Digits(suffix.substr(1)));
}

// The manifest's "source" (the data directory the backup copied); "" when
// it cannot be read.
std::string ManifestSource(const fs::path& manifest) {
  std::ifstream f(manifest);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string_view source;
  if (parser.parse(text).get(doc) != simdjson::SUCCESS ||
      doc["source"].get(source) != simdjson::SUCCESS) {
    return "";
  }
  return std::string(source);
}

// Renamed out of the backups' namespace first, then removed: a removal that
// fails half-way leaves a .partial (removed at the next start), never a
// backup-... directory with a manifest and without the files it names.
Status RemoveBackup(const std::string& dir, const std::string& name) {
  const std::string path = dir + "/" + name;
  const std::string doomed = path + std::string(kPartialSuffix);
  if (::rename(path.c_str(), doomed.c_str()) != 0) {
    return Status(Code::kInternal, "renaming " + path + ": " + std::strerror(errno));
  }
  std::error_code ec;
  fs::remove_all(doomed, ec);
  if (ec) return Status(Code::kInternal, doomed + ": " + ec.message());
  return Status::OK();
}

// Removes this data directory's oldest backups beyond `keep`, never `made`
// (the backup just made: a clock that stepped back names it older than the
// others); returns their names.
std::vector<std::string> ApplyRetention(const BackupSettings& s, const std::string& made) {
  std::vector<std::string> removed;
  if (s.keep == 0) return removed;
  std::vector<std::string> all = ListBackups(s.dir, Resolved(s.data_dir).string());
  std::erase(all, made);
  const size_t others_kept = s.keep - 1;  // `made` is one of the kept
  for (size_t i = 0; i + others_kept < all.size(); i++) {
    if (Status gone = RemoveBackup(s.dir, all[i]); !gone.ok()) {
      spdlog::warn("backup: could not remove the old backup {}/{}: {}", s.dir, all[i],
                   gone.ToString());
      continue;
    }
    removed.push_back(all[i]);
  }
  return removed;
}

Result<BackupDirLock> LockBackupDir(const std::string& dir) {
  const std::string path = dir + "/" + std::string(kBackupDirLockFile);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status(Code::kUnavailable, "storage.backup_dir: " + path + ": " + std::strerror(errno));
  }
  BackupDirLock lock(fd);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return Status(Code::kUnavailable,
                    "storage.backup_dir '" + dir + "' is in use by another sidecar (it holds " +
                        path +
                        "): each sidecar needs a backup directory of its own (their retention and "
                        "start-up would remove each other's backups)");
    }
    return Status(Code::kUnavailable,
                  "storage.backup_dir: locking " + path + ": " + std::strerror(errno));
  }
  return lock;
}

}  // namespace

Status CheckBackupDir(const std::string& backup_dir, const std::string& data_dir) {
  if (backup_dir.empty()) return Status::OK();
  const fs::path b = Resolved(backup_dir), d = Resolved(data_dir);
  if (Inside(b, d)) {
    return Status(Code::kInvalidInput,
                  "storage.backup_dir ('" + backup_dir + "') must not be storage.path ('" +
                      data_dir +
                      "') or inside it: every backup, and every copy of storage.path, would copy "
                      "the backups too");
  }
  return Status::OK();
}

BackupDirLock& BackupDirLock::operator=(BackupDirLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

BackupDirLock::~BackupDirLock() {
  if (fd_ >= 0) ::close(fd_);
}

Result<BackupDirLock> PrepareBackupDir(const BackupSettings& s) {
  if (s.dir.empty()) return BackupDirLock();
  std::error_code ec;
  fs::create_directories(s.dir, ec);
  if (!fs::is_directory(s.dir)) {
    return Status(Code::kUnavailable, "storage.backup_dir '" + s.dir + "' is not a directory" +
                                          (ec ? " (" + ec.message() + ")" : std::string()));
  }
  if (::access(s.dir.c_str(), W_OK | X_OK) != 0) {
    return Status(Code::kUnavailable, "storage.backup_dir '" + s.dir + "': this process (uid " +
                                          std::to_string(::geteuid()) +
                                          ") may not write there: " + std::strerror(errno));
  }
  // Before the leftovers go: they may be another sidecar's backup in progress.
  auto lock = LockBackupDir(s.dir);
  if (!lock.ok()) return lock.status();
  for (const auto& e : fs::directory_iterator(s.dir, ec)) {
    const std::string name = e.path().filename().string();
    if (Leftover(name)) {
      spdlog::warn("backup: removing {}, what an interrupted backup left", e.path().string());
      fs::remove_all(e.path(), ec);
    }
  }
  // The data directory may not exist yet: its nearest existing parent is
  // on the filesystem it will be on.
  fs::path data_path = Resolved(s.data_dir);
  while (!fs::exists(data_path, ec) && data_path.has_parent_path() &&
         data_path != data_path.parent_path()) {
    data_path = data_path.parent_path();
  }
  struct stat data {
  }, backups{};
  const bool linked = ::stat(data_path.c_str(), &data) == 0 &&
                      ::stat(s.dir.c_str(), &backups) == 0 && data.st_dev == backups.st_dev;
  spdlog::info("backup: backups go to {} ({}), keeping {}", s.dir,
               linked ? "the data directory's filesystem: table files are hard links"
                      : "another filesystem than the data directory: every file is copied",
               s.keep == 0 ? std::string("all") : "the newest " + std::to_string(s.keep));
  return std::move(lock).value();
}

void AdoptRestoredBackup(const std::string& data_dir) {
  const fs::path manifest = fs::path(data_dir) / kBackupManifest;
  std::error_code ec;
  if (!fs::is_regular_file(manifest, ec)) return;
  const fs::path kept = fs::path(data_dir) / kRestoredManifest;
  fs::rename(manifest, kept, ec);
  if (ec) {
    spdlog::warn("backup: the data directory {} is a backup ({}), which could not be renamed: {}",
                 data_dir, manifest.string(), ec.message());
    return;
  }
  spdlog::info(
      "backup: the data directory {} was a backup; it is a live database now and no longer "
      "counted as one (its manifest is kept as {})",
      data_dir, kept.string());
}

std::vector<std::string> ListBackups(const std::string& dir, const std::string& source) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (!NameIsOurs(name) || !e.is_directory(ec)) continue;
    // Another sidecar's backups (a directory shared before it was locked,
    // or used by turns), and the data directory itself if a sidecar runs
    // on a backup here, are not this one's to remove.
    if (ManifestSource(e.path() / kBackupManifest) != source) continue;
    if (Resolved(e.path().string()).string() == source) continue;
    names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<LastBackup> NewestBackup(const std::string& dir, const std::string& source) {
  const std::vector<std::string> all = ListBackups(dir, Resolved(source).string());
  if (all.empty()) return std::nullopt;
  std::ifstream f(fs::path(dir) / all.back() / kBackupManifest);
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string_view created;
  LastBackup last;
  if (parser.parse(text).get(doc) != simdjson::SUCCESS ||
      doc["created"].get(created) != simdjson::SUCCESS ||
      doc["last_lsn"].get(last.last_lsn) != simdjson::SUCCESS ||
      doc["bytes"].get(last.bytes) != simdjson::SUCCESS) {
    return std::nullopt;
  }
  const std::optional<int64_t> ticks = ParseDateTime(created);
  if (!ticks) return std::nullopt;
  last.unix_seconds = (*ticks - kUnixEpochTicks) / kTicksPerSecond;
  return last;
}

Result<wire::BackupReply> TakeBackup(Engine* engine, const BackupSettings& s) {
  if (s.dir.empty()) {
    return Status(Code::kInvalidInput,
                  "backups are off: set storage.backup_dir in the sidecar's configuration");
  }
  const std::string name = NewName(s.dir);
  const std::string dir = Resolved(s.dir).string();
  const std::string path = dir + "/" + name;
  // Made under a name of its own and renamed when whole: a backup-...
  // directory is always complete, and what a crash leaves is recognisably
  // ours (removed at the next start, PrepareBackupDir).
  const std::string partial = path + std::string(kPartialSuffix);
  auto info = engine->Checkpoint(partial);
  if (!info.ok()) return info.status();
  // Synced and renamed into place: a backup without its manifest is not
  // listed (nor removed by retention).
  Status m = common::WriteFileAtomically(partial + "/" + std::string(kBackupManifest),
                                         Manifest(s, name, *info));
  if (m.ok() && ::rename(partial.c_str(), path.c_str()) != 0) {
    m = Status(Code::kInternal, "renaming " + partial + ": " + std::strerror(errno));
  }
  if (!m.ok()) {
    std::error_code ec;
    fs::remove_all(partial, ec);
    return Status(m.code(), "backup " + name + " was removed: " + m.message());
  }
  // The rename into place survives a crash of the machine.
  if (Status synced = common::SyncDirectory(dir); !synced.ok()) {
    spdlog::warn("backup: {}", synced.ToString());
  }
  wire::BackupReply r;
  r.name = name;
  r.path = path;
  r.first_lsn = info->first_lsn;
  r.last_lsn = info->last_lsn;
  r.tables = info->tables;
  r.files = info->files;  // the checkpoint's, as the manifest says
  r.bytes = info->bytes;
  r.micros = info->micros;
  r.removed = ApplyRetention(s, name);
  return r;
}

}  // namespace sidetable::sidecar
