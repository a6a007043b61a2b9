#include "workers/archive_rules.h"

#include <spdlog/spdlog.h>

#include <chrono>
#include <optional>
#include <thread>

#include "apply/event_processor.h"
#include "apply/grouped_moves.h"
#include "client/client.h"
#include "common/process.h"

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

Status RunArchiveRule(const ArchiveRule& rule, int64_t now_ticks, apply::TableStore* store, apply::OpApplier* applier,
                      const std::atomic<bool>& stop, uint64_t* moved) {
  *moved = 0;
  const std::string filter = ArchiveFilter(rule, now_ticks);
  // Retries stay with the scheduler (the next run); a group is tried twice.
  const apply::RetryPolicy policy{2, 50, 200};
  apply::ApplyObserver observer;
  apply::GroupedWrites::Sleeper sleep = [&stop](int ms) {
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    return !stop.load(std::memory_order_relaxed);
  };
  apply::Continuation next;
  do {
    auto page = store->QueryPage(rule.source(), filter, next);
    if (!page.ok()) {
      if (page.status().code() == Code::kTableNotFound) return Status::OK();
      return page.status();
    }
    std::vector<patterns::TableOp> ops;
    patterns::ArchiveMoves(rule, page->entities, &ops);
    if (stop.load(std::memory_order_relaxed)) return Status::OK();
    // The page holds the sources as read: copies and deletes go grouped
    // (apply/grouped_moves.h), a page in a few round trips.
    std::vector<apply::MoveItem> items;
    items.reserve(ops.size());
    for (const patterns::TableOp& op : ops) {
      std::optional<Entity> source;
      for (const Entity& e : page->entities) {
        if (e.partition_key == op.entity.partition_key && e.row_key == op.entity.row_key) {
          source = e;
          break;
        }
      }
      items.push_back({&op, std::move(source), 0});
    }
    std::vector<apply::EventFailure> failures(1);
    uint64_t page_moved = 0;
    apply::GroupedWrites writes(store, applier, &policy, &observer, &sleep);
    apply::MoveMany(store, applier, &writes, items, &failures, &observer, &page_moved);
    *moved += page_moved;
    if (!failures[0].status.ok()) return failures[0].status;
    next = page->next;
  } while (next && !stop.load(std::memory_order_relaxed));
  return Status::OK();
}

Result<std::unique_ptr<ArchiveScheduler>> ArchiveScheduler::Start(std::vector<ArchiveRule> rules,
                                                                  const ArchiveOptions& o,
                                                                  WorkerMetrics* metrics) {
  std::unique_ptr<ArchiveScheduler> s(new ArchiveScheduler());
  s->rules_ = std::move(rules);
  s->metrics_ = metrics;
  client::ClientOptions co;
  co.endpoint = o.endpoint;
  co.curve = o.curve;
  co.timeout = std::chrono::milliseconds(o.timeout_ms);
  co.caller = o.caller;
  co.token = o.token;
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
      uint64_t moved = 0;
      Status s = RunArchiveRule(r, NowTicks(), store_.get(), applier_.get(), stop_, &moved);
      metrics_->RecordArchiveRun(moved);
      if (!s.ok()) {
        spdlog::warn("archive {} -> {}: {} (moved {}; next try in {} s)", r.source(), r.target(),
                     s.ToString(), moved, r.interval_seconds());
      } else if (moved > 0) {
        spdlog::info("archive {} -> {}: moved {} entities", r.source(), r.target(), moved);
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
