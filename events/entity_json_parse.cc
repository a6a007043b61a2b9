// JSON → Entity and JSON → Batch, on simdjson's DOM (which validates UTF-8
// and decodes escapes, surrogate pairs included).
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <unordered_set>
#include <vector>

#include "events/base64.h"
#include "events/entity_json.h"
#include "events/entity_json_dom.h"

namespace sidetable::json {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

constexpr std::string_view kTypeSuffix = "@odata.type";

Status Invalid(std::string message) { return Status(Code::kInvalidInput, std::move(message)); }

Status PropertyError(std::string_view name, std::string_view what) {
  return Invalid("property '" + std::string(name) + "': " + std::string(what));
}

std::string_view TypeDescription(element_type t) {
  switch (t) {
    case element_type::ARRAY: return "an array";
    case element_type::OBJECT: return "an object";
    case element_type::INT64:
    case element_type::UINT64: return "an integer";
    case element_type::DOUBLE: return "a number";
    case element_type::STRING: return "a string";
    case element_type::BOOL: return "a boolean";
    case element_type::NULL_VALUE: return "null";
  }
  return "a value";
}

Status WrongKind(std::string_view name, EdmType type, std::string_view expected, element_type got) {
  return PropertyError(name, std::string(EdmTypeName(type)) + " expects " + std::string(expected) +
                                 ", got " + std::string(TypeDescription(got)));
}

// A JSON number's text: [-]digits[.digits][(e|E)[+|-]digits]. Not "nan" or
// "inf", which from_chars would also read.
bool IsDecimalText(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && s[i] == '-') i++;
  const size_t digits = i;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') i++;
  if (i == digits) return false;
  if (i < s.size() && s[i] == '.') {
    const size_t frac = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') i++;
    if (i == frac) return false;
  }
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) i++;
    const size_t exp = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') i++;
    if (i == exp) return false;
  }
  return i == s.size();
}

// Decimal text (IsDecimalText) as the nearest double. A magnitude below the
// smallest denormal rounds to a zero of its sign, as a JSON number does; one
// beyond the largest double is false: from_chars leaves *d alone then, and
// taking it would store 0 for "1e400" (found by an outside test).
bool ParseDoubleText(std::string_view s, double* d) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *d);
  if (end != s.data() + s.size()) return false;
  if (ec == std::errc()) return true;
  if (ec != std::errc::result_out_of_range) return false;
  // Out of range: strtod tells underflow (a zero or denormal of the
  // text's sign) from overflow (±HUGE_VAL). The text is plain decimal, and
  // the process keeps the "C" numeric locale.
  const double v = std::strtod(std::string(s).c_str(), nullptr);
  if (std::isinf(v)) return false;  // beyond the largest double
  *d = v;
  return true;
}

