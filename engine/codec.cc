#include "engine/internal/codec.h"

#include "engine/etag.h"
#include "engine/row_view.h"

#include <charconv>
#include <cstring>

#include "engine/utf8.h"

namespace sidetable::codec {
namespace {

Status Corrupt(const char* what) {
  return Status(Code::kInternal, std::string("corrupt row: ") + what);
}

uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Writers through a pointer into space the caller sized: EncodeRow sizes a
// row once and writes it with these (appending field by field, a capacity
// check and a call per varint, was ~2,200 instructions a 1 KiB row;
// callgrind, docs/performance.md, session 31). The Put* appenders below use
// them too, so each encoding is written once.
constexpr size_t kMaxVarint64 = 10;

char* WriteVarint64(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

char* WriteFixed64(char* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = static_cast<char>(v >> (8 * i));
  return p + 8;
}

char* WriteBytes(char* p, std::string_view s) {
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// At most what WriteValue writes for `v`.
size_t MaxValueBytes(const Value& v) {
  switch (v.type()) {
    case EdmType::kString:
    case EdmType::kBinary:
      return 1 + kMaxVarint64 + v.bytes().size();
    case EdmType::kGuid:
      return 1 + v.bytes().size();
    default:
      return 1 + kMaxVarint64;  // Boolean 1, DateTime and Double 8, Int32/Int64 a varint
  }
}

char* WriteValue(char* p, const Value& v) {
  *p++ = static_cast<char>(v.type());
  switch (v.type()) {
    case EdmType::kString:
    case EdmType::kBinary:
      return WriteBytes(WriteVarint64(p, v.bytes().size()), v.bytes());
    case EdmType::kGuid:
      return WriteBytes(p, v.bytes());
    case EdmType::kBoolean:
      *p++ = v.as_bool() ? 1 : 0;
      return p;
    case EdmType::kDateTime:
      return WriteFixed64(p, static_cast<uint64_t>(v.as_ticks()));
    case EdmType::kDouble: {
      uint64_t bits;
      const double d = v.as_double();
      std::memcpy(&bits, &d, sizeof bits);
      return WriteFixed64(p, bits);
    }
    case EdmType::kInt32:
    case EdmType::kInt64:
      return WriteVarint64(p, ZigZag(v.as_int64()));
  }
  return p;
}

// Reads one typed value in place (strings point into the row).
bool DecodeValueView(Reader* r, PropertyView* out) {
  uint8_t type;
  if (!r->Byte(&type)) return false;
  uint64_t u;
  out->type_ = static_cast<EdmType>(type);
  switch (out->type_) {
    case EdmType::kString:
    case EdmType::kBinary:
      return r->LengthPrefixed(&out->bytes_);
    case EdmType::kGuid:
      return r->Bytes(16, &out->bytes_);
    case EdmType::kBoolean: {
      uint8_t b;
      if (!r->Byte(&b) || b > 1) return false;
      out->int_ = b;
      return true;
    }
    case EdmType::kDateTime:
      if (!r->Fixed64(&u)) return false;
      out->int_ = static_cast<int64_t>(u);
      return true;
    case EdmType::kDouble:
      if (!r->Fixed64(&u)) return false;
      std::memcpy(&out->double_, &u, sizeof out->double_);
      return true;
    case EdmType::kInt32:
      if (!r->Varint64(&u)) return false;
      out->int_ = static_cast<int32_t>(UnZigZag(u));
      return true;
    case EdmType::kInt64:
      if (!r->Varint64(&u)) return false;
      out->int_ = UnZigZag(u);
      return true;
  }
  return false;
}

bool Selected(const std::vector<std::string>* select, std::string_view name) {
  if (select == nullptr) return true;
  for (const auto& s : *select) {
    if (s == name) return true;
  }
  return false;
}

}  // namespace

void PutVarint64(std::string* dst, uint64_t v) {
  char buf[kMaxVarint64];
  dst->append(buf, static_cast<size_t>(WriteVarint64(buf, v) - buf));
}

void PutFixed64(std::string* dst, uint64_t v) {
  char buf[8];
  dst->append(buf, static_cast<size_t>(WriteFixed64(buf, v) - buf));
}

void PutFixed32BE(std::string* dst, uint32_t v) {
  char buf[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                 static_cast<char>(v >> 8), static_cast<char>(v)};
  dst->append(buf, 4);
}

void PutFixed64BE(std::string* dst, uint64_t v) {
  char buf[8];
  for (int i = 0; i < 8; i++) buf[i] = static_cast<char>(v >> (56 - 8 * i));
  dst->append(buf, 8);
}

void PutLengthPrefixed(std::string* dst, std::string_view s) {
  PutVarint64(dst, s.size());
  dst->append(s.data(), s.size());
}

uint32_t DecodeFixed32BE(const char* p) {
  auto u = reinterpret_cast<const uint8_t*>(p);
  return uint32_t{u[0]} << 24 | uint32_t{u[1]} << 16 | uint32_t{u[2]} << 8 | u[3];
}

uint64_t DecodeFixed64BE(const char* p) {
  auto u = reinterpret_cast<const uint8_t*>(p);
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | u[i];
  return v;
}

bool Reader::Varint64(uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && p_ < end_; shift += 7) {
    auto byte = static_cast<uint8_t>(*p_++);
    result |= uint64_t{byte & 0x7Fu} << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

bool Reader::Fixed64(uint64_t* v) {
  if (remaining() < 8) return false;
  uint64_t r = 0;
  for (int i = 0; i < 8; i++) r |= uint64_t{static_cast<uint8_t>(p_[i])} << (8 * i);
  p_ += 8;
  *v = r;
  return true;
}

bool Reader::Byte(uint8_t* v) {
  if (p_ >= end_) return false;
  *v = static_cast<uint8_t>(*p_++);
  return true;
}

bool Reader::Bytes(size_t n, std::string_view* v) {
  if (remaining() < n) return false;
  *v = std::string_view(p_, n);
  p_ += n;
  return true;
}

bool Reader::LengthPrefixed(std::string_view* v) {
  uint64_t n;
  return Varint64(&n) && n <= remaining() && Bytes(static_cast<size_t>(n), v);
}

void EncodeRow(const Entity& e, uint64_t version, int64_t timestamp, std::string* dst,
               uint8_t format) {
  size_t max = 1 + kMaxVarint64 + 8 + kMaxVarint64;
  for (const auto& p : e.properties) max += kMaxVarint64 + p.name.size() + MaxValueBytes(p.value);
  const size_t start = dst->size();
  dst->resize(start + max);
  char* const begin = dst->data() + start;
  char* p = begin;
  *p++ = static_cast<char>(format);
  p = WriteVarint64(p, version);
  p = WriteFixed64(p, static_cast<uint64_t>(timestamp));
  p = WriteVarint64(p, e.properties.size());
  for (const auto& prop : e.properties) {
    p = WriteBytes(WriteVarint64(p, prop.name.size()), prop.name);
    p = WriteValue(p, prop.value);
  }
  dst->resize(start + static_cast<size_t>(p - begin));
}

Status DecodeRowHeader(std::string_view row, uint64_t* version, int64_t* timestamp) {
  Reader r(row);
  uint8_t format;
  uint64_t ts;
  if (!r.Byte(&format)) return Corrupt("empty");
  if (!IsRowFormat(format)) return Corrupt("unknown format version");
  if (!r.Varint64(version) || !r.Fixed64(&ts)) return Corrupt("truncated header");
  *timestamp = static_cast<int64_t>(ts);
  return Status::OK();
}

void PutRowImage(std::string* dst, std::string_view row) {
  PutVarint64(dst, row.size());
  if (row.empty()) return;
  dst->push_back(static_cast<char>(kRowFormat));
  dst->append(row.data() + 1, row.size() - 1);
}

Status DecodeRow(std::string_view row, Entity* e, const std::vector<std::string>* select) {
  auto view = RowView::Parse({}, {}, row);
  if (!view.ok()) return view.status();
  e->timestamp = view->timestamp();
  e->etag = MakeETag(view->version());
  e->properties.clear();
  e->properties.reserve(select ? select->size() : view->property_count());
  PropertyReader r(*view);
  for (PropertyView p; r.Next(&p);) {
    if (Selected(select, p.name)) e->properties.push_back({std::string(p.name), p.ToValue()});
  }
  return r.status();
}

std::string TablePrefix(uint32_t table_id) {
  std::string k;
  PutFixed32BE(&k, table_id);
  return k;
}

void AppendOrdinal(std::string* dst, std::string_view s) {
  size_t start = dst->size();
  dst->append(s.data(), s.size());
  for (size_t i = start; i < dst->size(); i++) {
    (*dst)[i] = static_cast<char>(OrdinalByte(static_cast<uint8_t>((*dst)[i])));
  }
}

std::string PartitionPrefix(uint32_t table_id, std::string_view pk) {
  std::string k;
  k.reserve(5 + pk.size());
  PutFixed32BE(&k, table_id);
  AppendOrdinal(&k, pk);
  k.push_back('\0');
  return k;
}

std::string EntityKey(uint32_t table_id, std::string_view pk, std::string_view rk) {
  std::string k;
  k.reserve(5 + pk.size() + rk.size());
  PutFixed32BE(&k, table_id);
  AppendOrdinal(&k, pk);
  k.push_back('\0');
  AppendOrdinal(&k, rk);
  return k;
}

size_t PartitionPrefixLength(std::string_view key) {
  if (key.size() <= 4) return 0;  // the table id alone
  const size_t sep = key.find('\0', 4);
  return sep == std::string_view::npos ? 0 : sep + 1;
}

bool DecodeEntityKey(std::string_view key, uint32_t* table_id, std::string* pk, std::string* rk) {
  const size_t prefix = PartitionPrefixLength(key);
  if (prefix == 0) return false;
  *table_id = DecodeFixed32BE(key.data());
  key.remove_prefix(4);
  const size_t sep = prefix - 5;  // the separator's offset after the table id
  pk->resize(sep);
  for (size_t i = 0; i < sep; i++) {
    (*pk)[i] = static_cast<char>(OrdinalByteInverse(static_cast<uint8_t>(key[i])));
  }
  std::string_view r = key.substr(sep + 1);
  rk->resize(r.size());
  for (size_t i = 0; i < r.size(); i++) {
    (*rk)[i] = static_cast<char>(OrdinalByteInverse(static_cast<uint8_t>(r[i])));
  }
  return true;
}

std::string LogKey(uint64_t lsn) {
  std::string k;
  PutFixed64BE(&k, lsn);
  return k;
}

}  // namespace sidetable::codec

// ---- RowView: the row format read in place ------------------------------------
namespace sidetable {

using codec::Corrupt;

Value PropertyView::ToValue() const {
  switch (type_) {
    case EdmType::kString: return Value::String(std::string(bytes_));
    case EdmType::kBinary: return Value::Binary(std::string(bytes_));
    case EdmType::kGuid: {
      Guid g;
      std::memcpy(g.data(), bytes_.data(), 16);
      return Value::MakeGuid(g);
    }
    case EdmType::kBoolean: return Value::Boolean(int_ != 0);
    case EdmType::kDateTime: return Value::DateTime(int_);
    case EdmType::kDouble: return Value::Double(double_);
    case EdmType::kInt32: return Value::Int32(static_cast<int32_t>(int_));
    case EdmType::kInt64: return Value::Int64(int_);
  }
  return Value();
}

Result<RowView> RowView::Parse(std::string_view partition_key, std::string_view row_key,
                               std::string_view row) {
  codec::Reader r(row);
  uint8_t format;
  uint64_t ts;
  RowView v;
  if (!r.Byte(&format)) return Corrupt("empty");
  if (!codec::IsRowFormat(format)) return Corrupt("unknown format version");
  if (!r.Varint64(&v.version_) || !r.Fixed64(&ts) || !r.Varint64(&v.count_)) {
    return Corrupt("truncated header");
  }
  if (v.count_ > r.remaining()) return Corrupt("bad property count");
  v.pk_ = partition_key;
  v.rk_ = row_key;
  v.timestamp_ = static_cast<int64_t>(ts);
  v.props_ = row.substr(row.size() - r.remaining());
  return v;
}

std::string_view RowView::ETag(ETagBuffer* buf) const {
  char* p = buf->data;
  *p++ = 'W';
  *p++ = '/';
  *p++ = '"';
  p = std::to_chars(p, buf->data + sizeof buf->data - 1, version_).ptr;
  *p++ = '"';
  return std::string_view(buf->data, static_cast<size_t>(p - buf->data));
}

bool RowView::Find(std::string_view name, PropertyView* out, Status* error) const {
  PropertyReader r(*this);
  while (r.Next(out)) {
    if (out->name == name) return true;
  }
  if (!r.status().ok()) *error = r.status();
  return false;
}

PropertyReader::PropertyReader(const RowView& row)
    : p_(row.properties_bytes().data()),
      end_(row.properties_bytes().data() + row.properties_bytes().size()),
      left_(row.property_count()) {}

bool PropertyReader::Next(PropertyView* out) {
  if (left_ == 0) {
    if (p_ != end_ && status_.ok()) status_ = Corrupt("trailing bytes");
    return false;
  }
  codec::Reader r(std::string_view(p_, static_cast<size_t>(end_ - p_)));
  if (!r.LengthPrefixed(&out->name)) {
    status_ = Corrupt("truncated property name");
    left_ = 0;
    p_ = end_;
    return false;
  }
  if (!codec::DecodeValueView(&r, out)) {
    status_ = Corrupt("bad property value");
    left_ = 0;
    p_ = end_;
    return false;
  }
  p_ = end_ - r.remaining();
  left_--;
  return true;
}

Status RowToEntity(const RowView& row, Entity* out, const std::vector<std::string>* select) {
  out->partition_key.assign(row.partition_key());
  out->row_key.assign(row.row_key());
  out->timestamp = row.timestamp();
  out->etag = MakeETag(row.version());
  out->properties.clear();
  out->properties.reserve(select ? select->size() : row.property_count());
  PropertyReader r(row);
  for (PropertyView p; r.Next(&p);) {
    if (codec::Selected(select, p.name)) out->properties.push_back({std::string(p.name), p.ToValue()});
  }
  return r.status();
}

}  // namespace sidetable
