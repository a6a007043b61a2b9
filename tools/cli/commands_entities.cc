// Entity commands: get, insert, update, merge, upsert, delete, batch.
#include "events/entity_json.h"
#include "tools/cli/commands.h"

namespace sidetable::cli {

using namespace ::sidetable::json;  // the JSON entity format (events/)

int RunGet(Session& s, const CommandArgs& a) {
  auto select = SelectWithSystemProperties(a.select);
  if (!select.ok()) return s.Usage(select.status().message());
  client::Client* c = s.Client();
  if (!c) return s.connect_exit;
  auto e = c->Get(a.table, a.pk, a.rk, *select);
  if (!e.ok()) return s.Fail(e.status());
  s.out = EntityToJson(*e) + "\n";
  return s.Finish();
}

int RunWrite(Session& s, const CommandArgs& a, const std::string& command) {
  OpKind kind = OpKind::kInsert;
  if (command == "update") kind = OpKind::kUpdate;
  if (command == "merge") kind = OpKind::kMerge;
  if (command == "upsert") kind = a.merge ? OpKind::kInsertOrMerge : OpKind::kInsertOrReplace;

  std::string text;
  if (!ReadJsonArgument(a.input, &text)) return s.Usage("cannot read the entity from stdin");
  auto e = ParseEntityJson(text);
  if (!e.ok()) return s.Usage(e.status().message());
  std::string if_match;
  if (kind == OpKind::kUpdate || kind == OpKind::kMerge) {
    // --if-match, else the entity's own odata.etag (as `get` printed it), else unconditional.
    if_match = !a.if_match.empty() ? a.if_match : (!e->etag.empty() ? e->etag : "*");
  }
  e->etag.clear();
  Batch batch(a.table);
  batch.Add(kind, std::move(e).value(), std::move(if_match));

  client::Client* c = s.Client();
  if (!c) return s.connect_exit;
  auto r = c->Execute(batch);
  if (!r.ok()) return s.Fail(r.status());
  s.out = WriteResultToJson(*r, true) + "\n";
  return s.Finish();
}

int RunDelete(Session& s, const CommandArgs& a) {
  client::Client* c = s.Client();
  if (!c) return s.connect_exit;
  auto r = c->Delete(a.table, a.pk, a.rk, a.if_match.empty() ? "*" : a.if_match);
  if (!r.ok()) return s.Fail(r.status());
  s.out = WriteResultToJson(*r, true) + "\n";
  return s.Finish();
}

int RunBatch(Session& s, const CommandArgs& a) {
  std::string text;
  if (!ReadFileArgument(a.input, &text)) return s.Usage("cannot read " + a.input);
  auto batch = ParseBatchJson(text, a.table);
  if (!batch.ok()) return s.Usage(batch.status().message());
  client::Client* c = s.Client();
  if (!c) return s.connect_exit;
  auto r = c->Execute(*batch);
  if (!r.ok()) return s.Fail(r.status(), /*batch=*/true);
  s.out = WriteResultToJson(*r, false) + "\n";
  return s.Finish();
}

}  // namespace sidetable::cli
