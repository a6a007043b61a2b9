#include "sidecar/watermarks.h"

#include <algorithm>
#include <charconv>
#include <sstream>

#include "engine/table_name.h"

namespace sidetable::sidecar {
namespace {

constexpr std::string_view kPrefix = "wm/";
// Outside kPrefix, so that Load() does not read it as a pair.
constexpr std::string_view kEverKey = "wm-registered";

// A pair's registration LSN (Watermarks::Since), apart from the pair's own
// setting so that binaries before session 46 still read that one.
constexpr std::string_view kSincePrefix = "wm-since/";

std::string SettingKey(const std::string& derived_key, const std::string& source_key) {
  return std::string(kPrefix) + derived_key + "/" + source_key;
}
std::string SinceKey(const std::string& derived_key, const std::string& source_key) {
  return std::string(kSincePrefix) + derived_key + "/" + source_key;
}

}  // namespace

// "v1 <derived> <source> <partitions>" then " <partition>:<lsn>:<time>" per
// partition. Names are letters and digits, so spaces separate safely.
std::string Watermarks::Encode(const Pair& p) {
  std::string out = "v1 " + p.derived + " " + p.source + " " + std::to_string(p.partitions);
  for (const auto& [partition, a] : p.applied) {
    out += " " + std::to_string(partition) + ":" + std::to_string(a.lsn) + ":" + std::to_string(a.time);
  }
  return out;
}

bool Watermarks::Decode(std::string_view value, Pair* p) {
  std::istringstream in{std::string(value)};
  std::string version;
  if (!(in >> version >> p->derived >> p->source >> p->partitions) || version != "v1") return false;
  if (p->partitions < 1 || p->partitions > wire::kMaxWatermarkPartitions) return false;
  std::string item;
  while (in >> item) {
    int32_t partition = 0;
    Applied a;
    char c1 = 0, c2 = 0;
    std::istringstream is(item);
    if (!(is >> partition >> c1 >> a.lsn >> c2 >> a.time) || c1 != ':' || c2 != ':') return false;
    if (partition < 0 || partition >= p->partitions) return false;
    p->applied[partition] = a;
  }
  return true;
}

Result<std::unique_ptr<Watermarks>> Watermarks::Load(Engine* engine) {
  std::unique_ptr<Watermarks> w(new Watermarks(engine));
  auto stored = engine->ListSettings(kPrefix);
  if (!stored.ok()) return stored.status();
  for (const auto& [key, value] : *stored) {
    Pair p;
    // Written only by Advance(): anything else is a damaged store, and
    // serving reads on a guess would break what they promise.
    if (!Decode(value, &p)) {
      return Status(Code::kInternal, "damaged watermark setting '" + key + "': '" + value + "'");
    }
    PairKey k{TableKey(p.derived).str(), TableKey(p.source).str()};
    w->derived_[k.first]++;
    w->pairs_[std::move(k)] = std::move(p);
  }
  auto since = engine->ListSettings(kSincePrefix);
  if (!since.ok()) return since.status();
  const uint64_t now = engine->Stats().last_lsn;
  for (auto& [k, p] : w->pairs_) {
    // Registered before session 46 kept no LSN: from this start on (stored
    // with the pair's next report).
    p.since = now;
    p.since_stored = false;
  }
  for (const auto& [key, value] : *since) {
    const std::string_view rest = std::string_view(key).substr(kSincePrefix.size());
    const size_t slash = rest.find('/');
    uint64_t lsn = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), lsn);
    if (slash == std::string_view::npos || ec != std::errc() ||
        end != value.data() + value.size()) {
      return Status(Code::kInternal, "damaged watermark setting '" + key + "': '" + value + "'");
    }
    auto it = w->pairs_.find(
        PairKey(std::string(rest.substr(0, slash)), std::string(rest.substr(slash + 1))));
    if (it == w->pairs_.end()) continue;  // its pair was forgotten by a binary before session 46
    it->second.since = lsn;
    it->second.since_stored = true;
  }
  auto ever = engine->GetSetting(kEverKey);
  if (!ever.ok()) return ever.status();
  // A directory from before the flag that holds pairs had a worker too; the
  // flag is written with its next report.
  w->ever_ = ever->has_value() || !w->pairs_.empty();
  return w;
}

