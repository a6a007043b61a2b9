#include "tools/replay/derive.h"

#include <simdjson.h>

#include <chrono>
#include <thread>

#include "apply/event_processor.h"
#include "apply/op_applier.h"
#include "apply/table_store.h"
#include "client/client.h"
#include "engine/etag.h"
#include "engine/table_name.h"
#include "events/json_writer.h"
#include "patterns/common.h"
#include "patterns/index_table/index_table.h"
#include "tools/replay/point_in_time.h"
#include "tools/replay/source.h"

namespace sidetable::replay {
namespace {

using Key = std::pair<std::string, std::string>;

// Everything a resume needs (saved in the checkpoint).
struct Progress_ {
  bool in_log = false;          // false: snapshot phase
  uint64_t l0 = 0;
  bool snapshot_started = false;
  std::optional<Key> next;      // snapshot continuation
  std::map<Key, uint64_t, KeyLess> seen;  // snapshot versions above L0
  uint64_t log_last = 0;        // log phase: the last LSN applied
  DeriveReport report;
};

std::string Fingerprint(const patterns::PatternConfig& pc) {
  std::string out = pc.name + ";";
  for (const auto& [k, values] : pc.settings) {
    out += k + "=";
    for (const auto& v : values) out += std::to_string(v.size()) + ":" + v + ",";
    out += ";";
  }
  return out;
}

Checkpoint ToCheckpoint(const Progress_& p, const std::string& fingerprint) {
  Checkpoint c;
  c.command = "derive";
  c.fingerprint = fingerprint;
  c.position.last_lsn = p.in_log ? p.log_last : p.l0;
  c.events = p.report.snapshot_entities + p.report.log_records;
  json::JsonWriter w;
  w.BeginObject();
  w.Key("phase").String(p.in_log ? "log" : "snapshot");
  w.Key("l0").UInt(p.l0);
  w.Key("started").Bool(p.snapshot_started);
  w.Key("more").Bool(p.next.has_value());
  w.Key("nextPk").String(p.next ? p.next->first : "");
  w.Key("nextRk").String(p.next ? p.next->second : "");
  w.Key("snapshotEntities").UInt(p.report.snapshot_entities);
  w.Key("logRecords").UInt(p.report.log_records);
  w.Key("opsDropped").UInt(p.report.ops_dropped);
  w.Key("tableOps").UInt(p.report.table_ops);
  w.EndObject();
  c.rebuild_meta = w.Take();
  for (const auto& [key, version] : p.seen) {
    json::JsonWriter line;
    line.BeginArray().String(key.first).String(key.second).UInt(version).EndArray();
    c.state += line.Take();
    c.state += '\n';
  }
  return c;
}

Status FromCheckpoint(const Checkpoint& c, Progress_* p) {
  auto bad = [](const std::string& what) { return Status(Code::kInvalidInput, "derive checkpoint: " + what); };
  simdjson::dom::parser parser;
  simdjson::padded_string meta(c.rebuild_meta);
  simdjson::dom::element doc;
  if (parser.parse(meta).get(doc) != simdjson::SUCCESS) return bad("not JSON");
  std::string_view phase, npk, nrk;
  bool more = false;
  if (doc["phase"].get(phase) || doc["l0"].get(p->l0) || doc["started"].get(p->snapshot_started) ||
      doc["more"].get(more) || doc["nextPk"].get(npk) || doc["nextRk"].get(nrk) ||
      doc["snapshotEntities"].get(p->report.snapshot_entities) || doc["logRecords"].get(p->report.log_records) ||
      doc["opsDropped"].get(p->report.ops_dropped) || doc["tableOps"].get(p->report.table_ops)) {
    return bad("a field is missing");
  }
  p->in_log = phase == "log";
  if (more) p->next = Key(std::string(npk), std::string(nrk));
  p->log_last = p->in_log ? c.position.last_lsn : p->l0;
  size_t pos = 0;
  simdjson::dom::parser line_parser;
  while (pos < c.state.size()) {
    size_t nl = c.state.find('\n', pos);
    if (nl == std::string::npos) return bad("state cut short");
    simdjson::padded_string line(std::string_view(c.state).substr(pos, nl - pos));
    pos = nl + 1;
    simdjson::dom::array a;
    std::string_view pk, rk;
    uint64_t version = 0;
    if (line_parser.parse(line).get(a) || a.at(0).get(pk) || a.at(1).get(rk) || a.at(2).get(version)) {
      return bad("a bad version line");
    }
    p->seen[Key(std::string(pk), std::string(rk))] = version;
  }
  return Status::OK();
}

class Deriver {
 public:
  Deriver(client::Client* client, const DeriveOptions& options, std::unique_ptr<patterns::Pattern> pattern,
          std::string source, DeriveReport* report)
      : report_(report),
        client_(client),
        options_(options),
        pattern_(std::move(pattern)),
        source_(std::move(source)),
        store_(apply::NewClientTableStore(client)),
        applier_(store_.get(), options.fence_attempts) {}

