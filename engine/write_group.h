// WriteGroup: one thread's writes committed together, one RocksDB write (one
// WAL append) for all of them.
//
// The sidecar's frontend executes a burst of small writes one after the
// other; alone, each would pay its own WAL write(2) and RocksDB write path.
// Through a WriteGroup each Engine::Execute(batch, group) is validated,
// checked against the current rows and stamped with its LSN and ETag at
// once (the WriteResult is final), but it is written only at Flush(), with
// the others of the group, as one WriteBatch. Until then it is neither
// visible nor durable, and must not be acknowledged.
//
// What the group holds until Flush: the head of the commit queue (other
// writers wait behind it), each written partition's lock and each written
// table (shared). So:
//  - a write on a partition the group already holds, or whose lock another
//    thread holds, flushes the group first (ordering, and no waiting while
//    holding the queue);
//  - the owner flushes before it reads, or hands work to another thread, and
//    keeps bursts short: every other writer waits for the flush.
//
// Outcomes: each deferred write gets a ticket (0, 1, ... in order since the
// last Reset). After Flush, Outcome(ticket) is OK or the error of the flush
// that covered it (a full disk: nothing of that flush is visible, its LSNs
// are handed out again, so the log stays gap-free). Writes that fail before
// they are deferred (a condition, a limit) return their error from Execute
// and take no ticket.
//
// Durability: as Engine::Execute(batch, /*wait_durable=*/false): flushed
// means written (Durability::kOs) or written and not yet fsynced
// (Engine::WaitDurable(lsn) before acknowledging).
//
// Thread safety: one thread at a time. The group must not outlive its engine.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/status.h"

namespace sidetable {

class Engine;

class WriteGroup {
 public:
  explicit WriteGroup(Engine* engine);
  ~WriteGroup();  // flushes what is left
  WriteGroup(const WriteGroup&) = delete;
  WriteGroup& operator=(const WriteGroup&) = delete;

  // Writes every deferred write, then lets go of the queue and the locks.
  // Returns the flush's result (also each covered ticket's Outcome).
  Status Flush();
  // Tickets handed out since the last Reset: the next deferred write's ticket.
  uint64_t deferred() const;
  // Tickets whose outcome is final: flushed by Flush, or by a write that
  // had to flush the group first (tickets below this one).
  uint64_t flushed() const;
  // A flushed ticket's outcome.
  Status Outcome(uint64_t ticket) const;
  // Flushes, then forgets the outcomes: tickets start from 0 again.
  void Reset();

  // Engine-internal (engine_write.cc).
  struct State;
  State* state() { return state_.get(); }

 private:
  std::unique_ptr<State> state_;
};

}  // namespace sidetable
