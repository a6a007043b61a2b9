#include "engine/internal/data_directory.h"

#include <rocksdb/options.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cstdarg>
#include <memory>
#include <optional>
#include <vector>

namespace sidetable::internal {
namespace {

// The column families sidetable has ever written. "entities" and "changelog"
// are in every sidetable database; "requests" and "images" came later and are
// created when missing.
constexpr std::string_view kRequiredFamilies[] = {"entities", "changelog"};
constexpr std::string_view kKnownFamilies[] = {"default", "entities", "changelog", "requests",
                                               "images"};

bool Contains(const std::vector<std::string>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool AllDigits(std::string_view s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](unsigned char c) { return c >= '0' && c <= '9'; });
}

// Files only RocksDB writes, named as it names them (a file number), whose
// presence means a database was here. Other files (an operator's
// sidetable.log, a README) say nothing.
bool IsRocksDbFile(std::string_view name) {
  for (std::string_view prefix : {"MANIFEST-", "OPTIONS-"}) {
    if (name.starts_with(prefix)) return AllDigits(name.substr(prefix.size()));
  }
  for (std::string_view suffix : {".sst", ".log", ".blob"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      return AllDigits(name.substr(0, name.size() - suffix.size()));
    }
  }
  return false;
}

// CURRENT is missing: refuse if RocksDB's files say a database was here.
Status CheckNoDatabaseLeft(rocksdb::Env* env, const std::string& path) {
  std::vector<std::string> children;
  if (!env->GetChildren(path, &children).ok()) return Status::OK();  // missing: created later
  std::vector<std::string> found;
  for (const std::string& name : children) {
    if (IsRocksDbFile(name)) found.push_back(name);
  }
  if (found.empty()) return Status::OK();
  std::sort(found.begin(), found.end());
  std::string listed;
  for (size_t i = 0; i < found.size() && i < 3; i++) listed += (i ? ", " : "") + found[i];
  if (found.size() > 3) listed += " and " + std::to_string(found.size() - 3) + " more";
  return Status(Code::kUnavailable,
                "cannot open database at " + path + ": it holds RocksDB files (" + listed +
                    ") but no CURRENT file, so the database there is damaged or incomplete; "
                    "refusing to create a new, empty one over it (that would delete those files). "
                    "Restore the directory from a backup, or move its files away to start empty");
}

// The format mark's value: a version this build reads, or a refusal.
Status CheckFormatMark(const std::string& value, const std::string& path) {
  uint64_t version = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), version);
  if (ec != std::errc() || end != value.data() + value.size() || version == 0) {
    return Status(Code::kUnavailable, "cannot open database at " + path + ": its format version '" +
                                          value + "' is not a number; the directory is damaged");
  }
  if (version > kDataFormatVersion) {
    return Status(Code::kUnavailable,
                  "cannot open database at " + path + ": it is in format version " +
                      std::to_string(version) +
                      ", written by a newer sidetable; this one reads format " +
                      std::to_string(kDataFormatVersion) +
                      " and older. Run the newer version (going back needs a backup from before "
                      "the upgrade); refused before sidetable wrote anything");
  }
  return Status::OK();
}

// kFormatFileName's text: one line, "sidetable data format <n>".
constexpr std::string_view kFormatFilePrefix = "sidetable data format ";

std::string FormatFilePath(const std::string& path) { return path + "/" + kFormatFileName; }

// The mark as the file gives it; nullopt when the file is missing, too long
// or not in its form (a torn write, a hand edit): the database decides then.
std::optional<std::string> ReadFormatFile(rocksdb::Env* env, const std::string& path) {
  const std::string file = FormatFilePath(path);
  uint64_t size = 0;
  if (!env->GetFileSize(file, &size).ok() || size > 64) return std::nullopt;
  std::string text;
  if (!rocksdb::ReadFileToString(env, file, &text).ok()) return std::nullopt;
  if (!text.starts_with(kFormatFilePrefix) || !text.ends_with('\n')) return std::nullopt;
  std::string value =
      text.substr(kFormatFilePrefix.size(), text.size() - kFormatFilePrefix.size() - 1);
  if (!AllDigits(value)) return std::nullopt;
  return value;
}

// Replaces the file whole (a temporary file, synced, renamed over it, and
// the directory synced), so a reader finds the old text or the new one.
rocksdb::Status WriteFormatFile(rocksdb::Env* env, const std::string& path,
                                const std::string& value) {
  const std::string file = FormatFilePath(path);
  const std::string tmp = file + ".tmp";
  rocksdb::Status s =
      rocksdb::WriteStringToFile(env, std::string(kFormatFilePrefix) + value + "\n", tmp,
                                 /*should_sync=*/true);
  if (s.ok()) s = env->RenameFile(tmp, file);
  if (!s.ok()) {
    env->DeleteFile(tmp).PermitUncheckedError();
    return s;
  }
  std::unique_ptr<rocksdb::Directory> dir;
  s = env->NewDirectory(path, &dir);
  return s.ok() ? dir->Fsync() : s;
}

// Discards what RocksDB says during the read-only look: the open that
// follows says it again, and counts what its WAL recovery drops.
class SilentLogger final : public rocksdb::Logger {
 public:
  using rocksdb::Logger::Logv;
  void Logv(const char* /*format*/, va_list /*ap*/) override {}
};