// The value of property `name`; `type` is its annotation, if any.
Status ConvertValue(std::string_view name, element el, const std::optional<EdmType>& type, Value* out) {
  const element_type kind = el.type();
  if (kind == element_type::NULL_VALUE) {
    return PropertyError(name, "null is not a value (leave the property out instead)");
  }
  if (kind == element_type::ARRAY || kind == element_type::OBJECT) {
    return PropertyError(name, "nested arrays and objects are not values");
  }
  if (!type) {
    switch (kind) {
      case element_type::STRING:
        out->SetString(el.get_string().value_unsafe());
        return Status::OK();
      case element_type::BOOL: *out = Value::Boolean(el.get_bool().value_unsafe()); return Status::OK();
      case element_type::DOUBLE: *out = Value::Double(el.get_double().value_unsafe()); return Status::OK();
      case element_type::INT64: {
        const int64_t v = el.get_int64().value_unsafe();
        if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
          *out = Value::Int32(static_cast<int32_t>(v));
        } else {
          *out = Value::Int64(v);
        }
        return Status::OK();
      }
      case element_type::UINT64:
        return PropertyError(name, std::to_string(el.get_uint64().value_unsafe()) +
                                       " is out of the Edm.Int64 range");
      default: break;
    }
    return PropertyError(name, "unsupported value");
  }

  switch (*type) {
    case EdmType::kString:
      if (kind != element_type::STRING) return WrongKind(name, *type, "a string", kind);
      out->SetString(el.get_string().value_unsafe());
      return Status::OK();
    case EdmType::kBoolean:
      if (kind != element_type::BOOL) return WrongKind(name, *type, "true or false", kind);
      *out = Value::Boolean(el.get_bool().value_unsafe());
      return Status::OK();
    case EdmType::kInt32:
      if (kind == element_type::INT64) {
        const int64_t v = el.get_int64().value_unsafe();
        if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
          return PropertyError(name, std::to_string(v) + " is out of the Edm.Int32 range");
        }
        *out = Value::Int32(static_cast<int32_t>(v));
        return Status::OK();
      }
      if (kind == element_type::UINT64) {
        return PropertyError(name, std::to_string(el.get_uint64().value_unsafe()) +
                                       " is out of the Edm.Int32 range");
      }
      return WrongKind(name, *type, "an integer", kind);
    case EdmType::kInt64: {
      if (kind == element_type::INT64) {
        *out = Value::Int64(el.get_int64().value_unsafe());
        return Status::OK();
      }
      if (kind == element_type::UINT64) {
        return PropertyError(name, std::to_string(el.get_uint64().value_unsafe()) +
                                       " is out of the Edm.Int64 range");
      }
      if (kind != element_type::STRING) return WrongKind(name, *type, "a decimal string or an integer", kind);
      const std::string_view s = el.get_string().value_unsafe();
      int64_t v = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
        return PropertyError(name, "'" + std::string(s) + "' is not an Edm.Int64 (a decimal integer in range)");
      }
      *out = Value::Int64(v);
      return Status::OK();
    }
    case EdmType::kDouble:
      if (kind == element_type::DOUBLE) {
        *out = Value::Double(el.get_double().value_unsafe());
      } else if (kind == element_type::INT64) {
        *out = Value::Double(static_cast<double>(el.get_int64().value_unsafe()));
      } else if (kind == element_type::UINT64) {
        *out = Value::Double(static_cast<double>(el.get_uint64().value_unsafe()));
      } else if (kind == element_type::STRING) {
        const std::string_view s = el.get_string().value_unsafe();
        if (s == "NaN") {
          *out = Value::Double(std::numeric_limits<double>::quiet_NaN());
        } else if (s == "Infinity") {
          *out = Value::Double(std::numeric_limits<double>::infinity());
        } else if (s == "-Infinity") {
          *out = Value::Double(-std::numeric_limits<double>::infinity());
        } else if (double d = 0; IsDecimalText(s) && ParseDoubleText(s, &d)) {
          // A number written as a string ("-0", "1.5"), as the SDKs send
          // values that JSON numbers would lose (the sign of zero).
          *out = Value::Double(d);
        } else if (IsDecimalText(s)) {
          return PropertyError(
              name, "'" + std::string(s.substr(0, 64)) +
                        "' is out of the range of an Edm.Double (beyond ±1.7976931348623157E+308)");
        } else {
          return PropertyError(name, "'" + std::string(s) +
                                         "' is not an Edm.Double (a number, \"NaN\", \"Infinity\" or \"-Infinity\")");
        }
      } else {
        return WrongKind(name, *type, "a number", kind);
      }
      return Status::OK();
    case EdmType::kBinary: {
      if (kind != element_type::STRING) return WrongKind(name, *type, "a base64 string", kind);
      auto bytes = Base64Decode(el.get_string().value_unsafe());
      if (!bytes) return PropertyError(name, "bad base64 for Edm.Binary");
      *out = Value::Binary(std::move(*bytes));
      return Status::OK();
    }
    case EdmType::kDateTime: {
      if (kind != element_type::STRING) return WrongKind(name, *type, "an ISO 8601 string", kind);
      const std::string_view s = el.get_string().value_unsafe();
      auto ticks = ParseDateTime(s);
      if (!ticks) {
        return PropertyError(name, "'" + std::string(s) +
                                       "' is not an Edm.DateTime (ISO 8601 UTC, at most 7 fractional digits)");
      }
      if (*ticks < kMinDateTimeTicks || *ticks > kMaxDateTimeTicks) {
        return PropertyError(name, "'" + std::string(s) + "' is outside 1601-01-01 .. 9999-12-31");
      }
      *out = Value::DateTime(*ticks);
      return Status::OK();
    }
    case EdmType::kGuid: {
      if (kind != element_type::STRING) return WrongKind(name, *type, "a string", kind);
      const std::string_view s = el.get_string().value_unsafe();
      auto g = ParseGuid(s);
      if (!g) return PropertyError(name, "'" + std::string(s) + "' is not an Edm.Guid");
      out->SetGuid(*g);
      return Status::OK();
    }
  }
  return PropertyError(name, "unsupported type");
}

