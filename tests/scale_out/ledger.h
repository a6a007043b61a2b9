// Ledger: every write the scale-out workload sent, with its final outcome,
// and each entity's history of writes in the order its one writer sent them.
//
// Outcomes:
// - kAcked: the sidecar answered success (first or replayed); the ETags are
//   the reply's, one per operation ("" for deletes).
// - kUnknown: retries ran out on ServerBusy / no reply (docs/scale-out.md:
//   "ownership changed; outcome unknown"): the write may or may not be in
//   the final state.
// - kRefused: any other error. The workload only sends writes that must
//   succeed when nobody else writes their keys, so a refusal is a wrong
//   answer (the checker reports every one).
//
// Every key (table, PartitionKey, RowKey) has exactly one writer thread, so
// its history is a sequence, and a write is only sent after the previous
// one's outcome is final. Each put carries a unique tag (property "W"), so
// a read says exactly which write it shows.
//
// Thread safety: Add() and the accessors lock; the checker reads a
// Snapshot() after the workload stopped.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "engine/status.h"

namespace sidetable::scale_out {

struct EntityKey {
  std::string table, pk, rk;
  auto operator<=>(const EntityKey&) const = default;
  std::string ToString() const { return table + "/" + pk + "/" + rk; }
};

// What one operation of a write leaves in the entity: absent (a delete) or
// the tracked properties W (tag), N and C. Every put sets all three, so a
// merge leaves the same tracked content as a replace.
struct OpRecord {
  EntityKey key;
  bool is_delete = false;
  std::string kind;  // "Insert", "Merge", ... (for messages)
  std::string tag;   // W; "" for deletes
  int64_t n = 0;     // N
  std::string color; // C
};

enum class Outcome { kAcked, kUnknown, kRefused };

inline const char* OutcomeName(Outcome o) {
  return o == Outcome::kAcked ? "acked" : o == Outcome::kUnknown ? "unknown" : "refused";
}

struct WriteRecord {
  int thread = 0;
  int member = 0;  // the member the thread sent it through
  std::string request_id;
  std::vector<OpRecord> ops;
  Outcome outcome = Outcome::kUnknown;
  std::vector<std::string> etags;  // kAcked: one per op
  bool replayed = false;
  int attempts = 0;
  int busy = 0;      // attempts answered ServerBusy
  int no_reply = 0;  // attempts not answered in time
  std::string error; // the last error's text
  double sent_at = 0;  // seconds since the workload started (first attempt)
  double done_at = 0;
};

struct HistoryEntry {
  size_t write = 0;  // index into the ledger's writes
  size_t op = 0;     // index into that write's ops
};

struct LedgerSnapshot {
  std::vector<WriteRecord> writes;
  std::map<EntityKey, std::vector<HistoryEntry>> history;  // in send order
};

class Ledger {
 public:
  size_t Add(WriteRecord w) {
    std::lock_guard lock(mu_);
    const size_t index = s_.writes.size();
    for (size_t i = 0; i < w.ops.size(); i++) s_.history[w.ops[i].key].push_back({index, i});
    s_.writes.push_back(std::move(w));
    return index;
  }
  LedgerSnapshot Snapshot() const {
    std::lock_guard lock(mu_);
    return s_;
  }
  size_t Count(Outcome o) const {
    std::lock_guard lock(mu_);
    size_t n = 0;
    for (const auto& w : s_.writes) n += w.outcome == o;
    return n;
  }

 private:
  mutable std::mutex mu_;
  LedgerSnapshot s_;
};

}  // namespace sidetable::scale_out
