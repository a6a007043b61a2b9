// `verify`: proves that derived tables converged (docs/patterns.md).
//
// For every pattern in a worker configuration file:
//   index_table: recomputes the index from the source table with the
//     pattern's own ExpectedIndex() and compares it with the target table:
//     missing, extra and stale entries (stale = same keys, other content).
//   archive: no entity may be in both the source and the archive table at
//     the same version (a move not finished); a source newer than the
//     archive's copy is a later entity with the same keys, not divergence.
// Exit 0 when everything matches, 4 on divergence (kExitDiverged), 1 when a
// source table does not exist.
#include <map>
#include <optional>

#include "apply/op_applier.h"
#include "apply/worker_config.h"
#include "engine/etag.h"
#include "patterns/archive/archive.h"
#include "patterns/index_table/index_table.h"
#include "tools/cli/commands.h"
#include "tools/cli/replay_commands.h"

namespace sidetable::cli {
namespace {

using Key = std::pair<std::string, std::string>;

// Every entity of a table (all properties, with ETags), keyed. A derived
// table that does not exist counts as empty (it appears with its first
// entry); a source table that does not exist is an error: "checked 0" and
// exit 0 there hid a typo in the config or the wrong endpoint (issue 16).
Status ReadTable(client::Client* c, const std::string& table, bool is_source, const std::string& pattern,
                 std::map<Key, Entity>* out) {
  auto it = c->Query({.table = table});
  Entity e;
  while (it.Next(&e)) out->emplace(Key{e.partition_key, e.row_key}, std::move(e));
  if (it.status().ok()) return Status::OK();
  if (it.status().code() != Code::kTableNotFound) return it.status();
  if (!is_source) return Status::OK();
  return Status(Code::kTableNotFound, "verify: source table '" + table + "' of " + pattern +
                                          " does not exist (a typo in the config, or another sidecar?)");
}

struct Report {
  size_t checked = 0, missing = 0, extra = 0, stale = 0, both = 0;
  bool diverged() const { return missing + extra + stale + both > 0; }
};

void ReportLine(std::string* out, const std::string& pattern, const char* what, const Key& k) {
  *out += pattern + ": " + what + " (" + k.first + ", " + k.second + ")\n";
}

Status VerifyIndex(client::Client* c, const patterns::PatternConfig& pc, std::string* out, Report* r) {
  auto config = patterns::IndexTableConfig::FromSettings(pc);
  if (!config.ok()) return config.status();
  const std::string name = "index_table " + config->source + " -> " + config->target;
  std::map<Key, Entity> source, actual;
  ST_RETURN_IF_ERROR(ReadTable(c, config->source, /*is_source=*/true, name, &source));
  ST_RETURN_IF_ERROR(ReadTable(c, config->target, /*is_source=*/false, name, &actual));
  std::vector<Entity> sources;
  for (auto& [k, e] : source) sources.push_back(e);
  for (const Entity& want : patterns::ExpectedIndex(*config, sources)) {
    r->checked++;
    Key k{want.partition_key, want.row_key};
    auto it = actual.find(k);
    if (it == actual.end()) {
      r->missing++;
      ReportLine(out, name, "missing", k);
      continue;
    }
    if (!(it->second.properties == want.properties)) {
      r->stale++;
      ReportLine(out, name, "stale", k);
    }
    actual.erase(it);
  }
  for (const auto& [k, e] : actual) {
    r->extra++;
    ReportLine(out, name, "extra", k);
  }
  return Status::OK();
}

Status VerifyArchive(client::Client* c, const patterns::PatternConfig& pc, std::string* out, Report* r) {
  auto config = patterns::ArchiveConfig::FromSettings(pc);
  if (!config.ok()) return config.status();
  const std::string name = "archive " + config->source() + " -> " + config->target();
  std::map<Key, Entity> source, archive;
  ST_RETURN_IF_ERROR(ReadTable(c, config->source(), /*is_source=*/true, name, &source));
  ST_RETURN_IF_ERROR(ReadTable(c, config->target(), /*is_source=*/false, name, &archive));
  for (const auto& [k, copy] : archive) {
    r->checked++;
    auto it = source.find(k);
    if (it == source.end()) continue;
    // The same keys in both tables are a move not finished only when the
    // source is the state that was copied: the copy's SourceVersion is the
    // source's version (its ETag W/"<n>"). A source newer than the copy is
    // a later entity (re-inserted after the move, or changed while it was
    // moved: docs/patterns.md). Versions are compared whole: under
    // scale-out they are epoch << 40 | lsn, kept across a hand-over and
    // growing with the epoch, so an LSN alone may repeat.
    const uint64_t copied = apply::SourceVersionOf(copy);
    const std::optional<uint64_t> current = VersionFromETag(it->second.etag);
    if (copied != 0 && current && *current > copied) continue;
    std::string what;
    if (copied == 0) {
      what = "in both tables, the archive's copy without SourceVersion";
    } else if (!current) {
      what = "in both tables, the source without a version (ETag '" + it->second.etag + "')";
    } else if (*current == copied) {
      what =
          "in both tables at the same version " + std::to_string(copied) + ": a move not finished";
    } else {
      what = "in both tables, the archive's copy (version " + std::to_string(copied) +
             ") newer than the source (version " + std::to_string(*current) + ")";
    }
    r->both++;
    ReportLine(out, name, what.c_str(), k);
  }
  return Status::OK();
}

}  // namespace

int VerifyPatterns(Session& s, const std::vector<patterns::PatternConfig>& pcs) {
  client::Client* c = s.Client();
  if (!c) return s.connect_exit;
  Report report;
  std::string details;
  for (const auto& pc : pcs) {
    Status st;
    if (pc.name == patterns::kIndexTableName) st = VerifyIndex(c, pc, &details, &report);
    else if (pc.name == patterns::kArchiveName) st = VerifyArchive(c, pc, &details, &report);
    else return s.Usage("verify knows index_table and archive, not '" + pc.name + "'");
    if (!st.ok()) return st.code() == Code::kInvalidInput ? s.Usage(st.message()) : s.Fail(st);
  }
  s.out += details;
  s.out += "checked " + std::to_string(report.checked) + ": missing " + std::to_string(report.missing) +
           ", extra " + std::to_string(report.extra) + ", stale " + std::to_string(report.stale) +
           ", in both tables " + std::to_string(report.both) + "\n";
  if (int written = s.Finish(); written != kExitOk)
    return written;  // the report is lost: not a verdict
  return report.diverged() ? kExitDiverged : kExitOk;
}

int RunVerify(Session& s, const CommandArgs& a) {
  if (std::string why = UnreadableFileReason(a.input); !why.empty()) {
    return s.Usage("--config " + a.input + ": cannot read: " + why);
  }
  apply::WorkerConfig wc;
  if (Status st = apply::LoadWorkerConfigFile(a.input, &wc); !st.ok()) return s.Usage(st.message());
  if (wc.patterns.empty()) return s.Usage(a.input + ": no patterns to verify");
  return VerifyPatterns(s, wc.patterns);
}

}  // namespace sidetable::cli
