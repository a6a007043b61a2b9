#include "sidecar/source_routes.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <utility>

#include <spdlog/spdlog.h>

#include "common/kafka/partitioner.h"
#include "engine/table_name.h"

namespace sidetable::sidecar {
namespace {

// Settings: one per table ("<prefix>t/<table key>": its name as created,
// then "P=n0,n1,...;" per tracked count) and the state ("observed=S
// counts=P:complete_from,..."). Written only by Persist(), so anything
// else is a damaged store.
constexpr std::string_view kRoutesStateKey = "session-routes/state";
constexpr std::string_view kRoutesTablePrefix = "session-routes/t/";

}  // namespace

SourceRoutes::SourceRoutes(std::vector<int32_t> partitions) {
  for (int32_t p : partitions) {
    if (p < 1) continue;
    bool seen = false;
    for (const Count& c : counts_) seen = seen || c.partitions == p;
    if (!seen) counts_.push_back(Count{p, 1});
  }
  tracking_.store(!counts_.empty());
}

uint32_t SourceRoutes::HashOf(std::string_view table, std::string_view partition_key,
                              std::string* buf) {
  // The change stream's message key (changestream::KeyFor), built in a
  // reused buffer: no allocation per record.
  buf->assign(table);
  buf->push_back('/');
  buf->append(partition_key);
  return kafka::Murmur2(*buf) & 0x7fffffff;
}

SourceRoutes::Source& SourceRoutes::SourceLocked(const std::string& table) {
  auto cached = by_name_.find(table);
  if (cached != by_name_.end()) return *cached->second;
  Source& s = sources_[TableKey(table).str()];
  // A table deleted and created again under another case: the newest name.
  s.name = table;
  by_name_[table] = &s;
  return s;
}

void SourceRoutes::ApplyLocked(uint64_t lsn, const std::string& table, uint32_t hash) {
  Source& s = SourceLocked(table);
  if (s.newest.size() < counts_.size()) s.newest.resize(counts_.size());
  for (size_t i = 0; i < counts_.size(); i++) {
    const int32_t partitions = counts_[i].partitions;
    std::vector<uint64_t>& newest = s.newest[i];
    if (newest.empty()) newest.assign(static_cast<size_t>(partitions), 0);
    // As KafkaPartitionFor: a count of 1 is partition 0.
    const size_t q = partitions <= 1 ? 0 : hash % static_cast<uint32_t>(partitions);
    newest[q] = std::max(newest[q], lsn);
  }
  s.dirty = true;
}

void SourceRoutes::Staged(uint64_t lsn, std::string_view table, std::string_view partition_key) {
  staged_last_ = lsn;
  if (!tracking_.load(std::memory_order_acquire)) {
    staged_untracked_ = true;
    return;
  }
  if (npending_ == pending_.size()) pending_.emplace_back();
  Pending& p = pending_[npending_++];
  p.lsn = lsn;
  p.table.assign(table);  // keeps the slot's capacity
  p.hash = HashOf(table, partition_key, &key_buf_);
}

void SourceRoutes::Settled(bool written) {
  if (staged_last_ == 0) return;
  if (written) {
    std::unique_lock lock(mu_);
    for (size_t i = 0; i < npending_; i++)
      ApplyLocked(pending_[i].lsn, pending_[i].table, pending_[i].hash);
    // Records staged before the first count was tracked are not in the
    // routes: the counts are whole only after them.
    if (staged_untracked_) {
      for (Count& c : counts_) c.complete_from = std::max(c.complete_from, staged_last_ + 1);
      counts_dirty_ = counts_dirty_ || !counts_.empty();
    }
    observed_.store(std::max(observed_.load(std::memory_order_relaxed), staged_last_),
                    std::memory_order_release);
  }
  npending_ = 0;
  staged_last_ = 0;
  staged_untracked_ = false;
}

bool SourceRoutes::Newest(std::string_view source, int32_t partitions, Routes* out) {
  out->newest.clear();
  {
    std::shared_lock lock(mu_);
    for (size_t i = 0; i < counts_.size(); i++) {
      if (counts_[i].partitions != partitions) continue;
      out->complete_from = counts_[i].complete_from;
      auto it = sources_.find(TableKey(source).str());
      if (it != sources_.end() && i < it->second.newest.size() && !it->second.newest[i].empty()) {
        out->newest = it->second.newest[i];
      } else {
        out->newest.assign(static_cast<size_t>(partitions), 0);
      }
      return true;
    }
  }
  Track(partitions);
  return false;
}

void SourceRoutes::Track(int32_t partitions) {
  if (partitions < 1) return;
  {
    std::shared_lock lock(mu_);
    for (const Count& c : counts_) {
      if (c.partitions == partitions) return;
    }
  }
  std::unique_lock lock(mu_);
  for (const Count& c : counts_) {
    if (c.partitions == partitions) return;  // added meanwhile
  }
  // Whole from the next record: Settled() applies what is staged now to
  // it too, and it takes this lock before it moves observed_.
  counts_.push_back(Count{partitions, observed_.load(std::memory_order_acquire) + 1});
  counts_dirty_ = true;
  tracking_.store(true, std::memory_order_release);
}

namespace {

struct RoutesSnapshot {
  uint64_t observed = 0;
  std::vector<std::pair<int32_t, uint64_t>> counts;  // (partitions, complete_from)
  // (name as created, per partition count its newest LSN per partition)
  std::vector<std::pair<std::string, std::map<int32_t, std::vector<uint64_t>>>> tables;
};

// Parses what Persist() wrote; false names the first damaged setting.
bool ParseRoutesSnapshot(const std::string& state,
                         const std::vector<std::pair<std::string, std::string>>& tables,
                         RoutesSnapshot* out, std::string* damaged) {
  // "observed=S counts=P:C,P:C"
  *damaged = std::string(kRoutesStateKey);
  std::istringstream is(state);
  std::string observed, counts;
  if (!(is >> observed >> counts) || observed.rfind("observed=", 0) != 0 ||
      counts.rfind("counts=", 0) != 0) {
    return false;
  }
  try {
    out->observed = std::stoull(observed.substr(9));
  } catch (...) {
    return false;
  }
  std::istringstream cs(counts.substr(7));
  std::string item;
  while (std::getline(cs, item, ',')) {
    int32_t partitions = 0;
    uint64_t complete_from = 0;
    char colon = 0;
    std::istringstream ci(item);
    if (!(ci >> partitions >> colon >> complete_from) || colon != ':' || partitions < 1)
      return false;
    out->counts.emplace_back(partitions, complete_from);
  }
  for (const auto& [key, value] : tables) {
    // "<name>\n" then "P=n0,...;" per count.
    *damaged = key;
    const size_t nl = value.find('\n');
    if (nl == std::string::npos || nl == 0) return false;
    auto& table =
        out->tables.emplace_back(value.substr(0, nl), std::map<int32_t, std::vector<uint64_t>>{});
    std::istringstream ts(value.substr(nl + 1));
    std::string part;
    while (std::getline(ts, part, ';')) {
      const size_t eq = part.find('=');
      if (eq == std::string::npos) return false;
      std::vector<uint64_t> newest;
      int32_t partitions = 0;
      try {
        partitions = std::stoi(part.substr(0, eq));
        std::istringstream ns(part.substr(eq + 1));
        std::string n;
        while (std::getline(ns, n, ',')) newest.push_back(std::stoull(n));
      } catch (...) {
        return false;
      }
      if (partitions < 1 || newest.size() != static_cast<size_t>(partitions)) return false;
      table.second[partitions] = std::move(newest);
    }
  }
  return true;
}

}  // namespace

Status SourceRoutes::Load(const Engine& engine, uint64_t max_scan) {
  auto state = engine.GetSetting(kRoutesStateKey);
  if (!state.ok()) return state.status();
  auto tables = engine.ListSettings(kRoutesTablePrefix);
  if (!tables.ok()) return tables.status();
  const EngineStats st = engine.Stats();

  RoutesSnapshot snap;
  bool have = state->has_value();
  if (have) {
    std::string damaged;
    if (!ParseRoutesSnapshot(**state, *tables, &snap, &damaged)) {
      // Derived data: read the log again rather than refuse to start.
      spdlog::warn(
          "session routes: setting '{}' is damaged; they are read again from the change log",
          damaged);
      have = false;
      snap = RoutesSnapshot{};
    }
  }

  std::unique_lock lock(mu_);
  // Without a snapshot: from the log's start. Counts asked for at start and
  // not in the snapshot are whole only after it (nothing was kept for them).
  uint64_t from = have ? snap.observed + 1 : st.first_available_lsn;
  for (Count& c : counts_) c.complete_from = from;
  for (const auto& [partitions, complete_from] : snap.counts) {
    auto it = std::find_if(counts_.begin(), counts_.end(),
                           [&](const Count& k) { return k.partitions == partitions; });
    if (it == counts_.end()) {
      counts_.push_back(Count{partitions, complete_from});
    } else {
      it->complete_from = complete_from;
    }
  }
  for (auto& [name, per_count] : snap.tables) {
    Source& src = SourceLocked(name);
    src.newest.resize(counts_.size());
    for (size_t i = 0; i < counts_.size(); i++) {
      auto it = per_count.find(counts_[i].partitions);
      if (it != per_count.end()) src.newest[i] = std::move(it->second);
    }
  }

  // The records after the snapshot (a second's worth after a crash; the
  // whole log the first time), headers only.
  const uint64_t last = st.last_lsn;
  if (last >= from && last - from + 1 > max_scan) {
    spdlog::warn(
        "session routes: {} change records after the last snapshot; the newest {} are read, and a "
        "session token of an older write waits only for its own record's partition",
        last - from + 1, max_scan);
    from = last - max_scan + 1;
    for (Count& c : counts_) c.complete_from = std::max(c.complete_from, from);
  }
  std::string buf;
  uint64_t next = from;
  while (next <= last) {
    auto page = engine.ReadChangeHeaders(
        next, static_cast<size_t>(std::min<uint64_t>(10'000, last - next + 1)));
    if (!page.ok()) return page.status();
    if (page->records.empty()) break;
    for (const ChangeRecord& r : page->records) {
      if (r.lsn > last) break;
      if (r.lsn != next) {
        // Trimmed before it was persisted (a crash in between): where the
        // records before r went is not known.
        for (Count& c : counts_) c.complete_from = std::max(c.complete_from, r.lsn);
      }
      ApplyLocked(r.lsn, r.table, HashOf(r.table, r.partition_key, &buf));
      next = r.lsn + 1;
    }
    if (next <= page->records.back().lsn) break;  // a page past `last`
  }
  observed_.store(std::max(observed_.load(), last), std::memory_order_release);
  counts_dirty_ = true;
  tracking_.store(!counts_.empty(), std::memory_order_release);
  return Status::OK();
}

Status SourceRoutes::Persist(Engine* engine) {
  // Copied under the lock, encoded outside it: the commit path (Settled)
  // waits for this lock, and text for thousands of tables takes a while.
  struct Dirty {
    const std::string* key;  // sources_ never erases: stable
    std::string name;
    std::vector<std::vector<uint64_t>> newest;
  };
  std::vector<Dirty> dirty;
  std::vector<Source*> written;
  std::vector<Count> counts;
  uint64_t observed = 0;
  {
    std::unique_lock lock(mu_);
    if (counts_.empty()) return Status::OK();
    for (auto& [key, src] : sources_) {
      if (!src.dirty) continue;
      dirty.push_back(Dirty{&key, src.name, src.newest});
      src.dirty = false;
      written.push_back(&src);
    }
    observed = observed_.load(std::memory_order_acquire);
    if (dirty.empty() && !counts_dirty_ && observed == persisted_) return Status::OK();
    counts = counts_;
    counts_dirty_ = false;
    persisted_ = observed;
  }
  std::vector<std::pair<std::string, std::string>> settings;
  settings.reserve(dirty.size() + 1);
  for (const Dirty& d : dirty) {
    std::string v = d.name + "\n";
    for (size_t i = 0; i < counts.size() && i < d.newest.size(); i++) {
      if (d.newest[i].empty()) continue;
      v += std::to_string(counts[i].partitions) + "=";
      for (size_t q = 0; q < d.newest[i].size(); q++) {
        if (q > 0) v += ',';
        v += std::to_string(d.newest[i][q]);
      }
      v += ';';
    }
    settings.emplace_back(std::string(kRoutesTablePrefix) + *d.key, std::move(v));
  }
  std::string state = "observed=" + std::to_string(observed) + " counts=";
  for (size_t i = 0; i < counts.size(); i++) {
    if (i > 0) state += ',';
    state += std::to_string(counts[i].partitions) + ":" + std::to_string(counts[i].complete_from);
  }
  settings.emplace_back(std::string(kRoutesStateKey), std::move(state));
  Status s = engine->PutSettings(settings);
  if (!s.ok()) {
    // Written again at the next call; logged once, not every second.
    std::unique_lock lock(mu_);
    for (Source* src : written) src->dirty = true;
    counts_dirty_ = true;
    if (!persist_failing_)
      spdlog::error("persisting the session routes: {} (retried every second)", s.ToString());
    persist_failing_ = true;
    return s;
  }
  if (persist_failing_) spdlog::info("persisting the session routes works again");
  persist_failing_ = false;
  return Status::OK();
}

}  // namespace sidetable::sidecar
