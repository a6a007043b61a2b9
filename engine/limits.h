// Azure Table limits and the validation that enforces them.
//
// Sizes follow Azure's accounting, which is in UTF-16: a String property of
// 64 KiB holds 32,768 UTF-16 code units. Validation is pure (no I/O) so the
// sidecar can reject bad input before it queues anything.
#pragma once

#include <cstddef>
#include <string_view>
#include <vector>

#include "engine/edm.h"
#include "engine/status.h"

namespace sidetable {

struct Limits {
  static constexpr size_t kMaxKeyBytes = 1024;              // PK/RK, UTF-16 bytes
  static constexpr size_t kMaxUserProperties = 252;         // + 3 system = 255
  static constexpr size_t kMaxPropertyNameChars = 255;
  static constexpr size_t kMaxValueBytes = 64 * 1024;       // String (UTF-16), Binary
  static constexpr size_t kMaxEntityBytes = 1024 * 1024;
  static constexpr size_t kMaxBatchOperations = 100;
  static constexpr size_t kMaxBatchBytes = 4 * 1024 * 1024;  // must stay under
  static constexpr size_t kMinTableName = 3;
  static constexpr size_t kMaxTableName = 63;
  // The writer id recorded in the change log with every change (like the
  // service's x-ms-client-request-id, which it caps at 1 KiB).
  static constexpr size_t kMaxCallerBytes = 1024;
  // A client request id (exactly-once retries, docs/protocol.md): long
  // enough for a UUID with a prefix, short enough to remember millions.
  static constexpr size_t kMaxClientRequestIdBytes = 128;
};

// PartitionKey or RowKey: valid UTF-8, at most 1 KiB, none of / \ # ? and no
// control characters (U+0000..U+001F, U+007F..U+009F).
// `what` names the key in the error message.
Status ValidateKey(std::string_view key, std::string_view what);

// A user property name: 1..255 characters, a C# identifier (letter or '_',
// then letters, digits, '_'; non-ASCII letters allowed), not a system name.
Status ValidatePropertyName(std::string_view name);

// A $select list, for Get and Query alike: at most 255 names, each a valid
// property name or one of the system properties (PartitionKey, RowKey,
// Timestamp). InvalidInput naming the first bad one.
Status ValidateSelect(const std::vector<std::string>& select);

// Type-specific range: String valid UTF-8 and <= 64 KiB, Binary <= 64 KiB,
// DateTime within 1601-01-01..9999-12-31.
Status ValidateValue(std::string_view name, const Value& v);

// Azure's size formula: 4 + 2*len(PK+RK) + sum(8 + 2*len(name) + size(value)).
size_t EntitySize(const Entity& e);

// An entity's share of a batch's payload, the 4 MiB EGT limit: its bytes as
// sent (keys, names and strings in UTF-8, binary as is, the fixed types at
// their size). Azure measures that limit on the request body, not in the
// UTF-16 units of EntitySize, which would double every ASCII string and
// refuse a 2 MB batch.
size_t EntityPayloadBytes(const Entity& e);

// Keys, names, values, property count, no duplicate names, total size.
// On success *size (if given) is EntitySize(e), computed in the same pass.
Status ValidateEntity(const Entity& e, size_t* size = nullptr);

// 3..63 alphanumerics, not starting with a digit, not "tables".
Status ValidateTableName(std::string_view name);

// The caller recorded in the change log: valid UTF-8, at most 1 KiB, no
// control characters, so that audits, CSV and every client can show it.
Status ValidateCaller(std::string_view caller);

// A client request id: 1..128 printable ASCII characters (0x21..0x7E), so
// that it can be a log field, a CSV cell and a Kafka header as it is.
Status ValidateClientRequestId(std::string_view id);

}  // namespace sidetable
