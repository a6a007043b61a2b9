#include "engine/internal/space_reclaimer.h"

#include <pthread.h>
#include <spdlog/spdlog.h>

namespace sidetable::internal {

void SpaceReclaimer::Reclaim(rocksdb::ColumnFamilyHandle* cf, std::string begin, std::string end) {
  std::lock_guard lock(mu_);
  if (stop_) return;
  queue_.push_back({cf, std::move(begin), std::move(end)});
  // Started at the first drop: most sidecars never delete a table.
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  cv_.notify_one();
}

void SpaceReclaimer::Stop() {
  {
    std::lock_guard lock(mu_);
    if (stop_) return;
    stop_ = true;
    queue_.clear();
    cv_.notify_one();
  }
  if (!thread_.joinable()) return;
  // A manual compaction of a large table may run for a while; RocksDB
  // aborts it (kManualCompactionPaused), and the rows stay dropped: the
  // range deletion is written, only its space waits for a compaction.
  db_->DisableManualCompaction();
  thread_.join();
}

uint64_t SpaceReclaimer::done() const {
  std::lock_guard lock(mu_);
  return done_;
}

void SpaceReclaimer::Run() {
  ::pthread_setname_np(::pthread_self(), "st-reclaim");
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    Range r = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    rocksdb::CompactRangeOptions o;
    // Automatic compactions (the write path's) keep running beside it.
    o.exclusive_manual_compaction = false;
    // The rows usually sit in the last level already; without this RocksDB
    // leaves that level's files as they are when no compaction filter runs.
    o.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
    const rocksdb::Slice begin(r.begin), end(r.end);
    rocksdb::Status s = db_->CompactRange(o, r.cf, &begin, &end);
    if (!s.ok() && !s.IsManualCompactionPaused()) {
      // The rows are deleted either way; their space comes back with the
      // next compaction of those files.
      spdlog::warn("engine: compacting a deleted table's rows: {}", s.ToString());
    }
    lock.lock();
    done_++;
  }
}

}  // namespace sidetable::internal