// Reads the format mark with a read-only open, which replays the WAL in
// memory and writes nothing. The read-write open cannot be what reads it: it
// flushes the recovered WAL into a table file written with this build's
// options, writes a new MANIFEST and OPTIONS file and deletes the old WAL,
// so a rollback to an older build rewrote a newer build's directory before
// refusing it (found from outside by session 43). A look that fails (a
// damaged WAL, an I/O error) decides nothing: the open reports it, and
// CheckFormatVersion looks again after it.
Status PeekFormatVersion(const rocksdb::DBOptions& db, const std::string& path) {
  rocksdb::DBOptions ro = db;
  ro.info_log = std::make_shared<SilentLogger>();
  ro.listeners.clear();
  ro.sst_file_manager.reset();
  std::vector<rocksdb::ColumnFamilyDescriptor> meta = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()}};
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::OpenForReadOnly(ro, path, meta, &handles, &raw).ok()) return Status::OK();
  std::unique_ptr<rocksdb::DB> opened(raw);
  std::string value;
  rocksdb::Status s = raw->Get(rocksdb::ReadOptions(), handles[0], kMetaFormatVersion, &value);
  for (auto* h : handles) raw->DestroyColumnFamilyHandle(h).PermitUncheckedError();
  // Unmarked (a directory from before session 39) or unreadable: decided
  // after the open.
  if (!s.ok()) return Status::OK();
  return CheckFormatMark(value, path);
}

Status CheckFamilies(const std::vector<std::string>& families, const std::string& path) {
  for (const std::string& name : families) {
    if (std::find(std::begin(kKnownFamilies), std::end(kKnownFamilies), name) ==
        std::end(kKnownFamilies)) {
      return Status(Code::kUnavailable,
                    "cannot open database at " + path + ": it has a column family '" + name +
                        "' this version of sidetable does not know: it was written by a newer "
                        "sidetable, or it is not a sidetable database; nothing was changed");
    }
  }
  for (std::string_view name : kRequiredFamilies) {
    if (!Contains(families, name)) {
      return Status(Code::kUnavailable,
                    "cannot open database at " + path +
                        ": it is a RocksDB database but not a sidetable one (no '" +
                        std::string(name) +
                        "' column family); check storage.path. Nothing was changed");
    }
  }
  return Status::OK();
}

}  // namespace

Result<DataDirectory> InspectDataDirectory(rocksdb::Env* env, const rocksdb::DBOptions& db,
                                           const std::string& path) {
  DataDirectory dir;
  rocksdb::Status current = env->FileExists(path + "/CURRENT");
  if (current.IsNotFound()) {
    ST_RETURN_IF_ERROR(CheckNoDatabaseLeft(env, path));
    return dir;
  }
  if (!current.ok()) {
    return Status(Code::kUnavailable,
                  "cannot open database at " + path + ": " + current.ToString());
  }
  dir.exists = true;
  std::vector<std::string> families;
  rocksdb::Status s = rocksdb::DB::ListColumnFamilies(db, path, &families);
  if (!s.ok()) {
    return Status(Code::kUnavailable, "cannot open database at " + path + ": " + s.ToString());
  }
  ST_RETURN_IF_ERROR(CheckFamilies(families, path));
  dir.format_file = ReadFormatFile(env, path);
  if (dir.format_file) {
    ST_RETURN_IF_ERROR(CheckFormatMark(*dir.format_file, path));
    return dir;
  }
  ST_RETURN_IF_ERROR(PeekFormatVersion(db, path));
  return dir;
}

Status CheckFormatVersion(rocksdb::Env* env, rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta,
                          const std::string& path, const std::optional<std::string>& format_file) {
  std::string value;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), meta, kMetaFormatVersion, &value);
  if (s.IsNotFound()) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    value = std::to_string(kDataFormatVersion);
    s = db->Put(wo, meta, kMetaFormatVersion, value);
    // Not fatal: a directory must still open (and serve reads) on a full
    // disk; the mark is written at a later start.
    if (!s.ok()) {
      spdlog::warn("engine: could not mark {} with format version {}: {}", path, kDataFormatVersion,
                   s.ToString());
      return Status::OK();  // and no file: it would copy a mark that is not there
    }
  } else if (!s.ok()) {
    return Status(Code::kUnavailable,
                  "reading the format version at " + path + ": " + s.ToString());
  } else {
    ST_RETURN_IF_ERROR(CheckFormatMark(value, path));
  }
  if (format_file != value) {
    if (rocksdb::Status w = WriteFormatFile(env, path, value); !w.ok()) {
      spdlog::warn(
          "engine: could not write {} (the next start replays the WAL to read the format): {}",
          FormatFilePath(path), w.ToString());
    }
  }
  return Status::OK();
}

Status RefuseDamagedWal(const std::string& path, const rocksdb::Status& opened, uint64_t dropped,
                        bool accept) {
  if (accept) {
    spdlog::warn(
        "engine: {}: the write-ahead log is damaged in its middle ({}); --accept-wal-damage: "
        "opening with what is before the damage, dropping about {} bytes of records after it "
        "(acknowledged writes among them)",
        path, opened.ToString(), dropped);
    return Status::OK();
  }
  return Status(
      Code::kUnavailable,
      "cannot open database at " + path + ": its write-ahead log is damaged in its middle (" +
          opened.ToString() +
          "; RocksDB's warning above names the file). Opening it would drop the " +
          std::to_string(dropped) +
          " bytes of records from the damage to the end of that log, acknowledged writes among "
          "them; nothing was changed. Restore the directory from a backup, or copy it aside and "
          "start once with --accept-wal-damage to keep what is before the damage "
          "(docs/operations.md, \"A damaged or foreign data directory\")");
}

}  // namespace sidetable::internal
