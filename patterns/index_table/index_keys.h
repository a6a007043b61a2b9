// The keys of index entries (docs/patterns.md, "Index keys"): how an indexed
// value becomes an entry's PartitionKey and how a source entity's keys become
// an entry's RowKey, both reversibly escaped so they are valid keys
// (engine/limits.h ValidateKey) and distinct inputs never collide.
//
// Escaping: the UTF-8 bytes of '%', '|', '/', '\', '#', '?', and of the
// control characters U+0000..U+001F and U+007F..U+009F become "%XX" (two
// upper-case hex digits per byte); every other character stays as it is.
// Unescaping accepts only that canonical form.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/edm.h"
#include "engine/status.h"

namespace sidetable::patterns {

// The escape character and the separator of the source keys in a RowKey.
inline constexpr char kKeyEscape = '%';
inline constexpr char kSourceKeySeparator = '|';

std::string EscapeKeyText(std::string_view text);
// InvalidInput unless `escaped` is exactly EscapeKeyText of some valid UTF-8.
Result<std::string> UnescapeKeyText(std::string_view escaped);

// The canonical text of an indexed value:
//   String   as is
//   Int32/Int64  decimal ("-42")
//   Double   shortest round-trip decimal ("0.1", "1e+100"); -0 as "0";
//            "NaN", "INF", "-INF"
//   Boolean  "true" / "false"
//   DateTime ISO 8601 UTC with 7 fractional digits ("2014-08-22T00:50:32.1230000Z")
//   Guid     lower-case "c9da6455-213d-42c9-9a79-3e9149a57833"
//   Binary   lower-case hex ("00ff10")
// Values of different types with the same text share an index partition.
std::string IndexValueText(const Value& value);

// An index entry's RowKey: EscapeKeyText(pk) + '|' + EscapeKeyText(rk).
// KeyValueTooLarge when that is longer than a key may be.
Result<std::string> MakeSourceRowKey(std::string_view partition_key, std::string_view row_key);

struct SourceKeys {
  std::string partition_key;
  std::string row_key;
  bool operator==(const SourceKeys&) const = default;
};
// The inverse of MakeSourceRowKey; InvalidInput for anything it cannot produce.
Result<SourceKeys> ParseSourceRowKey(std::string_view row_key);

// An entry PartitionKey layout, e.g. "{value}", "{prefix}_{value}",
// "{property}_{value}". Literal text and the prefix may not contain '%' or
// characters forbidden in keys; {value} must appear exactly once.
class IndexLayout {
 public:
  static constexpr const char* kDefault = "{value}";
  static constexpr const char* kDefaultWithPrefix = "{prefix}_{value}";

  // InvalidInput (naming the problem) for a malformed layout or prefix.
  static Result<IndexLayout> Parse(std::string_view layout, std::string_view prefix);

  // The PartitionKey for `value` of `property`; nullopt when the key would
  // be invalid (too long): such values are not indexed.
  std::optional<std::string> PartitionKey(std::string_view property, const Value& value) const;

  // The layout text around {value} for `property` (for collision checks).
  std::string Before(std::string_view property) const;
  std::string After(std::string_view property) const;
  bool uses_property() const;
  const std::string& text() const { return text_; }

 private:
  enum class Part { kLiteral, kPrefix, kProperty, kValue };
  struct Segment {
    Part part;
    std::string literal;
  };
  std::string Render(std::string_view property, size_t from, size_t to) const;

  std::string text_ = kDefault;  // a default-constructed layout is "{value}"
  std::string prefix_;
  std::vector<Segment> segments_{{Part::kValue, ""}};
  size_t value_index_ = 0;
};

}  // namespace sidetable::patterns
