#include "sidecar/query_prefetch.h"

#include <algorithm>
#include <cstring>

namespace sidetable::sidecar {
namespace {

// Each part with its length first, so no two different requests share a key.
void AppendPart(std::string* key, std::string_view part) {
  const auto n = static_cast<uint32_t>(part.size());
  char len[sizeof(n)];
  std::memcpy(len, &n, sizeof(n));
  key->append(len, sizeof(n));
  key->append(part);
}

}  // namespace

std::string QueryPrefetch::KeyFor(const std::string& envelope, const wire::Request& r) {
  std::string key;
  AppendPart(&key, envelope);
  AppendPart(&key, r.token);
  AppendPart(&key, r.table);
  AppendPart(&key, r.filter);
  AppendPart(&key, std::to_string(r.select.size()));
  for (const auto& s : r.select) AppendPart(&key, s);
  AppendPart(&key, r.top ? std::to_string(*r.top) : std::string());
  // Absent and empty differ: a continuation of ("", "") is a real one.
  AppendPart(&key, r.next_pk ? "+" + *r.next_pk : std::string());
  // The handler reads an absent RowKey of a continuation as "".
  AppendPart(&key, r.next_rk.value_or(""));
  return key;
}

void QueryPrefetch::DropExpired(std::chrono::steady_clock::time_point now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.ready && it->second.expires <= now) {
      stats_.held_bytes -= it->second.page.reply.size();
      stats_.held_pages--;
      stats_.unused++;
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

bool QueryPrefetch::Begin(const std::string& key, uint64_t sequence, uint64_t page_sequence) {
  std::lock_guard lock(mu_);
  if (sequence != page_sequence) {
    stats_.writing++;
    return false;
  }
  // Recent pages went stale more than they were served: writes come in
  // bursts the check above misses. Only one prefetch in kProbeEvery runs,
  // to notice when that ends.
  if (balance_ < 0 && probe_++ % kProbeEvery != 0) {
    stats_.writing++;
    return false;
  }
  DropExpired(std::chrono::steady_clock::now());
  if (entries_.count(key) != 0) return false;
  if (entries_.size() >= options_.max_entries || stats_.held_bytes >= options_.max_bytes) {
    stats_.skipped++;
    return false;
  }
  Entry& e = entries_[key];
  e.sequence = sequence;
  stats_.started++;
  return true;
}

void QueryPrefetch::Finish(const std::string& key, std::string reply, uint64_t entities) {
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end() || it->second.ready) return;  // not Begin's (a misuse): nothing to do
    if (reply.empty() || stats_.held_bytes + reply.size() > options_.max_bytes) {
      entries_.erase(it);
      stats_.unused++;
    } else {
      Entry& e = it->second;
      e.ready = true;
      e.expires = std::chrono::steady_clock::now() + options_.ttl;
      stats_.held_bytes += reply.size();
      stats_.held_pages++;
      e.page.reply = std::move(reply);
      e.page.entities = entities;
    }
  }
  ready_cv_.notify_all();
}

std::optional<QueryPrefetch::Page> QueryPrefetch::Take(const std::string& key,
                                                       const std::function<uint64_t()>& current_sequence,
                                                       std::chrono::steady_clock::time_point deadline) {
  std::unique_lock lock(mu_);
  auto it = entries_.find(key);
  // Being computed: it is further along than a scan started now would be.
  // (Finish erases a failed one, so the entry is looked up again.)
  ready_cv_.wait_until(lock, deadline, [&] {
    it = entries_.find(key);
    return it == entries_.end() || it->second.ready;
  });
  if (it == entries_.end() || !it->second.ready) return std::nullopt;  // none, or left to its computer
  Entry e = std::move(it->second);
  entries_.erase(it);
  stats_.held_bytes -= e.page.reply.size();
  stats_.held_pages--;
  // Read under the lock only to keep the order simple; it is one atomic load.
  if (current_sequence() != e.sequence) {
    stats_.stale++;
    balance_ = std::max(kMinBalance, balance_ - kStaleWeight);
    return std::nullopt;
  }
  stats_.served++;
  balance_ = std::min(kMaxBalance, balance_ + 1);
  return std::move(e.page);
}

void QueryPrefetch::Expire() {
  std::lock_guard lock(mu_);
  DropExpired(std::chrono::steady_clock::now());
}

QueryPrefetchStats QueryPrefetch::Stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

}  // namespace sidetable::sidecar
