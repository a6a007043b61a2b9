// Backup on the wire (docs/protocol.md, op 16): what the sidecar made, and
// which older backups its retention removed.
#include "protocol/wire.h"
#include "protocol/wire_codec.h"

namespace sidetable::wire {
namespace {

Status Malformed(std::string_view what) {
  return Status(Code::kInternal, "malformed Backup reply: " + std::string(what));
}

}  // namespace

void EncodeBackup(const BackupReply& r, std::string* out) {
  msgpack::Writer w(out);
  w.MapHeader(9);
  w.Str("name");
  w.Str(r.name);
  w.Str("path");
  w.Str(r.path);
  const std::pair<std::string_view, uint64_t> numbers[] = {
      {"firstLsn", r.first_lsn}, {"lastLsn", r.last_lsn}, {"tables", r.tables},
      {"files", r.files},        {"bytes", r.bytes},      {"micros", r.micros}};
  for (const auto& [key, value] : numbers) {
    w.Str(key);
    w.Uint(value);
  }
  w.Str("removed");
  w.ArrayHeader(static_cast<uint32_t>(r.removed.size()));
  for (const auto& name : r.removed) w.Str(name);
}

Status DecodeBackup(std::string_view body, BackupReply* out) {
  msgpack::Reader r(body);
  uint32_t n;
  if (!r.MapHeader(&n)) return Malformed("body is not a map");
  bool named = false;
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key, s;
    if (!r.Str(&key)) return Malformed("field name");
    bool ok = true;
    if (key == "name" || key == "path") {
      ok = r.Str(&s);
      (key == "name" ? out->name : out->path).assign(s);
      named |= ok && key == "name";
    } else if (key == "firstLsn") {
      ok = r.Uint(&out->first_lsn);
    } else if (key == "lastLsn") {
      ok = r.Uint(&out->last_lsn);
    } else if (key == "tables") {
      ok = r.Uint(&out->tables);
    } else if (key == "files") {
      ok = r.Uint(&out->files);
    } else if (key == "bytes") {
      ok = r.Uint(&out->bytes);
    } else if (key == "micros") {
      ok = r.Uint(&out->micros);
    } else if (key == "removed") {
      uint32_t m;
      ok = r.ArrayHeader(&m) && m <= r.remaining();
      for (uint32_t i = 0; ok && i < m; i++) {
        ok = r.Str(&s);
        if (ok) out->removed.emplace_back(s);
      }
    } else {
      ok = r.Skip();
    }
    if (!ok) return Malformed("field '" + std::string(key) + "'");
  }
  if (!named) return Malformed("no 'name'");
  return Status::OK();
}

}  // namespace sidetable::wire
