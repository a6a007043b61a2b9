// sidetable-cli backup: has the sidecar make a backup of its data directory
// (docs/cli.md, docs/operations.md "Backup and restore") and prints what it
// made as one JSON object.
#include "events/json_writer.h"
#include "tools/cli/commands.h"

namespace sidetable::cli {

int RunBackup(Session& s, const CommandArgs&) {
  client::Client* c = s.Client();
  if (!c) return s.connect_exit;
  auto b = c->Backup();
  if (!b.ok()) return s.Fail(b.status());
  json::JsonWriter w;
  w.BeginObject();
  w.Key("name").String(b->name);
  w.Key("path").String(b->path);
  w.Key("firstLsn").UInt(b->first_lsn);
  w.Key("lastLsn").UInt(b->last_lsn);
  w.Key("tables").UInt(b->tables);
  w.Key("files").UInt(b->files);
  w.Key("bytes").UInt(b->bytes);
  w.Key("seconds").Double(static_cast<double>(b->took.count()) / 1e6);
  w.Key("removed").BeginArray();
  for (const auto& name : b->removed) w.String(name);
  w.EndArray();
  w.EndObject();
  s.out = w.Take() + "\n";
  return s.Finish();
}

}  // namespace sidetable::cli