Status KeyFromElement(std::string_view name, element el, const std::optional<EdmType>& type,
                      std::string* out) {
  if (type && *type != EdmType::kString) return PropertyError(name, "must be Edm.String");
  if (el.type() != element_type::STRING) {
    return PropertyError(name, "must be a string, got " + std::string(TypeDescription(el.type())));
  }
  out->assign(el.get_string().value_unsafe());
  return Status::OK();
}

// A key's length and five of its bytes (the first two, the middle one and
// the last two) in one word: two keys of an entity seldom share it, so the
// scans below compare one word per key and compare the keys themselves only
// on a match. Before, every comparison of two keys of the same length went
// to memcmp, and the duplicate check was the largest item of reading an
// entity (codec_bench, change events).
inline uint64_t KeyWord(std::string_view key) {
  const size_t n = key.size();
  if (n == 0) return 0;
  const auto* p = reinterpret_cast<const unsigned char*>(key.data());
  return static_cast<uint64_t>(std::min<size_t>(n, 0xffff)) | (uint64_t{p[0]} << 16) |
         (uint64_t{p[n > 1]} << 24) | (uint64_t{p[n / 2]} << 32) |
         (uint64_t{p[n - 1 - (n > 1)]} << 40) | (uint64_t{p[n - 1]} << 48);
}

// The keys of one object seen so far: a scan of a fixed array while the
// object is small (every entity of a change event: no allocation), a hash
// set past that, so that 255 properties with their annotations stay linear.
class SeenKeys {
 public:
  // False when `key` was seen before.
  bool Insert(std::string_view key) {
    if (n_ <= kSmall) {
      const uint64_t w = KeyWord(key);
      const uint64_t bit = Bit(w);
      if (mask_ & bit) {  // perhaps seen: look
        for (size_t i = 0; i < n_; i++) {
          if (words_[i] == w && small_[i] == key) return false;
        }
      }
      if (n_ < kSmall) {
        mask_ |= bit;
        words_[n_] = w;
        small_[n_++] = key;
        return true;
      }
      set_.insert(small_.begin(), small_.end());
      n_ = kSmall + 1;  // from now on the set
    }
    return set_.insert(key).second;
  }
  bool Contains(std::string_view key) const {
    if (n_ > kSmall) return set_.count(key) != 0;
    const uint64_t w = KeyWord(key);
    if (!(mask_ & Bit(w))) return false;
    for (size_t i = 0; i < n_; i++) {
      if (words_[i] == w && small_[i] == key) return true;
    }
    return false;
  }

 private:
  // One of 64 bits per word: a key whose bit is clear was not seen, which
  // spares most scans (a one-word Bloom filter).
  static uint64_t Bit(uint64_t word) {
    return uint64_t{1} << ((word * 0x9E3779B97F4A7C15ull) >> 58);
  }

  static constexpr size_t kSmall = 24;
  uint64_t mask_ = 0;
  std::array<std::string_view, kSmall> small_;
  std::array<uint64_t, kSmall> words_;
  size_t n_ = 0;
  std::unordered_set<std::string_view> set_;
};

// The type annotations of one object (usually none or a few), looked up by
// a scan of their names' KeyWord.
struct Annotation {
  std::string_view name;
  uint64_t word;
  EdmType type;
};
using Annotations = std::vector<Annotation>;

