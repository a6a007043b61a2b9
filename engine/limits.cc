#include "engine/limits.h"

#include <cctype>
#include <string>

#include "engine/table_name.h"
#include "engine/utf8.h"

namespace sidetable {
namespace {

constexpr bool IsAsciiAlpha(uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
constexpr bool IsAsciiDigit(uint32_t c) { return c >= '0' && c <= '9'; }

size_t ValueSize(const Value& v) {
  switch (v.type()) {
    case EdmType::kString: return 4 + 2 * Utf16Length(v.bytes());
    case EdmType::kBinary: return 4 + v.bytes().size();
    case EdmType::kBoolean: return 1;
    case EdmType::kInt32: return 4;
    case EdmType::kGuid: return 16;
    default: return 8;  // DateTime, Double, Int64
  }
}

// The character rules, per code point: forbidden in a key; may start, or
// continue, a property name.
constexpr bool ForbiddenInKey(uint32_t c) {
  return c == '/' || c == '\\' || c == '#' || c == '?' || c < 0x20 || (c >= 0x7F && c <= 0x9F);
}

// Azure's names are C# identifiers: Unicode letters (and, after the first,
// digits, combining marks and connectors). Without a Unicode category table
// we accept non-ASCII code points as letters except the ranges that are
// certainly not identifier characters: C1 controls, Latin-1 punctuation and
// symbols, spaces and invisible format characters (a name that prints the
// same as another must not be a different property), the punctuation,
// symbol, arrow, box-drawing and emoji blocks, private use and
// non-characters (Azure refuses U+E000 by name); a combining mark cannot
// start a name. Letters of every script pass, and so do a few rarer symbols
// outside these blocks.
constexpr bool NonAsciiNameChar(uint32_t c, bool first) {
  if (c <= 0xBF) return c == 0xAA || c == 0xB5 || c == 0xBA;  // ª µ º are letters
  if (c == 0xD7 || c == 0xF7) return false;                   // × ÷
  if ((c >= 0x0300 && c <= 0x036F) || (c >= 0x1AB0 && c <= 0x1AFF) ||
      (c >= 0x1DC0 && c <= 0x1DFF) || (c >= 0x20D0 && c <= 0x20FF) ||
      (c >= 0xFE20 && c <= 0xFE2F) || (c >= 0xFE00 && c <= 0xFE0F)) {
    return !first;  // combining marks and variation selectors
  }
  if (c == 0x037E || c == 0x0387 || c == 0x061C || c == 0x1680 || c == 0x180E) return false;
  if (c >= 0x2000 && c <= 0x206F) return false;  // spaces, ZW and bidi controls, punctuation
  if (c >= 0x2190 && c <= 0x2BFF) return false;  // arrows, maths, technical, boxes, dingbats
  if (c >= 0x2E00 && c <= 0x2E7F) return false;  // supplemental punctuation
  if (c >= 0x3000 && c <= 0x303F) {              // CJK symbols and punctuation, but its letters
    return (c >= 0x3005 && c <= 0x3007) || (c >= 0x3021 && c <= 0x3029) ||
           (c >= 0x3031 && c <= 0x3035) || (c >= 0x3038 && c <= 0x303C);
  }
  if (c >= 0xD800 && c <= 0xF8FF) return false;  // surrogates, private use
  if (c >= 0xFDD0 && c <= 0xFDEF) return false;  // non-characters
  if (c >= 0xFE10 && c <= 0xFE1F) return false;  // vertical forms
  if (c >= 0xFE30 && c <= 0xFE6F)
    return !first && (c == 0xFE33 || c == 0xFE34 || (c >= 0xFE4D && c <= 0xFE4F));
  if (c == 0xFEFF) return false;  // byte-order mark
  if ((c >= 0xFF01 && c <= 0xFF0F) || (c >= 0xFF1A && c <= 0xFF20) ||
      (c >= 0xFF3B && c <= 0xFF40) || (c >= 0xFF5B && c <= 0xFF65)) {
    return c == 0xFF3F && !first;  // fullwidth punctuation; ＿ connects
  }
  if (c >= 0xFFF0 && c <= 0xFFFF) return false;    // specials
  if ((c & 0xFFFE) == 0xFFFE) return false;        // the non-characters of every plane
  if (c >= 0x1F000 && c <= 0x1FAFF) return false;  // mahjong, cards, enclosed signs, emoji
  if (c >= 0xE0000) return false;                  // tags, private use planes
  return true;
}
constexpr bool NameStart(uint32_t c) {
  return c < 0x80 ? IsAsciiAlpha(c) || c == '_' : NonAsciiNameChar(c, /*first=*/true);
}
constexpr bool NamePart(uint32_t c) {
  return c < 0x80 ? IsAsciiAlpha(c) || c == '_' || IsAsciiDigit(c)
                  : NonAsciiNameChar(c, /*first=*/false);
}

// The same rules as tables for ASCII bytes, so an ASCII key or name (nearly
// all of them) is checked a byte at a time without decoding code points.
struct AsciiClasses {
  bool key_forbidden[128] = {};
  bool name_start[128] = {};
  bool name_part[128] = {};
  constexpr AsciiClasses() {
    for (uint32_t c = 0; c < 128; c++) {
      key_forbidden[c] = ForbiddenInKey(c);
      name_start[c] = NameStart(c);
      name_part[c] = NamePart(c);
    }
  }
};
constexpr AsciiClasses kAscii;

// Valid UTF-8 and its length in UTF-16 units: an ASCII string is both at
// once, without validating or sizing it again.
bool MeasureUtf8(std::string_view s, bool* ascii, size_t* units) {
  *ascii = IsAscii(s);
  if (*ascii) {
    *units = s.size();
    return true;
  }
  if (!IsValidUtf8(s)) return false;
  *units = Utf16Length(s);
  return true;
}

// ValidateKey that also returns the key's length in UTF-16 units, so that
// ValidateEntity measures each key once. The checks, in this order: valid
// UTF-8, at most 1 KiB in UTF-16, no forbidden character.
Status ValidateKeySized(std::string_view key, std::string_view what, size_t* units) {
  bool ascii;
  if (!MeasureUtf8(key, &ascii, units)) {
    return Status(Code::kInvalidInput, std::string(what) + " is not valid UTF-8");
  }
  if (2 * *units > Limits::kMaxKeyBytes) {
    return Status(Code::kKeyValueTooLarge,
                  std::string(what) + " is larger than 1 KiB (UTF-16)");
  }
  uint32_t bad = 0;
  bool clean = true;
  if (ascii) {
    for (unsigned char c : key) {
      if (kAscii.key_forbidden[c]) {
        bad = c;
        clean = false;
        break;
      }
    }
  } else {
    clean = ForEachCodePoint(key, [&](uint32_t c) {
      bad = c;
      return !ForbiddenInKey(c);
    });
  }
  if (!clean) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "U+%04X", bad);
    return Status(Code::kOutOfRangeInput,
                  std::string(what) + " contains the forbidden character " + buf);
  }
  return Status::OK();
}

// ValidatePropertyName that also returns the name's length in UTF-16 units.
// The checks, in this order: not empty, valid UTF-8, at most 255 UTF-16
// units, an identifier, not reserved.
Status ValidatePropertyNameSized(std::string_view name, size_t* units) {
  if (name.empty()) return Status(Code::kPropertyNameInvalid, "empty property name");
  bool ascii;
  if (!MeasureUtf8(name, &ascii, units)) {
    return Status(Code::kPropertyNameInvalid, "property name is not valid UTF-8");
  }
  if (*units > Limits::kMaxPropertyNameChars) {
    return Status(Code::kPropertyNameTooLong, "property name longer than 255 characters: " +
                                                  std::string(Utf8Prefix(name, 32)) + "...");
  }
  bool ok = true;
  if (ascii) {
    ok = kAscii.name_start[static_cast<unsigned char>(name[0])];
    for (size_t i = 1; ok && i < name.size(); i++)
      ok = kAscii.name_part[static_cast<unsigned char>(name[i])];
  } else {
    bool first = true;
    ok = ForEachCodePoint(name, [&](uint32_t c) {
      const bool good = first ? NameStart(c) : NamePart(c);
      first = false;
      return good;
    });
  }
  if (!ok) {
    return Status(Code::kPropertyNameInvalid,
                  "property name '" + std::string(name) + "' is not a valid identifier");
  }
  // Azure's system properties; an ETag is metadata, not a property, so a
  // user property may be called ETag (as in Azure). `odata.` names are the
  // REST format's metadata.
  if (name == "PartitionKey" || name == "RowKey" || name == "Timestamp" ||
      name.substr(0, 6) == "odata.") {
    return Status(Code::kPropertyNameInvalid,
                  "property name '" + std::string(name) + "' is reserved");
  }
  return Status::OK();
}

// ValidateValue that also returns the value's size in Azure's accounting, so
// each string is measured once per write.
Status ValidateValueSized(std::string_view name, const Value& v, size_t* size) {
  *size = 0;
  switch (v.type()) {
    case EdmType::kString: {
      bool ascii;
      size_t units;
      if (!MeasureUtf8(v.bytes(), &ascii, &units)) {
        return Status(Code::kInvalidInput,
                      "property '" + std::string(name) + "' is not valid UTF-8");
      }
      *size = 4 + 2 * units;
      if (2 * units > Limits::kMaxValueBytes) {
        return Status(Code::kPropertyValueTooLarge,
                      "property '" + std::string(name) + "' is larger than 64 KiB");
      }
      return Status::OK();
    }
    case EdmType::kBinary:
      if (v.bytes().size() > Limits::kMaxValueBytes) {
        return Status(Code::kPropertyValueTooLarge,
                      "property '" + std::string(name) + "' is larger than 64 KiB");
      }
      break;
    case EdmType::kDateTime:
      if (v.as_ticks() < kMinDateTimeTicks || v.as_ticks() > kMaxDateTimeTicks) {
        return Status(Code::kOutOfRangeInput, "property '" + std::string(name) +
                                                  "' is outside 1601-01-01..9999-12-31");
      }
      break;
    case EdmType::kGuid:
      if (v.bytes().size() != 16) {
        return Status(Code::kInvalidInput, "property '" + std::string(name) + "' is not a Guid");
      }
      break;
    case EdmType::kInt32:
      if (v.as_int64() != static_cast<int32_t>(v.as_int64())) {
        return Status(Code::kOutOfRangeInput, "property '" + std::string(name) + "' is out of Int32 range");
      }
      break;
    default:
      break;
  }
  *size = ValueSize(v);
  return Status::OK();
}

}  // namespace

