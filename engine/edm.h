// The entity model: Edm property types, values and entities.
//
// Values are plain data. Strings are UTF-8 in memory (the engine validates
// them); sizes that Azure states in UTF-16 bytes are measured in UTF-16 bytes
// (see engine/limits.h). DateTime is a count of 100 ns ticks since
// 0001-01-01T00:00:00Z, the resolution Azure keeps.
//
// Thread safety: values; no shared state.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sidetable {

// The wire and storage value of each type is fixed by docs/storage-format.md:
// never renumber.
enum class EdmType : uint8_t {
  kString = 1,
  kBinary = 2,
  kBoolean = 3,
  kDateTime = 4,
  kDouble = 5,
  kGuid = 6,
  kInt32 = 7,
  kInt64 = 8,
};

// "Edm.String", ...
std::string_view EdmTypeName(EdmType type);
// Accepts "Edm.Int64" and "Int64"; nullopt otherwise.
std::optional<EdmType> ParseEdmType(std::string_view name);

using Guid = std::array<uint8_t, 16>;

class Value {
 public:
  Value() = default;  // String ""
  static Value String(std::string s) { return Value(EdmType::kString, 0, 0, std::move(s)); }
  static Value Binary(std::string bytes) { return Value(EdmType::kBinary, 0, 0, std::move(bytes)); }
  static Value Boolean(bool b) { return Value(EdmType::kBoolean, b ? 1 : 0, 0, {}); }
  static Value DateTime(int64_t ticks) { return Value(EdmType::kDateTime, ticks, 0, {}); }
  static Value Double(double d) { return Value(EdmType::kDouble, 0, d, {}); }
  static Value MakeGuid(const Guid& g) {
    return Value(EdmType::kGuid, 0, 0, std::string(g.begin(), g.end()));
  }
  static Value Int32(int32_t i) { return Value(EdmType::kInt32, i, 0, {}); }
  static Value Int64(int64_t i) { return Value(EdmType::kInt64, i, 0, {}); }

  // Overwrite this value in place, keeping the capacity of its bytes: for
  // decoders that reuse records (tools/replay's Kafka source recycles them,
  // so a string property costs no allocation once its slot has held one as
  // long). Same results as assigning Value::String(...) and the like.
  void SetString(std::string_view s) { SetBytes(EdmType::kString, s); }
  void SetBinary(std::string_view bytes) { SetBytes(EdmType::kBinary, bytes); }
  void SetGuid(const Guid& g) {
    SetBytes(EdmType::kGuid, std::string_view(reinterpret_cast<const char*>(g.data()), g.size()));
  }

  EdmType type() const { return type_; }
  // String and Binary payloads; the 16 raw bytes of a Guid.
  const std::string& bytes() const { return bytes_; }
  bool as_bool() const { return int_ != 0; }
  int32_t as_int32() const { return static_cast<int32_t>(int_); }
  int64_t as_int64() const { return int_; }
  int64_t as_ticks() const { return int_; }
  double as_double() const { return double_; }
  Guid as_guid() const;

  // Same type and same value (Doubles compare bitwise, so NaN == NaN here:
  // this is identity, not the $filter comparison).
  bool operator==(const Value& other) const;
  bool operator!=(const Value& other) const { return !(*this == other); }

  // Debug/CLI text: the value as Azure's JSON would carry it.
  std::string ToString() const;

 private:
  Value(EdmType t, int64_t i, double d, std::string b)
      : type_(t), int_(i), double_(d), bytes_(std::move(b)) {}
  void SetBytes(EdmType t, std::string_view b) {
    type_ = t;
    int_ = 0;
    double_ = 0;
    bytes_.assign(b);
  }

  EdmType type_ = EdmType::kString;
  int64_t int_ = 0;
  double double_ = 0;
  std::string bytes_;
};

struct Property {
  std::string name;
  Value value;
  bool operator==(const Property& o) const { return name == o.name && value == o.value; }
};

// An entity as callers see it. timestamp and etag are outputs: the engine
// sets them on every write and ignores what callers put there.
struct Entity {
  std::string partition_key;
  std::string row_key;
  int64_t timestamp = 0;  // DateTime ticks of the last write
  std::string etag;
  std::vector<Property> properties;  // user properties, in insertion order

  const Value* Find(std::string_view name) const;
  // Sets (replaces or appends) a property.
  Entity& Set(std::string name, Value value);
  bool Remove(std::string_view name);
};

// ---- DateTime ----------------------------------------------------------
inline constexpr int64_t kTicksPerSecond = 10'000'000;
// 1601-01-01T00:00:00Z and 9999-12-31T23:59:59.9999999Z, Azure's range.
inline constexpr int64_t kMinDateTimeTicks = 504'911'232'000'000'000;
inline constexpr int64_t kMaxDateTimeTicks = 3'155'378'975'999'999'999;
// Ticks of 1970-01-01T00:00:00Z.
inline constexpr int64_t kUnixEpochTicks = 621'355'968'000'000'000;

// ISO 8601 UTC: "2014-08-22T00:50:32Z", fractions up to 7 digits, "Z" or
// "+00:00" offsets. nullopt when malformed (range is checked by validation).
std::optional<int64_t> ParseDateTime(std::string_view text);
// "2014-08-22T00:50:32.1234567Z" (7 fractional digits always).
std::string FormatDateTime(int64_t ticks);
// Now, in ticks.
int64_t NowTicks();

// ---- Guid ----------------------------------------------------------------
// "c9da6455-213d-42c9-9a79-3e9149a57833" (case-insensitive).
std::optional<Guid> ParseGuid(std::string_view text);
std::string FormatGuid(const Guid& g);

}  // namespace sidetable
