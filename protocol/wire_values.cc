// Values, entities and change records on the wire.
#include <algorithm>

#include "engine/limits.h"
#include "protocol/wire.h"
#include "protocol/wire_codec.h"

namespace sidetable::wire {
namespace {

using codec::Be8;
using codec::FromBe8;

Status Bad(std::string_view name, const char* what) {
  return Status(Code::kInvalidInput, "property '" + std::string(name) + "': " + what);
}

}  // namespace

void WriteValue(msgpack::Writer& w, const Value& v) { codec::WriteTypedValue(w, v); }

Status ReadValueView(msgpack::Reader& r, std::string_view name, PropertyView* v) {
  std::string_view s;
  int64_t i;
  bool b;
  int8_t type;
  v->bytes_ = {};
  v->int_ = 0;
  v->double_ = 0;
  switch (r.Peek()) {
    case msgpack::Kind::kStr:
      if (!r.Str(&v->bytes_)) return Bad(name, "truncated string");
      v->type_ = EdmType::kString;
      return Status::OK();
    case msgpack::Kind::kBin:
      if (!r.Bin(&v->bytes_)) return Bad(name, "truncated binary");
      v->type_ = EdmType::kBinary;
      return Status::OK();
    case msgpack::Kind::kBool:
      if (!r.Bool(&b)) return Bad(name, "bad boolean");
      v->type_ = EdmType::kBoolean;
      v->int_ = b ? 1 : 0;
      return Status::OK();
    case msgpack::Kind::kDouble:
      if (!r.Double(&v->double_)) return Bad(name, "truncated double");
      v->type_ = EdmType::kDouble;
      return Status::OK();
    case msgpack::Kind::kInt:
    case msgpack::Kind::kUint:
      if (!r.Int(&i)) return Bad(name, "integer out of range");
      if (i < INT32_MIN || i > INT32_MAX) {
        return Bad(name, "a plain integer is Edm.Int32 and this one does not fit: send Int64 as ext type 1");
      }
      v->type_ = EdmType::kInt32;
      v->int_ = i;
      return Status::OK();
    case msgpack::Kind::kExt:
      if (!r.Ext(&type, &s)) return Bad(name, "truncated ext value");
      if (type == kExtInt64 && s.size() == 8) {
        v->type_ = EdmType::kInt64;
        v->int_ = static_cast<int64_t>(FromBe8(s));
      } else if (type == kExtDateTime && s.size() == 8) {
        v->type_ = EdmType::kDateTime;
        v->int_ = static_cast<int64_t>(FromBe8(s));
      } else if (type == kExtGuid && s.size() == 16) {
        v->type_ = EdmType::kGuid;
        v->bytes_ = s;
      } else {
        return Bad(name, "unknown ext type or wrong length");
      }
      return Status::OK();
    case msgpack::Kind::kNil:
      return Bad(name, "null is not a value (omit the property instead)");
    default:
      return Bad(name, "unsupported value kind (arrays and maps are not Edm types)");
  }
}

Status ReadValue(msgpack::Reader& r, std::string_view name, Value* v) {
  PropertyView view;
  ST_RETURN_IF_ERROR(ReadValueView(r, name, &view));
  *v = view.ToValue();
  return Status::OK();
}

namespace {

// The "props" map: the properties, then a nil for each name in `nulls`.
void WriteProps(msgpack::Writer& w, const std::vector<Property>& props,
                const std::vector<std::string_view>& nulls) {
  w.MapHeader(static_cast<uint32_t>(props.size() + nulls.size()));
  for (const auto& p : props) {
    w.Str(p.name);
    WriteValue(w, p.value);
  }
  for (std::string_view name : nulls) {
    w.Str(name);
    w.Nil();
  }
}

}  // namespace

namespace {

// The entity map, its fields always in this order: pk, rk, ts, etag, props
// (with a nil for each name in `nulls`).
struct EntityFields {
  bool pk = true, rk = true, ts = true, etag = true;
};
void WriteEntityMap(msgpack::Writer& w, const Entity& e, EntityFields f,
                    const std::vector<std::string_view>& nulls) {
  w.MapHeader(1 + f.pk + f.rk + f.ts + f.etag);
  if (f.pk) {
    w.Str("pk");
    w.Str(e.partition_key);
  }
  if (f.rk) {
    w.Str("rk");
    w.Str(e.row_key);
  }
  if (f.ts) {
    w.Str("ts");
    w.Ext(kExtDateTime, Be8(static_cast<uint64_t>(e.timestamp)));
  }
  if (f.etag) {
    w.Str("etag");
    w.Str(e.etag);
  }
  w.Str("props");
  WriteProps(w, e.properties, nulls);
}

}  // namespace

void WriteEntity(msgpack::Writer& w, const Entity& e, bool with_meta) {
  WriteEntityMap(w, e, EntityFields{true, true, with_meta, with_meta}, {});
}

void WriteSelectedEntity(msgpack::Writer& w, const Entity& e, const std::vector<std::string>& select) {
  EntityFields f{false, false, false, true};  // the ETag always, as metadata
  // Selected user properties the entity lacks, each once, in $select order.
  std::vector<std::string_view> nulls;
  for (const std::string& name : select) {
    if (name == "PartitionKey") f.pk = true;
    else if (name == "RowKey") f.rk = true;
    else if (name == "Timestamp") f.ts = true;
    else if (e.Find(name) == nullptr && std::find(nulls.begin(), nulls.end(), name) == nulls.end()) {
      nulls.push_back(name);
    }
  }
  WriteEntityMap(w, e, f, nulls);
}

namespace {

// The entity map read once for either result: Entity values (ReadEntity) or
// views into the bytes (ReadEntityRef, for query pages read in place). The
// sink gets the keys, ETag, timestamp, and each non-nil property checked.
// The entity map's known fields, each a bit: a repeated one is refused.
enum EntityField : uint32_t { kOtherField = 0, kPkField = 1, kRkField = 2, kETagField = 4, kTsField = 8, kPropsField = 16 };

EntityField ClassifyEntityField(std::string_view key) {
  if (key == "pk") return kPkField;
  if (key == "rk") return kRkField;
  if (key == "etag") return kETagField;
  if (key == "ts") return kTsField;
  if (key == "props") return kPropsField;
  return kOtherField;
}

template <typename Sink>
Status ReadEntityFields(msgpack::Reader& r, EntityRead mode, Sink& sink) {
  uint32_t n;
  if (!r.MapHeader(&n)) return Status(Code::kInvalidInput, "an entity must be a map");
  uint32_t seen = 0, present = ~0u;
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key, s;
    if (!r.Str(&key)) return Status(Code::kInvalidInput, "entity keys must be strings");
    const EntityField field = ClassifyEntityField(key);
    if ((seen & field) != 0) return Status(Code::kInvalidInput, "entity field '" + std::string(key) + "' repeated");
    seen |= field;
    // nil is absent, as for a request's fields (docs/protocol.md): a nil pk
    // or rk is then missing below.
    if (field != kOtherField && r.Peek() == msgpack::Kind::kNil) {
      r.Nil();
      present &= ~static_cast<uint32_t>(field);
      continue;
    }
    switch (field) {
      case kPkField:
      case kRkField:
        if (!r.Str(&s)) return Status(Code::kInvalidInput, std::string(key) + " must be a string");
        sink.Key(field == kPkField, s);
        break;
      case kETagField:
        if (!r.Str(&s)) return Status(Code::kInvalidInput, "etag must be a string");
        sink.ETag(s);
        break;
      case kTsField: {
        int8_t type;
        if (!r.Ext(&type, &s) || type != kExtDateTime || s.size() != 8) {
          return Status(Code::kInvalidInput, "ts must be a DateTime ext value");
        }
        sink.Timestamp(static_cast<int64_t>(FromBe8(s)));
        break;
      }
      case kPropsField: {
        uint32_t count;
        if (!r.MapHeader(&count)) return Status(Code::kInvalidInput, "props must be a map");
        // The declared count is untrusted: check it against the limit and
        // against what the bytes left can hold (a property takes at least two)
        // before reserving, so a small frame cannot make us allocate for
        // millions of properties.
        // A reply also holds a nil for each selected name the entity lacks, and
        // a $select may name 255 properties (ValidateSelect): before session
        // 38 a reply to one naming 253-255 was refused as malformed (the REST
        // gateway answered 500).
        const size_t limit = mode == EntityRead::kReply ? Limits::kMaxUserProperties + 3
                                                        : Limits::kMaxUserProperties;
        if (count > limit) {
          return Status(Code::kTooManyProperties,
                        "entity has " + std::to_string(count) +
                            " user properties; at most 252 (255 with the system properties)");
        }
        if (count > r.remaining() / 2) return Status(Code::kInvalidInput, "truncated props");
        sink.BeginProps(count, r.position());
        for (uint32_t j = 0; j < count; j++) {
          std::string_view name;
          if (!r.Str(&name)) return Status(Code::kInvalidInput, "property names must be strings");
          if (mode == EntityRead::kReply && r.Peek() == msgpack::Kind::kNil) {
            r.Nil();  // selected, and the entity lacks it: absent here too
            continue;
          }
          PropertyView v;
          ST_RETURN_IF_ERROR(ReadValueView(r, name, &v));
          sink.Property(name, v);
        }
        sink.EndProps(r.position());
        break;
      }
      case kOtherField:
        if (!r.Skip()) return Status(Code::kInvalidInput, "malformed entity field '" + std::string(key) + "'");
        break;
    }
  }
  const uint32_t given = seen & present;
  const bool has_pk = (given & kPkField) != 0, has_rk = (given & kRkField) != 0;
  if (mode == EntityRead::kRequest && (!has_pk || !has_rk)) {
    return Status(Code::kInvalidInput, "an entity needs pk and rk");
  }
  return Status::OK();
}

struct EntitySink {
  Entity* e;
  void Key(bool pk, std::string_view s) { (pk ? e->partition_key : e->row_key).assign(s); }
  void ETag(std::string_view s) { e->etag.assign(s); }
  void Timestamp(int64_t ticks) { e->timestamp = ticks; }
  void BeginProps(uint32_t count, const char*) { e->properties.reserve(count); }
  void Property(std::string_view name, const PropertyView& v) {
    e->properties.push_back({std::string(name), v.ToValue()});
  }
  void EndProps(const char*) {}
};

struct RefSink {
  EntityRef* e;
  const char* props_at = nullptr;
  void Key(bool pk, std::string_view s) { (pk ? e->pk : e->rk) = s; }
  void ETag(std::string_view s) { e->etag = s; }
  void Timestamp(int64_t ticks) { e->timestamp = ticks; }
  void BeginProps(uint32_t count, const char* at) {
    e->prop_entries = count;
    props_at = at;
  }
  void Property(std::string_view, const PropertyView&) {}
  void EndProps(const char* end) { e->props = std::string_view(props_at, static_cast<size_t>(end - props_at)); }
};

}  // namespace