  // The pattern's operations for `record`, applied with retries.
  Status Feed(const ChangeRecord& record) {
    if (!pattern_->Wants(record)) return Status::OK();
    ops_.clear();
    ST_RETURN_IF_ERROR(pattern_->Apply(record, &ops_));
    for (const patterns::TableOp& op : ops_) {
      for (int attempt = 1;; attempt++) {
        apply::OpResult result;
        Status s = applier_.Apply(op, &result);
        if (s.ok()) break;
        if (!apply::IsTransient(s.code()) || attempt >= options_.max_attempts) return s;
        apply::RetryPolicy policy;
        std::this_thread::sleep_for(std::chrono::milliseconds(apply::BackoffMs(policy, attempt + 1, jitter_++)));
      }
      report_->table_ops++;
    }
    return Status::OK();
  }

  Status Snapshot(Progress_* p, const std::function<Status()>& save, bool* stopped, uint64_t* budget) {
    client::QueryOptions q;
    q.table = source_;
    q.top = options_.page_size;
    size_t page_no = 0;
    while (!p->snapshot_started || p->next) {
      if (Interrupted() || (options_.stop_after && *budget == 0)) {
        *stopped = true;
        return save();
      }
      auto page = client_->QueryPage(q, p->next);
      if (!page.ok()) {
        // Deleted meanwhile: the log holds the TableDeleted that clears the target.
        if (page.status().code() == Code::kTableNotFound) {
          p->next.reset();
          p->snapshot_started = true;
          break;
        }
        return page.status();
      }
      for (Entity& e : page->entities) {
        const uint64_t version = VersionFromETag(e.etag).value_or(0);
        if (version > p->l0) p->seen[Key(e.partition_key, e.row_key)] = version;
        ChangeRecord r;
        r.lsn = version;
        r.kind = ChangeKind::kEntities;
        r.commit_time = e.timestamp;
        r.table = source_;
        r.partition_key = e.partition_key;
        ChangeOp op;
        op.row_key = e.row_key;
        op.kind = OpKind::kInsert;
        op.version = version;
        op.etag = e.etag;
        op.after = std::move(e);
        r.ops.push_back(std::move(op));
        ST_RETURN_IF_ERROR(Feed(r));
        p->report.snapshot_entities++;
      }
      p->snapshot_started = true;
      p->next.reset();
      if (page->next) p->next = Key(page->next->first, page->next->second);
      if (options_.stop_after) *budget -= std::min<uint64_t>(*budget, page->entities.size());
      if (options_.progress) options_.progress->Update(p->report.snapshot_entities, std::nullopt);
      if (options_.after_snapshot_page) options_.after_snapshot_page(page_no);
      page_no++;
    }
    return Status::OK();
  }

  Status Log(Progress_* p, const std::function<Status()>& save, bool* stopped, uint64_t* budget) {
    ChangeLogSourceOptions o;
    o.from_lsn = p->log_last + 1;
    Position resume;
    resume.last_lsn = p->log_last;
    auto source = OpenChangeLogSource(client_, o, &resume);
    if (!source.ok()) return source.status();
    if ((*source)->first_available_lsn() > p->log_last + 1) {
      return Status(Code::kResourceNotFound,
                    "the change log no longer holds LSN " + std::to_string(p->log_last + 1) +
                        ": it was trimmed during the derive; start again (delete the target first)");
    }
    std::vector<ChangeRecord> batch;
    for (;;) {
      if (Interrupted() || (options_.stop_after && *budget == 0)) {
        *stopped = true;
        return save();
      }
      (*source)->Recycle(&batch);
      bool end = false;
      size_t want = 500;
      if (options_.stop_after) want = std::min<uint64_t>(want, *budget);
      ST_RETURN_IF_ERROR((*source)->Next(want, &batch, &end));
      for (ChangeRecord& r : batch) {
        if (r.kind == ChangeKind::kEntities && !p->seen.empty()) DropSeen(p, &r);
        ST_RETURN_IF_ERROR(Feed(r));
        p->log_last = r.lsn;
        p->report.log_records++;
      }
      if (options_.stop_after) *budget -= std::min<uint64_t>(*budget, batch.size());
      if (options_.progress) {
        options_.progress->Update(p->report.snapshot_entities + p->report.log_records, (*source)->remaining());
      }
      if (end) {
        p->report.consistent_lsn = std::max(p->log_last, (*source)->end_lsn());
        return Status::OK();
      }
    }
  }

