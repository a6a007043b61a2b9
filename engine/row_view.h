// A stored entity read in place: its keys, version, timestamp and properties
// straight from the row bytes a scan hands out, without building an Entity
// (no allocation per row or per property). The query layer's visitor API
// (engine/query/query.h, VisitQuery) and the sidecar's reply encoder use it;
// everyone else can keep reading Entity values.
//
// The row bytes stay the engine's business: RowView is the only reader of
// them outside engine/codec.cc, and docs/storage-format.md describes them.
//
// Lifetime: a RowView and every PropertyView it yields point into bytes owned
// by someone else (a scan's current row): valid until that scan moves on.
//
// Errors: stored bytes that do not parse (a corrupt row) give
// Code::kInternal "corrupt row: ...", never a crash or a read past the end.
//
// Thread safety: values over borrowed bytes; use from one thread at a time.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/edm.h"
#include "engine/status.h"

namespace sidetable {

// One property of a stored row. The accessors mirror Value's, so code can be
// written once over either.
struct PropertyView {
  std::string_view name;
  EdmType type_ = EdmType::kString;
  std::string_view bytes_;  // String, Binary: the payload; Guid: the 16 raw bytes
  int64_t int_ = 0;         // Boolean (0/1), Int32, Int64, DateTime ticks
  double double_ = 0;       // Double

  EdmType type() const { return type_; }
  std::string_view bytes() const { return bytes_; }
  bool as_bool() const { return int_ != 0; }
  int32_t as_int32() const { return static_cast<int32_t>(int_); }
  int64_t as_int64() const { return int_; }
  int64_t as_ticks() const { return int_; }
  double as_double() const { return double_; }
  // A Value owning a copy (allocates for String, Binary, Guid).
  Value ToValue() const;
};

// Room for an ETag, W/"<uint64>": at most 24 bytes.
struct ETagBuffer {
  char data[32];
};

class RowView {
 public:
  RowView() = default;
  // Parses the header of a stored row (format, version, timestamp, property
  // count); kInternal when it is corrupt. The properties are read on demand.
  static Result<RowView> Parse(std::string_view partition_key, std::string_view row_key,
                               std::string_view row);

  std::string_view partition_key() const { return pk_; }
  std::string_view row_key() const { return rk_; }
  uint64_t version() const { return version_; }
  int64_t timestamp() const { return timestamp_; }
  // The property count the row declares (PropertyReader checks it).
  uint64_t property_count() const { return count_; }
  // The entity's ETag (what MakeETag(version()) returns), written into `buf`.
  std::string_view ETag(ETagBuffer* buf) const;

  // The first property named `name` (names are unique in a stored row);
  // false when absent. A corrupt row also gives false and sets *error.
  bool Find(std::string_view name, PropertyView* out, Status* error) const;

  // The properties, after the header (internal to the readers).
  std::string_view properties_bytes() const { return props_; }

 private:
  std::string_view pk_, rk_, props_;
  uint64_t version_ = 0;
  int64_t timestamp_ = 0;
  uint64_t count_ = 0;
};

// Reads a row's properties in stored order:
//   PropertyReader r(row);
//   for (PropertyView p; r.Next(&p);) ...
//   ST_RETURN_IF_ERROR(r.status());
class PropertyReader {
 public:
  explicit PropertyReader(const RowView& row);
  // False at the end, or when the bytes are corrupt (then status() says why).
  bool Next(PropertyView* out);
  // OK after a clean end; kInternal for a corrupt row (a bad value, fewer or
  // more bytes than the declared count).
  const Status& status() const { return status_; }

 private:
  const char* p_;
  const char* end_;
  uint64_t left_;
  Status status_;
};

// Builds the Entity a RowView describes (every property, or only those whose
// names are in `select`, which must hold no system names). Allocates: for
// callers that want Entity values.
Status RowToEntity(const RowView& row, Entity* out, const std::vector<std::string>* select = nullptr);

}  // namespace sidetable