Status ValidateKey(std::string_view key, std::string_view what) {
  size_t units;
  return ValidateKeySized(key, what, &units);
}

Status ValidatePropertyName(std::string_view name) {
  size_t units;
  return ValidatePropertyNameSized(name, &units);
}

Status ValidateSelect(const std::vector<std::string>& select) {
  if (select.size() > Limits::kMaxUserProperties + 3) {
    return Status(Code::kInvalidInput, "$select names more than 255 properties");
  }
  for (const auto& name : select) {
    if (name == "PartitionKey" || name == "RowKey" || name == "Timestamp") continue;
    Status s = ValidatePropertyName(name);
    if (!s.ok()) return Status(Code::kInvalidInput, "$select: " + s.message());
  }
  return Status::OK();
}

Status ValidateValue(std::string_view name, const Value& v) {
  size_t size;
  return ValidateValueSized(name, v, &size);
}

size_t EntitySize(const Entity& e) {
  size_t size = 4 + 2 * (Utf16Length(e.partition_key) + Utf16Length(e.row_key));
  for (const auto& p : e.properties) size += 8 + 2 * Utf16Length(p.name) + ValueSize(p.value);
  return size;
}

size_t EntityPayloadBytes(const Entity& e) {
  size_t size = e.partition_key.size() + e.row_key.size();
  for (const auto& p : e.properties) {
    const bool variable = p.value.type() == EdmType::kString || p.value.type() == EdmType::kBinary;
    size += p.name.size() + (variable ? p.value.bytes().size() : ValueSize(p.value));
  }
  return size;
}

