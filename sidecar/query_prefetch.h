// QueryPrefetch: the next page of a query, computed while the page before
// it travels to the client.
//
// A client reads a query page by page and can ask for page n+1 only once
// page n has arrived (its continuation is in it), so without this the
// server's scan of page n+1 waits for the transfer of page n and the
// client's request. A worker that answered a page with a continuation, and
// has nothing queued, computes the next page at once and leaves it here
// (query_pages.cc, Server::Impl::PrefetchPage); the request for it, on
// whichever worker, takes it instead of scanning again.
//
// A page is served only if it is exactly what a scan at the time of the
// request returns. The engine's visible sequence is read before the
// prefetch's scan takes its snapshot, and the page is served only if the
// sequence is still the same when it is taken: any write in between (to
// any table) makes the page stale and it is dropped. The key holds all a
// page depends on: the connection, the token, the table, filter, select,
// top and the continuation.
//
// Bounds: at most max_entries pages and max_bytes of them held; a page not
// taken within ttl is dropped. When full, no prefetch starts: nothing is
// evicted for a guess.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "protocol/wire.h"

namespace sidetable::sidecar {

struct QueryPrefetchStats {
  uint64_t started = 0;    // prefetches begun
  uint64_t served = 0;     // pages answered from here
  uint64_t stale = 0;      // dropped: a write came between prefetch and request
  uint64_t unused = 0;     // dropped: not asked for within the ttl, failed, or over max_bytes
  uint64_t skipped = 0;    // not begun: the cache was full
  uint64_t writing = 0;    // not begun: writes are going on (during the page before, or recent pages went stale)
  uint64_t held_bytes = 0;  // bytes of the pages held now
  uint64_t held_pages = 0;
};

class QueryPrefetch {
 public:
  struct Options {
    size_t max_bytes = 64 << 20;
    size_t max_entries = 64;
    std::chrono::milliseconds ttl{2000};
  };
  struct Page {
    std::string reply;  // the whole reply frame, header included (request id of the prefetch)
    uint64_t entities = 0;
  };

  explicit QueryPrefetch(Options options) : options_(options) {}

  // The key of the page `r` asks for (its continuation) on connection
  // `envelope`. Only a query with a continuation has one worth keeping.
  static std::string KeyFor(const std::string& envelope, const wire::Request& r);

  // Reserves the key for a page about to be computed at `sequence`. False
  // (and nothing to compute) when the key is held already, when the cache
  // is full, or when writes are going on and a page computed now would most
  // likely be stale by the time it is asked for: `sequence` differs from
  // `page_sequence` (the sequence at which the page before was executed),
  // or recent pages were found stale more often than served (each stale
  // page counts kStaleWeight against each served one; then only one call in
  // kProbeEvery begins, until served pages tip the balance back).
  bool Begin(const std::string& key, uint64_t sequence, uint64_t page_sequence);

  // The outcome of Begin's computation; an empty reply (an error) keeps
  // nothing. Wakes whoever waits for the key.
  void Finish(const std::string& key, std::string reply, uint64_t entities);

  // The page held for `key`, if one is and `current_sequence()` still
  // equals the sequence it was computed at. A page still being computed is
  // waited for, at most until `deadline`; if it is not ready by then it
  // stays for its computer to finish. A page found ready leaves the cache,
  // served or stale.
  std::optional<Page> Take(const std::string& key, const std::function<uint64_t()>& current_sequence,
                           std::chrono::steady_clock::time_point deadline);

  // Drops the pages held past their ttl (the server's maintenance, once a
  // second, so a client that stopped early does not leave its page held).
  void Expire();

  QueryPrefetchStats Stats() const;

 private:
  struct Entry {
    bool ready = false;
    uint64_t sequence = 0;
    Page page;
    std::chrono::steady_clock::time_point expires{};
  };
  // Drops ready entries past their ttl. Requires mu_.
  void DropExpired(std::chrono::steady_clock::time_point now);

  const Options options_;
  mutable std::mutex mu_;
  std::condition_variable ready_cv_;
  std::unordered_map<std::string, Entry> entries_;
  QueryPrefetchStats stats_;
  // A stale page is a scan wasted, a served one a scan saved ahead of time:
  // a wasted scan weighs more.
  static constexpr int kStaleWeight = 2;
  static constexpr uint64_t kProbeEvery = 8;
  // Served pages count +1, stale ones -kStaleWeight, within these bounds so
  // that a long past neither way outweighs the present.
  static constexpr int kMinBalance = -16, kMaxBalance = 16;
  int balance_ = 0;
  uint64_t probe_ = 0;
};

}  // namespace sidetable::sidecar
