// Row images written once (internal to the engine).
//
// A write used to store each entity twice: the row, and a copy of it as the
// after image in its change record (the outbox). Both copies went through
// the WAL, a memtable, a flush and compactions. Now an EGT's record (format
// 4 or 5, internal/codec.h) stores no after image: the row it wrote is that
// image, marked by the row's format byte (kRowFormatSoleImage). Readers of
// the log get records resolved to formats 2 and 3, as before
// (Engine::Impl::ResolveImages), so nothing outside the engine changes.
//
// While the record is in the log, the row may be displaced. Whatever
// displaces it, in the same RocksDB write, leaves in the "images" column
// family, under ImageKey(record LSN, entity key):
//   - a write with a change record (update, merge, replace, delete): a
//     pointer to that record, 'f' + varint LSN; its before image is the
//     displaced row (before images stay inline in every record);
//   - a write without one (ApplyReplicated, DropPartitions): the row
//     itself, 'i' + the row.
// A table deleted while its rows may still be images keeps its rows (under
// its id, never reused) until the log is trimmed past the deletion
// (kMetaPendingDrop, processed by TrimChanges). Trimming the log below L
// removes the images entries below L with one range deletion: an entry is
// only needed while the record it is keyed by exists.
//
// Resolving (record N, RowKey rk), under one snapshot: the row, if its
// version is N's; else the images entry of (N, key); else the image is
// lost, which these rules make impossible short of corruption, and the
// read fails with kInternal rather than hand out a record without it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/internal/codec.h"

namespace sidetable::internal {

inline constexpr char kImagePointer = 'f';  // + varint LSN of the displacing record
inline constexpr char kImageRow = 'i';      // + the displaced row

// LogKey(lsn) + the entity key: ordered by the LSN of the record whose
// after image it keeps, so a trim is one range deletion.
inline std::string ImageKey(uint64_t lsn, std::string_view entity_key) {
  std::string k = codec::LogKey(lsn);
  k.append(entity_key);
  return k;
}

// The LSN of the record that wrote a row, when its format says that record
// relies on it (kRowFormatSoleImage); 0 otherwise. Such a row's version is
// the record's LSN, stamped with an epoch in a cluster (codec::StampVersion).
inline uint64_t SoleImageLsn(std::string_view row) {
  if (row.empty() || static_cast<uint8_t>(row[0]) != codec::kRowFormatSoleImage) return 0;
  uint64_t version;
  int64_t ts;
  if (!codec::DecodeRowHeader(row, &version, &ts).ok()) return 0;
  return version & codec::kMaxStampedLsn;
}

// Meta keys: a deleted table whose rows wait for the log to pass an LSN.
// "pending-drop/" + LogKey(lsn) -> varint table id.
inline constexpr std::string_view kMetaPendingDrop = "pending-drop/";
inline std::string PendingDropKey(uint64_t lsn) {
  std::string k(kMetaPendingDrop);
  k.append(codec::LogKey(lsn));
  return k;
}

}  // namespace sidetable::internal