Status ValidateEntity(const Entity& e, size_t* size_out) {
  size_t pk_units, rk_units;
  ST_RETURN_IF_ERROR(ValidateKeySized(e.partition_key, "PartitionKey", &pk_units));
  ST_RETURN_IF_ERROR(ValidateKeySized(e.row_key, "RowKey", &rk_units));
  if (e.properties.size() > Limits::kMaxUserProperties) {
    return Status(Code::kTooManyProperties,
                  "entity has " + std::to_string(e.properties.size()) +
                      " user properties; at most 252 (255 with the system properties)");
  }
  size_t size = 4 + 2 * (pk_units + rk_units);
  for (size_t i = 0; i < e.properties.size(); i++) {
    const Property& p = e.properties[i];
    size_t name_units;
    ST_RETURN_IF_ERROR(ValidatePropertyNameSized(p.name, &name_units));
    size_t value_size;
    ST_RETURN_IF_ERROR(ValidateValueSized(p.name, p.value, &value_size));
    size += 8 + 2 * name_units + value_size;
    for (size_t j = 0; j < i; j++) {
      if (e.properties[j].name == p.name) {
        return Status(Code::kInvalidInput, "property '" + p.name + "' appears twice");
      }
    }
  }
  if (size > Limits::kMaxEntityBytes) {
    return Status(Code::kEntityTooLarge, "entity is larger than 1 MiB");
  }
  if (size_out != nullptr) *size_out = size;
  return Status::OK();
}

