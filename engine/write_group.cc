// WriteGroup (write_group.h): the locks and the head of the commit queue one
// thread holds across several deferred writes, and their outcomes.
#include "engine/write_group.h"

#include <algorithm>

#include "engine/internal/engine_impl.h"
#include "engine/limits.h"

namespace sidetable {
namespace {

// A group this large is written at once: the writers queued behind it wait
// for it, and its WriteBatch is held in memory until then.
constexpr size_t kMaxHeldGroupWrites = 64;
constexpr size_t kMaxHeldGroupBytes = 4 << 20;

}  // namespace

void WriteGroup::State::Acquire(const std::shared_ptr<TableState>& table, std::mutex* part) {
  // A second write of a partition must see the first: it is written first.
  if (std::find(partitions.begin(), partitions.end(), part) != partitions.end()) (void)Flush();
  for (;;) {
    if (!holds_anything()) {
      // Holding nothing, waiting cannot close a cycle: the order of
      // Engine::Impl::Execute (table, then partition).
      table->mu.lock_shared();
      tables.push_back(table);
      part->lock();
      partitions.push_back(part);
      return;
    }
    // Holding the queue's head or locks: another writer may be waiting for
    // them while holding what we want, so never wait here.
    if (std::find(tables.begin(), tables.end(), table) == tables.end()) {
      if (!table->mu.try_lock_shared()) {  // a DeleteTable under way
        (void)Flush();
        continue;
      }
      tables.push_back(table);
    }
    if (!part->try_lock()) {
      (void)Flush();
      continue;
    }
    partitions.push_back(part);
    return;
  }
}

Status WriteGroup::State::Add(CommitWork* work, uint64_t* lsn, int64_t* commit_time) {
  ST_RETURN_IF_ERROR(impl->commits_->Lead(&held));
  ST_RETURN_IF_ERROR(impl->commits_->Add(&held, work, lsn, commit_time));
  outcomes.push_back(Status::OK());
  bytes += work->ApproximateBytes();
  if (held.works >= kMaxHeldGroupWrites || bytes >= kMaxHeldGroupBytes) (void)Flush();
  return Status::OK();
}

Status WriteGroup::State::Flush() {
  // Written before the partitions are let go, as a lone write is.
  const Status s = impl->commits_->Release(&held);
  for (size_t i = flushed; i < outcomes.size(); i++) outcomes[i] = s;
  flushed = outcomes.size();
  // Committed (or failed) now: a request with one of these ids finds it in
  // the request log. Before the partitions are let go, so a retry waiting
  // for one of them never meets its own first attempt's claim.
  claims.clear();
  for (std::mutex* m : partitions) m->unlock();
  partitions.clear();
  for (const auto& t : tables) t->mu.unlock_shared();
  tables.clear();
  bytes = 0;
  return s;
}

WriteGroup::WriteGroup(Engine* engine) : state_(std::make_unique<State>(engine->impl_.get())) {}

WriteGroup::~WriteGroup() { (void)state_->Flush(); }

Status WriteGroup::Flush() { return state_->Flush(); }

uint64_t WriteGroup::deferred() const { return state_->outcomes.size(); }

uint64_t WriteGroup::flushed() const { return state_->flushed; }

Status WriteGroup::Outcome(uint64_t ticket) const {
  if (ticket >= state_->flushed) {
    return Status(Code::kInternal, "write " + std::to_string(ticket) + " of the group is not flushed yet");
  }
  return state_->outcomes[ticket];
}

void WriteGroup::Reset() {
  (void)state_->Flush();
  state_->outcomes.clear();
  state_->flushed = 0;
}

Result<WriteResult> Engine::Execute(const Batch& batch, WriteGroup* group) {
  // A caller's bug, answered rather than dereferenced.
  if (group == nullptr) return Status(Code::kInternal, "Engine::Execute: no WriteGroup given");
  ST_RETURN_IF_ERROR(ValidateCaller(batch.caller()));
  return impl_->Execute(batch, group->state());
}

}  // namespace sidetable