Status Watermarks::Advance(const std::vector<wire::WatermarkEntry>& entries) {
  const uint64_t last = engine_->Stats().last_lsn;
  std::lock_guard advance(advance_mu_);
  // The pairs this request touches, as they will be: computed from a copy,
  // written, and only then published to readers.
  std::map<PairKey, Pair> changed;
  std::map<PairKey, int32_t> counts;  // the partition count this request names per pair
  {
    std::shared_lock lock(mu_);
    for (size_t i = 0; i < entries.size(); i++) {
      const wire::WatermarkEntry& e = entries[i];
      const std::string where = "watermarks[" + std::to_string(i) + "]";
      if (e.lsn > last) {
        return Status(Code::kInvalidInput, where + ".lsn " + std::to_string(e.lsn) +
                                               " is above the change log's last LSN " + std::to_string(last));
      }
      PairKey k{TableKey(e.derived).str(), TableKey(e.source).str()};
      auto [count, fresh] = counts.emplace(k, e.partitions);
      if (!fresh && count->second != e.partitions) {
        return Status(Code::kInvalidInput, where + " names " + std::to_string(e.partitions) +
                                               " partitions for a pair this request already gave " +
                                               std::to_string(count->second));
      }
      auto it = changed.find(k);
      if (it == changed.end()) {
        auto old = pairs_.find(k);
        Pair p = old != pairs_.end() ? old->second : Pair{};
        if (old == pairs_.end()) {
          // Changes before the registration are not promised to a session
          // (docs/consistency.md): its routes count from here.
          p.since = last;
          p.since_stored = false;
        }
        if (old == pairs_.end() || p.partitions != e.partitions) {
          // New pair, or the topic's partition count changed: partitions
          // that no longer exist go; the others keep what they applied.
          p.partitions = e.partitions;
          p.applied.erase(p.applied.lower_bound(e.partitions), p.applied.end());
        }
        p.derived = e.derived;
        p.source = e.source;
        it = changed.emplace(k, std::move(p)).first;
      }
      Applied& a = it->second.applied[e.partition];
      if (e.lsn > a.lsn || (e.lsn == a.lsn && a.time == 0)) {
        a.lsn = e.lsn;
        a.time = e.time;
      }
    }
  }
  std::vector<std::pair<std::string, std::string>> settings;
  settings.reserve(changed.size());
  for (auto& [k, p] : changed) {
    settings.emplace_back(SettingKey(k.first, k.second), Encode(p));
    if (!p.since_stored)
      settings.emplace_back(SinceKey(k.first, k.second), std::to_string(p.since));
    p.since_stored = true;
  }
  bool first_ever = false;
  {
    std::shared_lock lock(mu_);
    first_ever = !ever_;
  }
  if (first_ever) settings.emplace_back(std::string(kEverKey), "1");
  ST_RETURN_IF_ERROR(engine_->PutSettings(settings));
  if (on_count_) {
    for (const auto& [k, p] : changed) on_count_(p.partitions);
  }
  std::unique_lock lock(mu_);
  ever_ = true;
  for (auto& [k, p] : changed) {
    auto [it, fresh] = pairs_.insert_or_assign(k, std::move(p));
    if (fresh) derived_[k.first]++;
  }
  return Status::OK();
}

Status Watermarks::ForgetDerived(std::string_view derived) {
  const std::string key = TableKey(derived).str();
  std::lock_guard advance(advance_mu_);
  std::vector<std::string> settings;
  {
    std::shared_lock lock(mu_);
    for (auto it = pairs_.lower_bound(PairKey(key, ""));
         it != pairs_.end() && it->first.first == key; ++it) {
      settings.push_back(SettingKey(it->first.first, it->first.second));
      settings.push_back(SinceKey(it->first.first, it->first.second));
    }
  }
  if (settings.empty()) return Status::OK();
  ST_RETURN_IF_ERROR(engine_->DeleteSettings(settings));
  std::unique_lock lock(mu_);
  auto it = pairs_.lower_bound(PairKey(key, ""));
  while (it != pairs_.end() && it->first.first == key) it = pairs_.erase(it);
  derived_.erase(key);
  return Status::OK();
}

std::vector<wire::WatermarkEntry> Watermarks::Read(std::string_view derived) const {
  std::vector<wire::WatermarkEntry> out;
  const std::string key = derived.empty() ? std::string() : TableKey(derived).str();
  std::shared_lock lock(mu_);
  for (const auto& [k, p] : pairs_) {
    if (!key.empty() && k.first != key) continue;
    for (const auto& [partition, a] : p.applied) {
      out.push_back(wire::WatermarkEntry{p.derived, p.source, partition, p.partitions, a.lsn, a.time});
    }
  }
  return out;
}

std::optional<uint64_t> Watermarks::LowestApplied() const {
  std::shared_lock lock(mu_);
  std::optional<uint64_t> lowest;
  for (const auto& [k, p] : pairs_) {
    // A partition that never reported has applied nothing we know of.
    uint64_t low = p.applied.size() < static_cast<size_t>(p.partitions) ? 0 : UINT64_MAX;
    for (const auto& [partition, a] : p.applied) low = std::min(low, a.lsn);
    lowest = std::min(lowest.value_or(low), low);
  }
  return lowest;
}

bool Watermarks::EverRegistered() const {
  std::shared_lock lock(mu_);
  return ever_;
}

bool Watermarks::IsDerived(std::string_view derived) const {
  std::shared_lock lock(mu_);
  if (derived_.empty()) return false;
  return derived_.count(TableKey(derived).str()) > 0;
}

std::optional<Watermarks::Registration> Watermarks::Registered(std::string_view derived,
                                                               std::string_view source) const {
  PairKey k{TableKey(derived).str(), TableKey(source).str()};
  std::shared_lock lock(mu_);
  auto it = pairs_.find(k);
  if (it == pairs_.end()) return std::nullopt;
  return Registration{it->second.partitions, it->second.since};
}

bool Watermarks::CoversLocked(const Requirement& req) const {
  auto it = pairs_.find(PairKey(req.derived_key, req.source_key));
  if (it == pairs_.end()) return true;  // not registered: nothing to wait for
  const Pair& p = it->second;
  // The partition is only meaningful for the count it was computed with;
  // after a change, every partition must be past the record.
  if (req.partition >= 0 && req.partitions == p.partitions) {
    auto a = p.applied.find(req.partition);
    return a != p.applied.end() && a->second.lsn >= req.lsn;
  }
  if (static_cast<int32_t>(p.applied.size()) < p.partitions) return false;
  for (const auto& [partition, a] : p.applied) {
    if (a.lsn < req.lsn) return false;
  }
  return true;
}

bool Watermarks::Covers(const Requirement& req) const {
  std::shared_lock lock(mu_);
  return CoversLocked(req);
}

bool Watermarks::CoversAll(const std::vector<Requirement>& reqs) const {
  std::shared_lock lock(mu_);
  for (const auto& r : reqs) {
    if (!CoversLocked(r)) return false;
  }
  return true;
}

}  // namespace sidetable::sidecar
