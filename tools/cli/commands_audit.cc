// `replay` and `audit`: the filtered change stream as change records or as
// audit rows (docs/replay.md).
#include "events/entity_json.h"
#include "tools/cli/replay_support.h"
#include "tools/replay/audit.h"
#include "tools/replay/runner.h"

namespace sidetable::cli {
namespace {

// The record with only the operations in the filter's RowKey range.
void TrimToRange(const replay::ReplayFilter& f, ChangeRecord* r) {
  if (!f.rk_from && !f.rk_to) return;
  auto& ops = r->ops;
  ops.erase(std::remove_if(ops.begin(), ops.end(), [&](const ChangeOp& op) { return !f.MatchesRowKey(op.row_key); }),
            ops.end());
}

}  // namespace

int RunStream(Session& s, const ReplayArgs& a, const std::string& command) {
  const bool audit = command == "audit";
  if (!audit && (a.format != "jsonl" || a.summary)) return s.Usage("replay writes JSON lines; --format csv and --summary are audit's");
  auto filter = BuildFilter(a);
  if (!filter.ok()) return s.Usage(filter.status().message());
  if (Status st = CheckCheckpointPath(a.checkpoint); !st.ok()) return ReplayFail(s, st);
  const std::string fingerprint = SourceFingerprint(a) + filter->Fingerprint() + "format=" + a.format +
                                  ";summary=" + (a.summary ? "1" : "0") + ";";
  auto checkpoint = LoadMatchingCheckpoint(a, command, fingerprint);
  if (!checkpoint.ok()) return ReplayFail(s, checkpoint.status());
  const replay::Checkpoint* resume = checkpoint->has_value() ? &**checkpoint : nullptr;

  // The audit's counts; for both commands, the records fenced (a resumed
  // run's checkpoint carries those of the runs before it).
  replay::AuditSummary summary;
  if (resume && (audit || !resume->summary.empty())) {
    auto restored = replay::AuditSummary::FromJson(resume->summary);
    if (!restored.ok()) return ReplayFail(s, restored.status());
    summary = std::move(restored).value();
  }
  auto source = OpenSource(s, a, resume ? &resume->position : nullptr);
  if (!source.ok()) return ReplayFail(s, source.status());
  replay::RecordSource* src = source->get();
  const uint64_t fenced_before = summary.fenced();
  auto count_fenced = [&] {
    summary.set_fenced(fenced_before + src->fenced());
    summary.set_undecodable(src->undecodable());  // the source's position carries the runs before
  };
  if (!resume && a.from_lsn == 0 && src->first_available_lsn() > 1) {
    std::fprintf(stderr, "sidetable-cli: note: %s starts at LSN %llu; older history is gone\n",
                 src->Describe().c_str(), static_cast<unsigned long long>(src->first_available_lsn()));
  }
  for (const std::string& note : src->start_notes()) {
    std::fprintf(stderr, "sidetable-cli: note: %s: %s\n", src->Describe().c_str(), note.c_str());
  }

  Output out;
  const bool resumed_output = resume && !a.summary;
  if (Status st = out.Open(a.output, resumed_output ? std::optional<uint64_t>(resume->output_bytes) : std::nullopt);
      !st.ok()) {
    return ReplayFail(s, st);
  }
  const replay::AuditWriter writer(a.format == "csv" ? replay::AuditFormat::kCsv : replay::AuditFormat::kJsonl,
                                   *filter);
  std::string buf;
  if (audit && !a.summary && !resume) writer.Begin(&buf);

  auto sink = [&](std::vector<ChangeRecord>& records, bool* done) -> Status {
    for (ChangeRecord& r : records) {
      if (audit) {
        writer.Write(r, &buf, &summary);
      } else if (filter->Matches(r)) {
        TrimToRange(*filter, &r);
        buf += json::ChangeRecordToJson(r);
        buf += '\n';
      }
    }
    if (a.summary) buf.clear();
    Status st = out.Write(buf);
    buf.clear();
    return st;
  };
  auto save = [&](const replay::Position& position, uint64_t events) -> Status {
    if (a.checkpoint.empty()) return Status::OK();
    auto bytes = out.Sync();
    if (!bytes.ok()) return bytes.status();
    replay::Checkpoint c;
    c.command = command;
    c.fingerprint = fingerprint;
    c.position = position;
    c.events = events;
    c.output_bytes = *bytes;
    count_fenced();
    c.summary = summary.ToJson();
    return SaveCheckpointFile(a.checkpoint, c);
  };
  replay::Progress progress(ParseProgressMode(a.progress));
  replay::RunControl control = MakeRunControl(a, &progress);
  uint64_t events = resume ? resume->events : 0;
  auto end = replay::RunReplay(src, sink, save, control, &events);
  progress.Finish();
  if (!end.ok()) {
    (void)out.Sync();
    return ReplayFail(s, end.status());
  }
  if (*end == replay::RunEnd::kStopped) return ReportStopped(a, events);
  count_fenced();
  if (summary.fenced() > 0) {
    // Scale-out (docs/replay.md): records a replaced shard owner wrote after
    // a newer owner's claim. Skipped, as every reader skips them.
    std::fprintf(stderr, "sidetable-cli: %llu records fenced (written by a replaced shard owner after a newer "
                         "claim; skipped)\n",
                 static_cast<unsigned long long>(summary.fenced()));
  }
  if (a.summary) {
    if (Status st = out.Write(a.format == "csv" ? summary.ToCsv() : summary.ToJson() + "\n"); !st.ok()) {
      return ReplayFail(s, st);
    }
  }
  if (auto bytes = out.Sync(); !bytes.ok()) return ReplayFail(s, bytes.status());
  if (!a.checkpoint.empty()) {
    if (Status st = RemoveCheckpointFile(a.checkpoint); !st.ok()) return ReplayFail(s, st);
  }
  return ReportUndecodable(src->undecodable(), kExitOk);
}

}  // namespace sidetable::cli