Status ReadEntity(msgpack::Reader& r, Entity* e, EntityRead mode) {
  EntitySink sink{e};
  return ReadEntityFields(r, mode, sink);
}

Status codec::ReadEntityRef(msgpack::Reader& r, EntityRef* e) {
  *e = EntityRef{};
  RefSink sink{e};
  return ReadEntityFields(r, EntityRead::kReply, sink);
}

namespace {

// The non-nil properties of an indexed entity, in wire order. The page was
// checked when it was indexed, so a failure here means bytes changed since.
class RefProperties {
 public:
  explicit RefProperties(const EntityRef& e) : r_(e.props), left_(e.prop_entries) {}
  // False at the end, or with *status set when the bytes do not parse.
  bool Next(std::string_view* name, PropertyView* v, Status* status) {
    while (left_ > 0) {
      left_--;
      if (!r_.Str(name)) {
        *status = Status(Code::kInternal, "malformed reply: property name");
        return false;
      }
      if (r_.Peek() == msgpack::Kind::kNil) {
        r_.Nil();  // selected, and the entity lacks it
        continue;
      }
      *status = ReadValueView(r_, *name, v);
      return status->ok();
    }
    return false;
  }

 private:
  msgpack::Reader r_;
  uint32_t left_;
};

}  // namespace

bool FindProperty(const EntityRef& e, std::string_view name, PropertyView* out) {
  RefProperties props(e);
  std::string_view n;
  Status status;
  while (props.Next(&n, out, &status)) {
    if (n == name) return true;
  }
  return false;
}

Status EntityFromRef(const EntityRef& e, Entity* out) {
  out->partition_key.assign(e.pk);
  out->row_key.assign(e.rk);
  out->etag.assign(e.etag);
  out->timestamp = e.timestamp;
  out->properties.clear();
  out->properties.reserve(e.prop_entries);
  RefProperties props(e);
  std::string_view name;
  PropertyView v;
  Status status;
  while (props.Next(&name, &v, &status)) out->properties.push_back({std::string(name), v.ToValue()});
  return status;
}

}  // namespace sidetable::wire