Status ValidateTableName(std::string_view name) {
  if (name.size() < Limits::kMinTableName || name.size() > Limits::kMaxTableName) {
    return Status(Code::kOutOfRangeInput, "table name must be 3 to 63 characters: '" +
                                              std::string(Utf8Prefix(name, 80)) + "'");
  }
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      return Status(Code::kInvalidResourceName,
                    "table name must be alphanumeric: '" + std::string(name) + "'");
    }
  }
  if (std::isdigit(static_cast<unsigned char>(name[0]))) {
    return Status(Code::kInvalidResourceName,
                  "table name must not start with a digit: '" + std::string(name) + "'");
  }
  if (TableNameEquals(name, "tables")) {
    return Status(Code::kInvalidResourceName, "table name 'tables' is reserved");
  }
  return Status::OK();
}

Status ValidateCaller(std::string_view caller) {
  if (caller.size() > Limits::kMaxCallerBytes) {
    return Status(Code::kInvalidInput, "caller is longer than " + std::to_string(Limits::kMaxCallerBytes) +
                                           " bytes (" + std::to_string(caller.size()) + ")");
  }
  if (!IsValidUtf8(caller)) return Status(Code::kInvalidInput, "caller is not valid UTF-8");
  const bool control = !ForEachCodePoint(caller, [](uint32_t cp) { return !(cp < 0x20 || (cp >= 0x7F && cp <= 0x9F)); });
  if (control) return Status(Code::kInvalidInput, "caller contains a control character");
  return Status::OK();
}

Status ValidateClientRequestId(std::string_view id) {
  if (id.empty() || id.size() > Limits::kMaxClientRequestIdBytes) {
    return Status(Code::kInvalidInput, "a client request id has 1 to " +
                                           std::to_string(Limits::kMaxClientRequestIdBytes) +
                                           " characters, got " + std::to_string(id.size()));
  }
  for (char c : id) {
    if (c < 0x21 || c > 0x7E) {
      return Status(Code::kInvalidInput,
                    "a client request id holds printable ASCII characters only (no spaces)");
    }
  }
  return Status::OK();
}

}  // namespace sidetable
