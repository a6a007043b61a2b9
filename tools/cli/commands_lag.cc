// lag: how far each derived table is behind its sources (docs/cli.md).
//
// The watermarks (ReadWatermarks) say, per (derived, source, Kafka
// partition), the newest change record applied. The change log says what
// exists above them: every record of the source from the lowest watermark
// + 1 on is mapped to its Kafka partition (KafkaPartitionFor, as the
// publisher's producer does) and counted when it is above that partition's
// watermark. The scan is bounded (--max-scan); when the bound cuts it
// short, counts are lower bounds and say so ("≥", "complete": false).
#include <algorithm>
#include <cstdio>
#include <map>

#include "common/kafka/partitioner.h"
#include "engine/table_name.h"
#include "events/json_writer.h"
#include "tools/cli/commands.h"

namespace sidetable::cli {
namespace {

struct PartitionLag {
  bool reported = false;  // the worker has said anything about this partition
  uint64_t applied = 0;
  int64_t applied_time = 0;
  uint64_t lag = 0;             // records above `applied` (of those scanned)
  int64_t oldest_time = 0;      // commit time of the oldest of them (0 = none)
};

struct PairLag {
  std::string derived, source;
  int32_t partitions = 1;
  std::vector<PartitionLag> parts;
};

std::string Age(int64_t now, int64_t oldest) {
  if (oldest == 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", std::max<int64_t>(0, now - oldest) / double(kTicksPerSecond));
  return buf;
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

int RunLag(Session& s, const CommandArgs& a) {
  client::Client* c = s.Client();
  if (!c) return s.connect_exit;
  auto marks = c->ReadWatermarks(a.table);
  if (!marks.ok()) return s.Fail(marks.status());
  // Pairs in (derived, source) order, by canonical names.
  std::map<std::pair<std::string, std::string>, PairLag> pairs;
  for (const auto& w : *marks) {
    PairLag& p = pairs[{TableKey(w.derived_table).str(), TableKey(w.source_table).str()}];
    p.derived = w.derived_table;
    p.source = w.source_table;
    p.partitions = w.partitions;
    p.parts.resize(static_cast<size_t>(w.partitions));
    if (w.partition >= 0 && w.partition < w.partitions) {
      PartitionLag& pl = p.parts[static_cast<size_t>(w.partition)];
      pl.reported = true;
      pl.applied = w.lsn;
      pl.applied_time = w.commit_time;
    }
  }
  uint64_t lowest = UINT64_MAX;
  for (const auto& [k, p] : pairs) {
    for (const auto& pl : p.parts) lowest = std::min(lowest, pl.applied);
  }
  // Scan the change log above the lowest watermark, bounded.
  uint64_t from = lowest == UINT64_MAX ? 0 : lowest + 1, scanned = 0, first = 0, last = 0;
  bool complete = true;
  // The newest LSN is part of the answer even with no pairs to scan for
  // (before session 39 --json said "last_lsn":0 then).
  auto info = c->Ping();
  if (!info.ok()) return s.Fail(info.status());
  last = info->last_lsn;
  if (!pairs.empty()) {
    while (from <= last) {
      if (scanned >= a.max) {
        complete = false;
        break;
      }
      const uint32_t want = static_cast<uint32_t>(std::min<uint64_t>({10'000, a.max - scanned, last - from + 1}));
      auto page = c->ReadChanges(from, want);
      if (!page.ok()) return s.Fail(page.status());
      if (first == 0) first = page->first_available_lsn;
      if (page->records.empty()) break;
      for (const ChangeRecord& r : page->records) {
        if (r.lsn > last) break;
        scanned++;
        const std::string source_key = TableKey(r.table).str();
        const std::string key = r.table + "/" + r.partition_key;
        for (auto& [k, p] : pairs) {
          if (k.second != source_key) continue;
          PartitionLag& pl = p.parts[static_cast<size_t>(kafka::KafkaPartitionFor(key, p.partitions))];
          if (r.lsn <= pl.applied) continue;
          pl.lag++;
          if (pl.oldest_time == 0 || r.commit_time < pl.oldest_time) pl.oldest_time = r.commit_time;
        }
      }
      from = page->records.back().lsn + 1;
    }
  }
  // Records trimmed before the scan started cannot be counted.
  const bool trimmed = first > 0 && lowest != UINT64_MAX && lowest + 1 < first;
  const int64_t now = NowTicks();
  const std::string at_least = complete && !trimmed ? "" : "≥";

  if (a.format == "json") {
    json::JsonWriter w;
    w.BeginObject();
    w.Key("last_lsn").UInt(last);
    w.Key("scanned").UInt(scanned);
    w.Key("complete").Bool(complete && !trimmed);
    w.Key("pairs").BeginArray();
    for (const auto& [k, p] : pairs) {
      uint64_t total = 0;
      for (const auto& pl : p.parts) total += pl.lag;
      w.BeginObject();
      w.Key("derived").String(p.derived);
      w.Key("source").String(p.source);
      w.Key("partitions").Int(p.partitions);
      w.Key("lag").UInt(total);
      w.Key("by_partition").BeginArray();
      for (size_t i = 0; i < p.parts.size(); i++) {
        const PartitionLag& pl = p.parts[i];
        w.BeginObject();
        w.Key("partition").Int(static_cast<int64_t>(i));
        w.Key("reported").Bool(pl.reported);
        w.Key("applied").UInt(pl.applied);
        w.Key("lag").UInt(pl.lag);
        w.Key("oldest_age_seconds");
        if (pl.oldest_time == 0) w.Null();
        else w.Double(std::max<int64_t>(0, now - pl.oldest_time) / double(kTicksPerSecond));
        w.EndObject();
      }
      w.EndArray();
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
    s.out = w.Take() + "\n";
    return s.Finish();
  }
  s.out = Pad("DERIVED", 20) + Pad("SOURCE", 20) + Pad("PARTITION", 11) + Pad("APPLIED", 12) +
          Pad("LAG", 10) + "OLDEST_AGE_S\n";
  for (const auto& [k, p] : pairs) {
    for (size_t i = 0; i < p.parts.size(); i++) {
      const PartitionLag& pl = p.parts[i];
      s.out += Pad(p.derived, 20) + Pad(p.source, 20) + Pad(std::to_string(i), 11) +
               Pad(pl.reported ? std::to_string(pl.applied) : "-", 12) +
               Pad(at_least + std::to_string(pl.lag), 10) +
               Age(now, pl.oldest_time) + "\n";
    }
  }
  if (!complete) {
    s.out += "(scan stopped after " + std::to_string(scanned) + " change records; counts are lower bounds)\n";
  }
  if (trimmed) s.out += "(records below LSN " + std::to_string(first) + " were trimmed; counts are lower bounds)\n";
  // An empty table reads as "no lag": say why when a name was asked for (a
  // typo, or a table no worker registered yet).
  if (pairs.empty() && !a.table.empty()) {
    s.out +=
        "(" + a.table + " is not registered as a derived table: no worker has reported for it)\n";
  }
  return s.Finish();
}

int RunForgetDerived(Session& s, const CommandArgs& a) {
  client::Client* c = s.Client();
  if (!c) return s.connect_exit;
  // What was registered, to say what goes (the forget itself answers
  // nothing: forgetting what is not there is not an error).
  auto marks = c->ReadWatermarks(a.table);
  if (!marks.ok()) return s.Fail(marks.status());
  std::map<std::string, std::string> sources;  // canonical name -> as reported
  for (const auto& w : *marks) sources.emplace(TableKey(w.source_table).str(), w.source_table);
  if (Status f = c->ForgetWatermarks(a.table); !f.ok()) return s.Fail(f);
  if (sources.empty()) {
    s.out = a.table + " was not registered as a derived table: nothing to forget\n";
  } else {
    s.out = "forgot " + a.table + " as derived from";
    for (const auto& [key, name] : sources) s.out += " " + name;
    s.out += " (a worker still deriving it registers it again with its next report)\n";
  }
  return s.Finish();
}

}  // namespace sidetable::cli
