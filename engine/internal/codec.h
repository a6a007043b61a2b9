// Storage encodings (internal to the engine; docs/storage-format.md is the
// normative description and carries the format version).
//
// Row value:  u8 format | varint version | fixed64 timestamp | varint count |
//             count x (varint name_len, name, u8 EdmType, payload)
//   format 1: the change record of this version (if any) holds its own copy.
//   format 2: the same layout, written by a change record that holds no copy
//             of it (format 4 or 5 below): the row is that record's after
//             image until displaced (engine/internal/images.h).
// Entity key: u32be table_id | ord(PK) | 0x00 | ord(RK)
//   ord() is utf8.h's OrdinalByte map; keys never contain U+0000, so 0x00
//   ends the PartitionKey and the bytewise order of keys is Azure's order.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/batch.h"
#include "engine/change_record.h"
#include "engine/edm.h"
#include "engine/status.h"

namespace sidetable::codec {

inline constexpr uint8_t kRowFormat = 1;
inline constexpr uint8_t kRowFormatSoleImage = 2;
inline bool IsRowFormat(uint8_t f) { return f == kRowFormat || f == kRowFormatSoleImage; }

// ---- primitive encoders -------------------------------------------------
void PutVarint64(std::string* dst, uint64_t v);
void PutFixed64(std::string* dst, uint64_t v);
void PutFixed32BE(std::string* dst, uint32_t v);
void PutFixed64BE(std::string* dst, uint64_t v);
void PutLengthPrefixed(std::string* dst, std::string_view s);

// A bounds-checked reader over a byte string. Every getter returns false on
// truncated or malformed input and never reads past the end.
class Reader {
 public:
  explicit Reader(std::string_view in) : p_(in.data()), end_(in.data() + in.size()) {}
  bool Varint64(uint64_t* v);
  bool Fixed64(uint64_t* v);
  bool Byte(uint8_t* v);
  bool Bytes(size_t n, std::string_view* v);
  bool LengthPrefixed(std::string_view* v);
  bool empty() const { return p_ == end_; }
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }

 private:
  const char* p_;
  const char* end_;
};

uint32_t DecodeFixed32BE(const char* p);
uint64_t DecodeFixed64BE(const char* p);

// ---- rows ----------------------------------------------------------------
// Encodes the user properties of `e` with the given version and timestamp.
void EncodeRow(const Entity& e, uint64_t version, int64_t timestamp, std::string* dst,
               uint8_t format = kRowFormat);
// Appends `row` length-prefixed as format 1, whatever format it was stored
// in: images inside change records are always format 1.
void PutRowImage(std::string* dst, std::string_view row);

// Header only: version and timestamp, without decoding properties.
Status DecodeRowHeader(std::string_view row, uint64_t* version, int64_t* timestamp);

// Decodes properties into e->properties (keys are not in the row). When
// `select` is non-null only the named properties are kept.
Status DecodeRow(std::string_view row, Entity* e, const std::vector<std::string>* select = nullptr);


// ---- keys ----------------------------------------------------------------
std::string TablePrefix(uint32_t table_id);
// table | ord(pk) | 0x00
std::string PartitionPrefix(uint32_t table_id, std::string_view pk);
void AppendOrdinal(std::string* dst, std::string_view s);
std::string EntityKey(uint32_t table_id, std::string_view pk, std::string_view rk);
// The length of an entity key's PartitionPrefix (through its separator), or
// 0 when `key` has none (TablePrefix, a malformed key).
size_t PartitionPrefixLength(std::string_view key);
// Splits an entity key back into its parts; false when malformed.
bool DecodeEntityKey(std::string_view key, uint32_t* table_id, std::string* pk, std::string* rk);

std::string LogKey(uint64_t lsn);

// ---- change log ------------------------------------------------------------
// The change log value (format byte first). Everyone outside the engine uses
// Engine::ReadChanges.
// Format 2 added the client request id after the caller; format 1 records
// (written before it) are still read. Format 3 adds the scale-out epoch after
// the request id and is written only for a record with epoch > 0, so a
// sidecar outside a cluster writes the same bytes as before (format 2).
inline constexpr uint8_t kChangeFormat = 2;
inline constexpr uint8_t kChangeFormatV1 = 1;
inline constexpr uint8_t kChangeFormatEpoch = 3;
// Formats 4 and 5 are 2 and 3 with a byte after each operation's kind: 0,
// the after image follows inline; 1, it is not stored in the record (the
// after field is empty) and is the row this record wrote, or what displaced
// it left behind (engine/internal/images.h). Only the engine reads them: it
// hands out records resolved to format 2 or 3.
inline constexpr uint8_t kChangeFormatRefs = 4;
inline constexpr uint8_t kChangeFormatEpochRefs = 5;
inline constexpr uint8_t kImageInline = 0;
inline constexpr uint8_t kImageInRow = 1;
// Scale-out versions: epoch << kEpochShift | lsn (docs/scale-out.md).
inline constexpr int kEpochShift = 40;
inline constexpr uint64_t kMaxEpoch = (uint64_t{1} << 24) - 1;
inline constexpr uint64_t kMaxStampedLsn = (uint64_t{1} << kEpochShift) - 1;
// The version an entity written at `lsn` under `epoch` carries (the LSN
// itself for epoch 0). Callers have checked both bounds.
inline uint64_t StampVersion(uint64_t epoch, uint64_t lsn) {
  return epoch == 0 ? lsn : (epoch << kEpochShift | lsn);
}
// Row images are passed pre-encoded (codec::EncodeRow) so the after image is
// encoded once for both the row and the log.
struct ChangeOpImages {
  std::string_view row_key;
  OpKind kind;
  std::string_view before_row;  // empty = none
  std::string_view after_row;   // empty = none
};
// `target_table` is written for kArchiveRequested only.
void EncodeChangeHeader(uint64_t lsn, ChangeKind kind, int64_t commit_time,
                        std::string_view table, uint32_t table_id, std::string_view pk,
                        std::string_view caller, size_t op_count, std::string* dst,
                        std::string_view target_table = {},
                        std::string_view client_request_id = {}, uint64_t epoch = 0,
                        bool image_refs = false);
// `image_mode` is written only in a header written with image_refs
// (kImageInline or kImageInRow); -1 for the formats without it.
void EncodeChangeOp(const ChangeOpImages& op, std::string* dst, int image_mode = -1);
// Fails (kInternal) on an operation whose after image is not in the record:
// the engine resolves those first (Engine::Impl::ResolveImages).
Status DecodeChange(std::string_view value, ChangeRecord* out);

// A stored record of any format, split without copying: what ResolveImages
// needs to rewrite one of format 4 or 5 as format 2 or 3.
struct StoredChangeOp {
  std::string_view row_key;
  uint8_t kind = 0;
  uint8_t image_mode = kImageInline;
  std::string_view before, after;
};
struct StoredChange {
  uint8_t format = 0;
  uint64_t lsn = 0;
  uint64_t epoch = 0;
  uint32_t table_id = 0;
  std::string_view partition_key;
  std::string_view header_rest;  // after the format byte, through the op count
  std::vector<StoredChangeOp> ops;
};
inline bool HasImageRefs(std::string_view value) {
  return !value.empty() && (static_cast<uint8_t>(value[0]) == kChangeFormatRefs ||
                            static_cast<uint8_t>(value[0]) == kChangeFormatEpochRefs);
}
Status SplitStoredChange(std::string_view value, StoredChange* out);
// Only the header fields (lsn, kind, commit_time, table, pk, caller).
Status DecodeChangeHeader(std::string_view value, ChangeRecord* out);

}  // namespace sidetable::codec