 private:
  bool Interrupted() const {
    return options_.interrupted && options_.interrupted->load(std::memory_order_relaxed);
  }

  // Drops the operations the snapshot already reflects.
  void DropSeen(Progress_* p, ChangeRecord* r) {
    if (!TableNameEquals(r->table, source_)) return;
    auto& ops = r->ops;
    size_t kept = 0;
    for (size_t i = 0; i < ops.size(); i++) {
      auto it = p->seen.find(Key(r->partition_key, ops[i].row_key));
      if (it != p->seen.end() && ops[i].version <= it->second) {
        p->report.ops_dropped++;
        continue;
      }
      if (kept != i) ops[kept] = std::move(ops[i]);
      kept++;
    }
    ops.resize(kept);
  }

  DeriveReport* report_;
  client::Client* client_;
  const DeriveOptions& options_;
  std::unique_ptr<patterns::Pattern> pattern_;
  std::string source_;
  std::unique_ptr<apply::TableStore> store_;
  apply::OpApplier applier_;
  std::vector<patterns::TableOp> ops_;
  uint64_t jitter_ = 0x9e3779b97f4a7c15ull;
};

}  // namespace

Result<DeriveReport> Derive(client::Client* client, const DeriveOptions& options,
                            const std::string& checkpoint_path) {
  if (options.pattern.name != patterns::kIndexTableName) {
    return Status(Code::kInvalidInput, "derive builds index_table patterns; '" + options.pattern.name +
                                           "' moves entities and has nothing to rebuild");
  }
  auto config = patterns::IndexTableConfig::FromSettings(options.pattern);
  if (!config.ok()) return config.status();
  if (TableNameEquals(config->source, config->target)) {
    return Status(Code::kInvalidInput, "the target must not be the source table '" + config->source + "'");
  }
  auto pattern = patterns::CreatePattern(options.pattern);
  if (!pattern.ok()) return pattern.status();
  const std::string fingerprint = Fingerprint(options.pattern);

  Progress_ p;
  bool resumed = false;
  if (!checkpoint_path.empty()) {
    auto loaded = LoadCheckpoint(checkpoint_path);
    if (!loaded.ok()) return loaded.status();
    if (loaded->has_value()) {
      const Checkpoint& c = **loaded;
      if (c.command != "derive" || c.fingerprint != fingerprint) {
        return Status(Code::kInvalidInput, checkpoint_path + " was made by another command or pattern; "
                                                             "use another checkpoint file or remove it");
      }
      ST_RETURN_IF_ERROR(FromCheckpoint(c, &p));
      resumed = true;
    }
  }
  if (!resumed) {
    // A fresh target: entries left by an earlier, abandoned run could be
    // stale in ways the fences cannot see.
    client::QueryOptions q;
    q.table = config->target;
    q.top = 1;
    auto page = client->QueryPage(q);
    if (page.ok() && !page->entities.empty()) {
      return Status(Code::kInvalidInput, "the target table '" + config->target +
                                             "' is not empty: derive builds a fresh table (delete it, or "
                                             "pick another name)");
    }
    if (!page.ok() && page.status().code() != Code::kTableNotFound) return page.status();
    auto probe = client->ReadChanges(1, 1, 1);
    if (!probe.ok()) return probe.status();
    p.l0 = probe->last_lsn;
    p.log_last = p.l0;
  }

  Deriver d(client, options, std::move(pattern).value(), config->source, &p.report);
  p.report.snapshot_lsn = p.l0;
  // A checkpoint that cannot be written is this machine's file (a full disk,
  // a removed directory), not the server's fault: InvalidInput naming it, as
  // the CLI reports replay's and rebuild's own files (docs/cli.md), never
  // InternalError.
  auto local = [&](const Status& st) {
    return st.ok() ? st : Status(Code::kInvalidInput, "--checkpoint: " + st.message());
  };
  auto save = [&]() -> Status {
    if (checkpoint_path.empty()) return Status::OK();
    return local(SaveCheckpoint(checkpoint_path, ToCheckpoint(p, fingerprint)));
  };
  bool stopped = false;
  uint64_t budget = options.stop_after;
  if (!p.in_log) {
    ST_RETURN_IF_ERROR(d.Snapshot(&p, save, &stopped, &budget));
    if (stopped) {
      p.report.stopped = true;
      return p.report;
    }
    p.in_log = true;
    ST_RETURN_IF_ERROR(save());
  }
  ST_RETURN_IF_ERROR(d.Log(&p, save, &stopped, &budget));
  p.report.stopped = stopped;
  if (!stopped && !checkpoint_path.empty())
    ST_RETURN_IF_ERROR(local(RemoveCheckpoint(checkpoint_path)));
  return p.report;
}

}  // namespace sidetable::replay
