// What the engine checks in its data directory before RocksDB may change
// anything there, and the format version it keeps in the meta column family
// (docs/storage-format.md, "Format version").
//
// RocksDB, asked to create a missing database, creates one wherever CURRENT
// is missing, and then deletes the table files it does not know as obsolete:
// a directory that lost its CURRENT file lost every row at the next start
// (found by session 39 from outside). Asked to create missing column
// families, it adds them to any RocksDB database, so another program's
// database was adopted and could no longer be opened by its owner. These
// checks refuse both before RocksDB opens anything.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/env.h>

#include <optional>
#include <string>

#include "engine/status.h"

namespace sidetable::internal {

// The format of the data directory this build writes and reads. A directory
// marked with a higher one was written by a newer sidetable and is refused.
inline constexpr uint64_t kDataFormatVersion = 1;
// Its key in the meta (default) column family; absent in directories written
// before session 39, which are marked at their next open.
inline constexpr std::string_view kMetaFormatVersion = "format_version";

// A copy of the format mark in a plain file beside the database, so that a
// start reads it without replaying the write-ahead log (a read-only open
// replays all of it: within the noise on a quiet host, a median 1.6x a
// start on a busy one, with 120 MB of WAL after a kill -9; storage-format.md
// has the figures). It is a cache of the mark, never the reverse: a
// missing or unreadable file means "look in the database". A build that
// raises the format must write this file before the mark, so that a crash
// between the two leaves an older build refusing rather than opening.
inline constexpr const char* kFormatFileName = "SIDETABLE-FORMAT";

struct DataDirectory {
  // CURRENT exists: open the database, never create one.
  bool exists = false;
  // The mark kFormatFileName gave, when it was read and in its form: the
  // format was checked from it. Otherwise (nullopt) by a read-only open of
  // the database, or not at all (a new directory).
  std::optional<std::string> format_file;
};

// Looks at `path` before anything is opened there: a missing CURRENT beside
// RocksDB's files, a database whose column families are not sidetable's, and
// a format mark above kDataFormatVersion (read with a read-only open, which
// replays the WAL in memory), are refused (kUnavailable) with what was found
// and what to do.
Result<DataDirectory> InspectDataDirectory(rocksdb::Env* env, const rocksdb::DBOptions& db,
                                           const std::string& path);

// A first open failed on a write-ahead log record that does not check in
// the middle of a log (`opened`, RocksDB's Corruption; `dropped`: the bytes
// from it to the end of its log). Refused (kDataCorrupted, nothing changed)
// unless `accept`, which logs what will be dropped and lets the caller open
// again with point-in-time recovery.
Status RefuseDamagedWal(const std::string& path, const rocksdb::Status& opened, uint64_t dropped,
                        bool accept);

// After the open: a directory without a mark gets this build's; one marked
// with a newer or unreadable version is refused. InspectDataDirectory
// refuses those before the open already; this is the check for a mark its
// read-only look could not read. Then kFormatFileName is made to say what
// the mark says: written when `format_file` (InspectDataDirectory's) differs
// from it; a failure to write it is logged, not fatal: the next start looks
// in the database instead.
Status CheckFormatVersion(rocksdb::Env* env, rocksdb::DB* db, rocksdb::ColumnFamilyHandle* meta,
                          const std::string& path, const std::optional<std::string>& format_file);

}  // namespace sidetable::internal