const EdmType* FindType(const Annotations& types, std::string_view name) {
  const uint64_t w = KeyWord(name);
  for (const Annotation& a : types) {
    if (a.word == w && a.name == name) return &a.type;
  }
  return nullptr;
}

}  // namespace

Status EntityFromJsonElement(simdjson::dom::element el, Entity* e, bool with_timestamp) {
  simdjson::dom::object obj;
  if (el.get_object().get(obj) != simdjson::SUCCESS) {
    return Invalid("an entity must be a JSON object, got " + std::string(TypeDescription(el.type())));
  }
  SeenKeys keys;
  // Reused per thread (an entity holds no nested entity, so no call is
  // inside another); views into this document only until the next call.
  thread_local Annotations types;
  types.clear();
  // Pass 1: every key once, and the type annotations. (One pass that reads
  // each annotation with its value was measured: no fewer instructions, as
  // the second walk over simdjson's tape is cheap; codec_bench, session 36.)
  for (auto field : obj) {
    const std::string_view key = field.key;
    if (!keys.Insert(key)) return Invalid("duplicate key '" + std::string(key) + "'");
    if (key.size() > kTypeSuffix.size() && key.ends_with(kTypeSuffix)) {
      const std::string_view name = key.substr(0, key.size() - kTypeSuffix.size());
      std::string_view type_name;
      if (field.value.get_string().get(type_name) != simdjson::SUCCESS) {
        return PropertyError(name, "the type annotation must be a string");
      }
      auto type = ParseEdmType(type_name);
      if (!type) return PropertyError(name, "unknown type annotation '" + std::string(type_name) + "'");
      types.push_back(Annotation{name, KeyWord(name), *type});
    }
  }
  {
    // The first orphan by name, as a sorted map would meet it.
    const std::string_view* orphan = nullptr;
    for (const Annotation& a : types) {
      if (!keys.Contains(a.name) && (orphan == nullptr || a.name < *orphan)) orphan = &a.name;
    }
    if (orphan != nullptr) return PropertyError(*orphan, "type annotation without a value");
  }
  // Pass 2: the values, written over what *e held (a reused entity keeps
  // the storage of its keys, ETag and properties: event.cc).
  e->timestamp = 0;
  e->etag.clear();
  std::vector<Property>& props = e->properties;
  props.reserve(obj.size());  // a no-op for a reused entity as large
  size_t count = 0;
  bool have_pk = false, have_rk = false;
  for (auto field : obj) {
    const std::string_view key = field.key;
    if (key.size() > kTypeSuffix.size() && key.ends_with(kTypeSuffix)) continue;
    std::optional<EdmType> type;
    if (const EdmType* t = types.empty() ? nullptr : FindType(types, key)) type = *t;
    if (key == "PartitionKey") {
      ST_RETURN_IF_ERROR(KeyFromElement(key, field.value, type, &e->partition_key));
      have_pk = true;
    } else if (key == "RowKey") {
      ST_RETURN_IF_ERROR(KeyFromElement(key, field.value, type, &e->row_key));
      have_rk = true;
    } else if (key == "Timestamp") {
      // Input from users: the server sets it. Images in change events: kept.
      if (!with_timestamp) continue;
      std::string_view text;
      std::optional<int64_t> ticks;
      if (field.value.get_string().get(text) == simdjson::SUCCESS) ticks = ParseDateTime(text);
      if (!ticks) return PropertyError(key, "must be an ISO 8601 UTC date-time string");
      e->timestamp = *ticks;
    } else if (key == "odata.etag") {
      std::string_view etag;
      if (field.value.get_string().get(etag) != simdjson::SUCCESS) {
        return PropertyError(key, "must be a string");
      }
      // The protocol reads an empty ETag as no condition: an input whose
      // ETag was lost on the way would replace whatever is stored.
      if (etag.empty() && !with_timestamp) {
        return PropertyError(key,
                             "an empty ETag is no condition: give the entity's ETag, or leave the "
                             "property out (the condition is then --if-match, else *)");
      }
      e->etag.assign(etag);
    } else if (key.starts_with("odata.")) {
      continue;  // metadata of other tools (odata.metadata, ...)
    } else {
      if (count == props.size()) props.emplace_back();
      Property& p = props[count++];
      p.name.assign(key);
      ST_RETURN_IF_ERROR(ConvertValue(key, field.value, type, &p.value));
    }
  }
  props.resize(count);
  if (!have_pk) return Invalid("property 'PartitionKey' is missing");
  if (!have_rk) return Invalid("property 'RowKey' is missing");
  return Status::OK();
}

