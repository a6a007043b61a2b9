#include "workers/archive_rules.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <thread>

#include "apply/event_processor.h"
#include "apply/grouped_moves.h"
#include "client/client.h"
#include "common/process.h"
#include "engine/etag.h"

namespace sidetable::workers {
Status ParseArchiveRules(const std::vector<patterns::PatternConfig>& patterns, std::vector<ArchiveRule>* out) {
  out->clear();
  for (const auto& pc : patterns) {
    if (pc.name != patterns::kArchiveName) continue;
    auto r = patterns::ArchiveConfig::FromSettings(pc);
    if (!r.ok()) return r.status();
    if (r->has_rule()) out->push_back(std::move(r).value());
  }
  return Status::OK();
}

std::string ArchiveFilter(const ArchiveRule& rule, int64_t now_ticks) {
  const std::string age =
      "Timestamp lt datetime'" + FormatDateTime(now_ticks - rule.min_age_seconds() * kTicksPerSecond) + "'";
  if (rule.filter().find_first_not_of(" \t\r\n") == std::string::npos) return age;
  return "(" + rule.filter() + ") and " + age;
}

const ArchiveFailure* UnmovableEntities::Find(const std::string& pk, const std::string& rk,
                                              uint64_t version) const {
  auto it = known_.find({pk, rk});
  return it != known_.end() && it->second.version == version ? &it->second : nullptr;
}

void UnmovableEntities::Update(const ArchiveRun& run) {
  // A complete evaluation saw every entity that still matches: the others
  // were moved, changed or deleted, and are forgotten.
  std::map<std::pair<std::string, std::string>, ArchiveFailure> next;
  if (!run.complete) next = std::move(known_);
  for (const auto* list : {&run.skipped, &run.failed}) {
    for (const ArchiveFailure& f : *list) {
      auto key = std::make_pair(f.partition_key, f.row_key);
      if (next.size() < kMaxRemembered || next.count(key)) next[key] = f;
    }
  }
  known_ = std::move(next);
}

Status RunArchiveRule(const ArchiveRule& rule, int64_t now_ticks, apply::TableStore* store,
                      apply::OpApplier* applier, const std::atomic<bool>& stop,
                      const UnmovableEntities* known, ArchiveRun* run) {
  *run = ArchiveRun();
  const std::string filter = ArchiveFilter(rule, now_ticks);
  // Retries stay with the scheduler (the next run); a group is tried twice,
  // whatever the failure: no wait for a busy service (max_wait_ms 0).
  const apply::RetryPolicy policy{2, 50, 200, /*max_wait_ms=*/0};
  apply::ApplyObserver observer;
  apply::GroupedWrites::Sleeper sleep = [&stop](int ms) {
    // In steps, so that a stop is not held up by a back-off either.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (!stop.load(std::memory_order_relaxed) && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return !stop.load(std::memory_order_relaxed);
  };
  Status transient;
  apply::Continuation next;
  do {
    auto page = store->QueryPage(rule.source(), filter, next);
    if (!page.ok()) {
      if (page.status().code() != Code::kTableNotFound) return page.status();
      run->complete = true;
      return Status::OK();
    }
    if (stop.load(std::memory_order_relaxed)) return Status::OK();
    // Those known to fail at this version are not tried again.
    std::vector<Entity> found;
    found.reserve(page->entities.size());
    for (Entity& e : page->entities) {
      const ArchiveFailure* f = known == nullptr ? nullptr
                                                 : known->Find(e.partition_key, e.row_key,
                                                               VersionFromETag(e.etag).value_or(0));
      if (f != nullptr) {
        run->skipped.push_back(*f);
      } else {
        found.push_back(std::move(e));
      }
    }
    std::vector<patterns::TableOp> ops;
    patterns::ArchiveMoves(rule, found, &ops);
    // The page holds the sources as read: copies and deletes go grouped
    // (apply/grouped_moves.h), a page in a few round trips. Each entity is
    // its own "event", so that one failing holds back no other.
    std::vector<apply::MoveItem> items;
    items.reserve(ops.size());
    // ArchiveMoves keeps the order of `found`, leaving out entities without a version.
    size_t at = 0;
    for (size_t i = 0; i < ops.size(); i++) {
      const patterns::TableOp& op = ops[i];
      while (at < found.size() && (found[at].partition_key != op.entity.partition_key ||
                                   found[at].row_key != op.entity.row_key)) {
        at++;
      }
      std::optional<Entity> source;
      if (at < found.size()) source = found[at];
      items.push_back({&op, std::move(source), i});
    }
    std::vector<apply::EventFailure> failures(items.size());
    uint64_t page_moved = 0;
    apply::GroupedWrites writes(store, applier, &policy, &observer, &sleep);
    apply::MoveMany(store, applier, &writes, items, &failures, &observer, &page_moved);
    run->moved += page_moved;
    for (size_t i = 0; i < items.size(); i++) {
      const apply::EventFailure& f = failures[i];
      if (f.status.ok()) continue;
      if (f.interrupted) return Status::OK();  // a stop: the next start goes on
      // A table that is missing (or went away) is no fault of the entity:
      // tried again at the next interval, not remembered.
      if (!f.permanent || f.status.code() == Code::kTableNotFound) {
        if (transient.ok()) transient = f.status;
        continue;
      }
      run->failed.push_back(
          {ops[i].entity.partition_key, ops[i].entity.row_key, ops[i].version, f.status});
    }
    next = page->next;
  } while (next && !stop.load(std::memory_order_relaxed));
  run->complete = !next;
  return transient;
}

Result<std::unique_ptr<ArchiveScheduler>> ArchiveScheduler::Start(std::vector<ArchiveRule> rules,
                                                                  const ArchiveOptions& o,
                                                                  WorkerMetrics* metrics) {
  std::unique_ptr<ArchiveScheduler> s(new ArchiveScheduler());
  s->rules_ = std::move(rules);
  s->unmovable_.resize(s->rules_.size());
  s->metrics_ = metrics;
  client::ClientOptions co;
  co.endpoint = o.endpoint;
  co.curve = o.curve;
  co.timeout = std::chrono::milliseconds(o.timeout_ms);
  co.caller = o.caller;
  co.token = o.token;
  // Stop() abandons a request in flight: a frozen sidecar does not hold the
  // worker's exit (each move is idempotent; the next run redoes what was cut).
  co.abandon = &s->stop_;
  auto c = client::Client::Connect(co);
  if (!c.ok()) return c.status();
  s->client_ = std::move(c).value();
  s->store_ = apply::NewClientTableStore(s->client_.get());
  s->applier_ = std::make_unique<apply::OpApplier>(s->store_.get(), o.fence_attempts);
  s->thread_ = common::NamedThread("st-archive-rule", [raw = s.get()] { raw->Loop(); });
  return s;
}

void ArchiveScheduler::Loop() {
  using Clock = std::chrono::steady_clock;
  std::vector<Clock::time_point> due(rules_.size(), Clock::now());
  while (!stop_.load()) {
    for (size_t i = 0; i < rules_.size() && !stop_.load(); i++) {
      if (Clock::now() < due[i]) continue;
      const ArchiveRule& r = rules_[i];
      ArchiveRun run;
      Status s =
          RunArchiveRule(r, NowTicks(), store_.get(), applier_.get(), stop_, &unmovable_[i], &run);
      // Once per entity and version: it is skipped until it changes.
      for (const ArchiveFailure& f : run.failed) {
        spdlog::warn(
            "archive {} -> {}: {} (version {}); it stays in {} and is not tried again until it "
            "changes",
            r.source(), r.target(), f.status.ToString(), f.version, r.source());
      }
      unmovable_[i].Update(run);
      size_t unmovable = 0;
      for (const UnmovableEntities& u : unmovable_) unmovable += u.size();
      metrics_->RecordArchiveRun(run.moved, run.failed.size(), unmovable);
      if (!s.ok()) {
        spdlog::warn("archive {} -> {}: {} (moved {}; next try in {} s)", r.source(), r.target(),
                     s.ToString(), run.moved, r.interval_seconds());
      } else if (run.moved > 0) {
        spdlog::info("archive {} -> {}: moved {} entities", r.source(), r.target(), run.moved);
      }
      due[i] = Clock::now() + std::chrono::seconds(r.interval_seconds());
    }
    Clock::time_point next = Clock::now() + std::chrono::seconds(1);
    for (const auto& d : due) next = std::min(next, d);
    std::unique_lock lock(mu_);
    cv_.wait_until(lock, next, [this] { return stop_.load(); });
  }
}

void ArchiveScheduler::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_.store(true);
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

ArchiveScheduler::~ArchiveScheduler() { Stop(); }

}  // namespace sidetable::workers
