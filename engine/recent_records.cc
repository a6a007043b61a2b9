#include "engine/internal/recent_records.h"

#include <xxhash.h>

#include <algorithm>

namespace sidetable::internal {

uint64_t RecentRecords::Hash(std::string_view stored) {
  return XXH3_64bits(stored.data(), stored.size());
}

void RecentRecords::Add(uint64_t lsn, std::string_view stored, std::string resolved) {
  if (max_bytes_ == 0 || resolved.size() >= max_bytes_) return;
  const uint64_t hash = Hash(stored);
  auto kept = std::make_shared<const std::string>(std::move(resolved));
  std::lock_guard lock(mu_);
  // An LSN handed out again (a failed group's, storage_guard.h) replaces
  // what was kept for it and after it.
  while (!entries_.empty() && entries_.back().lsn >= lsn) {
    bytes_ -= entries_.back().resolved->size();
    entries_.pop_back();
  }
  bytes_ += kept->size();
  entries_.push_back({lsn, hash, stored.size(), std::move(kept)});
  while (bytes_ > max_bytes_) {
    bytes_ -= entries_.front().resolved->size();
    entries_.pop_front();
  }
}

bool RecentRecords::Find(uint64_t lsn, std::string_view stored, std::string* resolved) const {
  if (max_bytes_ == 0) return false;
  const uint64_t hash = Hash(stored);
  std::shared_ptr<const std::string> kept;
  {
    std::lock_guard lock(mu_);
    auto it = std::lower_bound(entries_.begin(), entries_.end(), lsn,
                               [](const Entry& e, uint64_t l) { return e.lsn < l; });
    if (it == entries_.end() || it->lsn != lsn || it->size != stored.size() || it->hash != hash) {
      return false;
    }
    kept = it->resolved;
  }
  // Copied outside the lock: the writer adding the next record never waits
  // for a large one to be copied.
  *resolved = *kept;
  return true;
}

size_t RecentRecords::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

}  // namespace sidetable::internal