namespace {

Status Parse(simdjson::dom::parser& parser, const simdjson::padded_string& text, element* out) {
  auto error = parser.parse(text).get(*out);
  if (error != simdjson::SUCCESS) return Invalid(std::string("invalid JSON: ") + simdjson::error_message(error));
  return Status::OK();
}

Status OperationFromElement(element el, Operation* op) {
  simdjson::dom::object obj;
  if (el.get_object().get(obj) != simdjson::SUCCESS) {
    return Invalid("must be an object {\"op\", \"entity\", \"ifMatch\"?}");
  }
  std::optional<std::string> if_match;
  bool have_op = false, have_entity = false;
  for (auto field : obj) {
    const std::string_view key = field.key;
    if (key == "op") {
      std::string_view name;
      if (field.value.get_string().get(name) != simdjson::SUCCESS || !ParseOpKind(name, &op->kind)) {
        return Invalid("\"op\" must be one of Insert, Update, Merge, Delete, InsertOrReplace, InsertOrMerge");
      }
      have_op = true;
    } else if (key == "entity") {
      ST_RETURN_IF_ERROR(EntityFromJsonElement(field.value, &op->entity, false));
      have_entity = true;
    } else if (key == "ifMatch") {
      std::string_view v;
      if (field.value.get_string().get(v) != simdjson::SUCCESS) return Invalid("\"ifMatch\" must be a string");
      // Empty would be no condition on the wire (see EntityFromJsonElement).
      if (v.empty())
        return Invalid("\"ifMatch\" is empty: give an ETag, or \"*\" for an unconditional write");
      if_match = std::string(v);
    } else {
      return Invalid("unknown field '" + std::string(key) + "' (expected op, entity, ifMatch)");
    }
  }
  if (!have_op) return Invalid("\"op\" is missing");
  if (!have_entity) return Invalid("\"entity\" is missing");
  const bool conditional =
      op->kind == OpKind::kUpdate || op->kind == OpKind::kMerge || op->kind == OpKind::kDelete;
  if (!conditional && if_match) {
    return Invalid("\"ifMatch\" is only for Update, Merge and Delete");
  }
  if (conditional) {
    op->if_match = if_match ? *if_match : (op->entity.etag.empty() ? "*" : op->entity.etag);
  }
  op->entity.etag.clear();
  if (op->kind == OpKind::kDelete) op->entity.properties.clear();
  return Status::OK();
}

}  // namespace

Result<Entity> ParseEntityJson(std::string_view json) {
  simdjson::dom::parser parser;
  simdjson::padded_string text(json);
  element doc;
  ST_RETURN_IF_ERROR(Parse(parser, text, &doc));
  Entity e;
  ST_RETURN_IF_ERROR(EntityFromJsonElement(doc, &e, false));
  return e;
}

Result<Batch> ParseBatchJson(std::string_view json, const std::string& table) {
  simdjson::dom::parser parser;
  simdjson::padded_string text(json);
  element doc;
  ST_RETURN_IF_ERROR(Parse(parser, text, &doc));
  simdjson::dom::array ops;
  if (doc.get_array().get(ops) != simdjson::SUCCESS) {
    return Invalid("a batch must be a JSON array of operations");
  }
  Batch batch(table);
  int index = 0;
  for (element el : ops) {
    Operation op;
    Status s = OperationFromElement(el, &op);
    if (!s.ok()) return Status(s.code(), "operation " + std::to_string(index) + ": " + s.message(), index);
    batch.Add(op.kind, std::move(op.entity), std::move(op.if_match));
    index++;
  }
  if (batch.size() == 0) return Invalid("a batch needs at least one operation");
  return batch;
}

}  // namespace sidetable::json
