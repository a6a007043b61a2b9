// Watermarks (AdvanceWatermarks, ReadWatermarks) and session tokens (`after`
// on Get and Query): their request fields and reply body
// (docs/protocol.md, docs/consistency.md).
#include "engine/limits.h"
#include "engine/utf8.h"
#include "protocol/wire.h"
#include "protocol/wire_codec.h"

namespace sidetable::wire {
namespace {

using codec::Be8;
using codec::Invalid;
using codec::ReadDateTime;

std::string Where(std::string_view list, size_t i) {
  return "'" + std::string(list) + "'[" + std::to_string(i) + "]";
}

// A table name inside a list entry: UTF-8 first (the message quotes it),
// then the table-name rules.
Status ReadName(msgpack::Reader& r, const std::string& where, std::string_view field,
                std::string* out) {
  std::string_view s;
  if (!r.Str(&s)) return Invalid(where + "." + std::string(field) + " must be a string");
  if (!IsValidUtf8(s)) return Invalid(where + "." + std::string(field) + " is not valid UTF-8");
  Status v = ValidateTableName(s);
  if (!v.ok()) return Invalid(where + "." + std::string(field) + ": " + v.message());
  out->assign(s);
  return Status::OK();
}

Status ReadInt32(msgpack::Reader& r, const std::string& where, std::string_view field,
                 int32_t min, int32_t max, int32_t* out) {
  int64_t v;
  if (!r.Int(&v) || v < min || v > max) {
    return Invalid(where + "." + std::string(field) + " must be an integer in " +
                   std::to_string(min) + ".." + std::to_string(max));
  }
  *out = static_cast<int32_t>(v);
  return Status::OK();
}

Status ReadEntry(msgpack::Reader& r, size_t i, WatermarkEntry* e) {
  const std::string where = Where("watermarks", i);
  uint32_t n;
  if (!r.MapHeader(&n)) return Invalid(where + " must be a map");
  bool derived = false, source = false, partition = false, partitions = false, lsn = false;
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key;
    if (!r.Str(&key)) return Invalid(where + ": field names must be strings");
    if (r.Peek() == msgpack::Kind::kNil) {
      r.Nil();
      continue;
    }
    if (key == "derived") {
      ST_RETURN_IF_ERROR(ReadName(r, where, key, &e->derived));
      derived = true;
    } else if (key == "source") {
      ST_RETURN_IF_ERROR(ReadName(r, where, key, &e->source));
      source = true;
    } else if (key == "partition") {
      ST_RETURN_IF_ERROR(ReadInt32(r, where, key, 0, kMaxWatermarkPartitions - 1, &e->partition));
      partition = true;
    } else if (key == "partitions") {
      ST_RETURN_IF_ERROR(ReadInt32(r, where, key, 1, kMaxWatermarkPartitions, &e->partitions));
      partitions = true;
    } else if (key == "lsn") {
      if (!r.Uint(&e->lsn)) return Invalid(where + ".lsn must be a non-negative integer");
      lsn = true;
    } else if (key == "time") {
      if (!ReadDateTime(r, &e->time)) return Invalid(where + ".time must be a DateTime");
    } else if (!r.Skip()) {
      return Invalid(where + ": malformed field");
    }
  }
  if (!derived || !source || !partition || !partitions || !lsn) {
    return Invalid(where + " needs 'derived', 'source', 'partition', 'partitions' and 'lsn'");
  }
  if (e->partition >= e->partitions) {
    return Invalid(where + ".partition " + std::to_string(e->partition) + " is not below partitions " +
                   std::to_string(e->partitions));
  }
  return Status::OK();
}

Status ReadToken(msgpack::Reader& r, size_t i, AfterToken* t) {
  const std::string where = Where("after", i);
  uint32_t n;
  if (!r.MapHeader(&n)) return Invalid(where + " must be a map");
  bool source = false, lsn = false;
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key;
    if (!r.Str(&key)) return Invalid(where + ": field names must be strings");
    if (key == "source") {
      ST_RETURN_IF_ERROR(ReadName(r, where, key, &t->source));
      source = true;
    } else if (key == "lsn") {
      if (!r.Uint(&t->lsn)) return Invalid(where + ".lsn must be a non-negative integer");
      lsn = true;
    } else if (!r.Skip()) {
      return Invalid(where + ": malformed field");
    }
  }
  if (!source || !lsn) return Invalid(where + " needs 'source' and 'lsn'");
  return Status::OK();
}

