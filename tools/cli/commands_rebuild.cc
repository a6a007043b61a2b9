// `rebuild` (a table as it was at an LSN or a time) and `derive` (a derived
// table afresh from a snapshot and the log after it), docs/replay.md.
#include <cctype>

#include "apply/worker_config.h"
#include "engine/limits.h"
#include "engine/table_name.h"
#include "events/entity_json.h"
#include "patterns/common.h"
#include "patterns/index_table/index_table.h"
#include "tools/cli/replay_support.h"
#include "tools/replay/derive.h"
#include "tools/replay/point_in_time.h"
#include "tools/replay/runner.h"

namespace sidetable::cli {
namespace {

// A rebuilt table's EGTs: one partition, at most 100 entities and well
// under the 4 MiB request limit.
constexpr size_t kBatchEntities = 100;
constexpr size_t kBatchBytes = 2 << 20;

Status WriteIntoTable(client::Client* c, const std::string& table, const replay::EntityMap& state) {
  ST_RETURN_IF_ERROR(c->CreateTable(table));
  Batch batch(table);
  std::string pk;
  size_t bytes = 0;
  auto flush = [&]() -> Status {
    if (batch.size() == 0) return Status::OK();
    auto r = c->Execute(batch);
    batch = Batch(table);
    bytes = 0;
    return r.status();
  };
  for (const auto& [key, e] : state) {
    const size_t size = EntitySize(e);
    if (batch.size() == kBatchEntities || bytes + size > kBatchBytes || (batch.size() > 0 && pk != key.first)) {
      ST_RETURN_IF_ERROR(flush());
    }
    pk = key.first;
    Entity copy = e;
    copy.etag.clear();
    batch.InsertOrReplace(std::move(copy));
    bytes += size;
  }
  return flush();
}

}  // namespace

int RunRebuild(Session& s, const ReplayArgs& a) {
  const bool into_table = !a.into_table.empty();
  if ((a.at_lsn == 0) == a.at_time.empty()) return s.Usage("rebuild needs exactly one of --at-lsn and --at-time");
  if (into_table && a.output != "-") return s.Usage("--into-table and --output exclude each other");
  if (a.from_lsn != 0 || a.to_lsn != 0 || !a.since.empty() || !a.until.empty() ||
      a.has_caller) {
    return s.Usage("rebuild reads the whole history up to its cut: --from-lsn, --to-lsn, --since, --until and "
                   "--by do not apply");
  }
  if (a.kafka_offset >= 0 || !a.kafka_time.empty()) {
    return s.Usage("rebuild reads Kafka from the beginning: --kafka-offset and --kafka-time do not apply");
  }
  auto filter = BuildFilter(a);
  if (!filter.ok()) return s.Usage(filter.status().message());
  if (Status st = CheckCheckpointPath(a.checkpoint); !st.ok()) return ReplayFail(s, st);
  replay::Cut cut;
  cut.lsn = a.at_lsn;
  if (!a.at_time.empty()) {
    cut.time = replay::ParseTimeArgument(a.at_time);
    if (!cut.time) return s.Usage("--at-time '" + a.at_time + "' is not a time");
  }
  if (into_table && a.target_endpoint.empty() && TableNameEquals(a.into_table, a.table)) {
    return s.Usage("--into-table names the live table; a rebuild never writes over it");
  }
  ReplayArgs src_args = a;
  src_args.to_lsn = a.at_lsn;  // the change log can stop right at the cut
  const std::string fingerprint = SourceFingerprint(src_args) + "table=" + a.table + ";" + filter->Fingerprint() +
                                  "atLsn=" + std::to_string(a.at_lsn) + ";atTime=" +
                                  std::to_string(cut.time.value_or(0)) + ";into=" + a.into_table + ";";
  auto checkpoint = LoadMatchingCheckpoint(a, "rebuild", fingerprint);
  if (!checkpoint.ok()) return ReplayFail(s, checkpoint.status());
  const replay::Checkpoint* resume = checkpoint->has_value() ? &**checkpoint : nullptr;

  // The target is checked before the long read, not after it.
  std::unique_ptr<client::Client> other_target;
  client::Client* target = nullptr;
  if (into_table) {
    if (!a.target_endpoint.empty()) {
      other_target = s.ConnectTo(a.target_endpoint);
      if (!other_target) return s.connect_exit;
      target = other_target.get();
    } else {
      target = s.Client();
      if (!target) return s.connect_exit;
    }
    client::QueryOptions q;
    q.table = a.into_table;
    q.top = 1;
    auto probe = target->QueryPage(q);
    if (probe.ok()) {
      return ReplayFail(s, Status(Code::kTableAlreadyExists,
                                  "table '" + a.into_table + "' exists; rebuild writes a new table" +
                                      (resume ? " (if an earlier run of this command failed while writing it, "
                                                "delete it and run again: the checkpoint keeps the history read)"
                                              : "")));
    }
    if (probe.status().code() != Code::kTableNotFound) return ReplayFail(s, probe.status());
  }

  // The output file too: a bad path should fail before the long read.
  Output out;
  if (!into_table) {
    if (Status st = out.Open(a.output, std::nullopt); !st.ok()) return ReplayFail(s, st);
  }

  replay::PointInTime pit(a.table, *filter, cut);
  if (resume) {
    if (Status st = pit.Load(resume->rebuild_meta, resume->state); !st.ok()) return ReplayFail(s, st);
  }
  auto source = OpenSource(s, src_args, resume ? &resume->position : nullptr);
  if (!source.ok()) return ReplayFail(s, source.status());
  // Known at a fresh open only; a resumed run has it from the checkpoint.
  if (!resume) pit.SetWholeFrom(source->get()->whole_from_lsn());

  auto sink = [&](std::vector<ChangeRecord>& records, bool* done) -> Status {
    for (ChangeRecord& r : records) {
      pit.Apply(std::move(r));
      if (pit.past_cut()) {
        *done = true;
        break;
      }
    }
    return Status::OK();
  };
  auto save = [&](const replay::Position& position, uint64_t events) -> Status {
    if (a.checkpoint.empty()) return Status::OK();
    replay::Checkpoint c;
    c.command = "rebuild";
    c.fingerprint = fingerprint;
    c.position = position;
    c.events = events;
    c.rebuild_meta = pit.SaveMeta();
    c.state = pit.SaveState();
    return SaveCheckpointFile(a.checkpoint, c);
  };
  replay::Progress progress(ParseProgressMode(a.progress));
  replay::RunControl control = MakeRunControl(a, &progress);
  control.checkpoint_every = std::chrono::seconds(10);  // each save writes the whole state so far
  uint64_t events = resume ? resume->events : 0;
  auto end = replay::RunReplay(source->get(), sink, save, control, &events);
  progress.Finish();
  if (!end.ok()) return ReplayFail(s, end.status());
  if (*end == replay::RunEnd::kStopped) return ReportStopped(a, events);

  auto state = pit.State();
  if (!state.ok()) return ReplayFail(s, state.status());
  // The history is read: keep it, so that a failure while writing the
  // output does not cost reading it again.
  if (Status st = save(source->get()->position(), events); !st.ok()) return ReplayFail(s, st);
  if (a.at_lsn != 0 && pit.last_applied_lsn() < a.at_lsn) {
    return ReplayFail(s, Status(Code::kResourceNotFound,
                                "the history read ends at LSN " + std::to_string(pit.last_applied_lsn()) +
                                    ", before the cut at LSN " + std::to_string(a.at_lsn)));
  }
  const std::string at = "LSN " + std::to_string(pit.last_applied_lsn());
  if (into_table) {
    if (Status st = WriteIntoTable(target, a.into_table, **state); !st.ok()) return ReplayFail(s, st);
    s.out += "rebuilt " + std::to_string((*state)->size()) + " entities of " + a.table + " as at " + at +
             " into " + a.into_table + "\n";
  } else {
    std::string buf;
    for (const auto& [key, e] : **state) {
      buf += json::EntityToJson(e);
      buf += '\n';
      if (buf.size() > (1 << 20)) {
        if (Status st = out.Write(buf); !st.ok()) return ReplayFail(s, st);
        buf.clear();
      }
    }
    if (Status st = out.Write(buf); !st.ok()) return ReplayFail(s, st);
    if (auto synced = out.Sync(); !synced.ok()) return ReplayFail(s, synced.status());
    std::fprintf(stderr, "sidetable-cli: rebuilt %zu entities of %s as at %s\n", (*state)->size(), a.table.c_str(),
                 at.c_str());
  }
  if (!a.checkpoint.empty()) {
    if (Status st = RemoveCheckpointFile(a.checkpoint); !st.ok()) return ReplayFail(s, st);
  }
  return ReportUndecodable(source->get()->undecodable(), s.Finish());
}

int RunDerive(Session& s, const ReplayArgs& a) {
  if (std::string why = UnreadableFileReason(a.config); !why.empty()) {
    return s.Usage("--config " + a.config + ": cannot read: " + why);
  }
  apply::WorkerConfig wc;
  if (Status st = apply::LoadWorkerConfigFile(a.config, &wc); !st.ok()) return s.Usage(st.message());
  std::vector<const patterns::PatternConfig*> candidates;
  std::string names;
  for (const auto& pc : wc.patterns) {
    if (pc.name != patterns::kIndexTableName) continue;
    const std::string target = pc.Get("target");
    names += (names.empty() ? "" : ", ") + target;
    if (a.index.empty() || TableNameEquals(a.index, target)) candidates.push_back(&pc);
  }
  if (candidates.size() != 1) {
    return s.Usage(candidates.empty() ? a.config + " has no index_table pattern" +
                                            (a.index.empty() ? "" : " with target '" + a.index + "'")
                                      : a.config + " has several index_table patterns (" + names +
                                            "): choose one with --index TARGET");
  }
  patterns::PatternConfig pc = *candidates[0];
  if (!a.into_table.empty()) pc.settings["target"] = {a.into_table};
  if (Status st = CheckCheckpointPath(a.checkpoint); !st.ok()) return ReplayFail(s, st);
  client::Client* c = s.Client();
  if (!c) return s.connect_exit;
  replay::Progress progress(ParseProgressMode(a.progress));
  replay::DeriveOptions o;
  o.pattern = pc;
  o.stop_after = a.stop_after;
  o.interrupted = InstallStopSignals();
  o.progress = &progress;
  auto report = replay::Derive(c, o, a.checkpoint);
  progress.Finish();
  if (!report.ok()) return ReplayFail(s, report.status());
  if (report->stopped) return ReportStopped(a, report->snapshot_entities + report->log_records);
  s.out += "derived " + pc.Get("target") + " from " + pc.Get("source") + ": snapshot at LSN " +
           std::to_string(report->snapshot_lsn) + " (" + std::to_string(report->snapshot_entities) +
           " entities), then " + std::to_string(report->log_records) + " log records (" +
           std::to_string(report->ops_dropped) + " operations already in the snapshot); " +
           std::to_string(report->table_ops) + " table operations; consistent as of LSN " +
           std::to_string(report->consistent_lsn) + "\n";
  if (a.no_verify) return s.Finish();
  return VerifyPatterns(s, {pc});
}

}  // namespace sidetable::cli