void WriteEntry(msgpack::Writer& w, const WatermarkEntry& e) {
  w.MapHeader(6);
  w.Str("derived");
  w.Str(e.derived);
  w.Str("source");
  w.Str(e.source);
  w.Str("partition");
  w.Int(e.partition);
  w.Str("partitions");
  w.Int(e.partitions);
  w.Str("lsn");
  w.Uint(e.lsn);
  w.Str("time");
  w.Ext(kExtDateTime, Be8(static_cast<uint64_t>(e.time)));
}

}  // namespace

Status ReadWatermarkEntries(msgpack::Reader& r, std::vector<WatermarkEntry>* out) {
  uint32_t n;
  if (!r.ArrayHeader(&n)) return Invalid("'watermarks' must be an array");
  if (n > kMaxWatermarkEntries) {
    return Invalid("'watermarks' holds at most " + std::to_string(kMaxWatermarkEntries) +
                   " entries, got " + std::to_string(n));
  }
  // Each entry needs well over 8 bytes on the wire.
  if (n > r.remaining() / 8) return Invalid("truncated 'watermarks'");
  out->assign(n, WatermarkEntry{});
  for (uint32_t i = 0; i < n; i++) ST_RETURN_IF_ERROR(ReadEntry(r, i, &(*out)[i]));
  return Status::OK();
}

Status ReadAfterTokens(msgpack::Reader& r, std::vector<AfterToken>* out) {
  uint32_t n;
  if (!r.ArrayHeader(&n)) return Invalid("'after' must be an array");
  if (n > kMaxAfterTokens) {
    return Invalid("'after' holds at most " + std::to_string(kMaxAfterTokens) + " tokens, got " +
                   std::to_string(n));
  }
  if (n > r.remaining() / 4) return Invalid("truncated 'after'");
  out->assign(n, AfterToken{});
  for (uint32_t i = 0; i < n; i++) ST_RETURN_IF_ERROR(ReadToken(r, i, &(*out)[i]));
  return Status::OK();
}

void WriteWatermarkEntries(msgpack::Writer& w, const std::vector<WatermarkEntry>& entries) {
  w.ArrayHeader(static_cast<uint32_t>(entries.size()));
  for (const auto& e : entries) WriteEntry(w, e);
}

void WriteAfterTokens(msgpack::Writer& w, const std::vector<AfterToken>& tokens) {
  w.ArrayHeader(static_cast<uint32_t>(tokens.size()));
  for (const auto& t : tokens) {
    w.MapHeader(2);
    w.Str("source");
    w.Str(t.source);
    w.Str("lsn");
    w.Uint(t.lsn);
  }
}

void EncodeWatermarks(const std::vector<WatermarkEntry>& entries, std::string* out) {
  msgpack::Writer w(out);
  w.MapHeader(1);
  w.Str("watermarks");
  WriteWatermarkEntries(w, entries);
}

Status DecodeWatermarks(std::string_view body, std::vector<WatermarkEntry>* entries) {
  msgpack::Reader r(body);
  uint32_t n;
  if (!r.MapHeader(&n)) return Status(Code::kInternal, "malformed reply: body is not a map");
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key;
    if (!r.Str(&key)) return Status(Code::kInternal, "malformed reply: field name");
    if (key == "watermarks") {
      Status s = ReadWatermarkEntries(r, entries);
      if (!s.ok()) return Status(Code::kInternal, "malformed reply: " + s.message());
    } else if (!r.Skip()) {
      return Status(Code::kInternal, "malformed reply: field value");
    }
  }
  return Status::OK();
}

}  // namespace sidetable::wire
