// Read-your-writes on the server (docs/consistency.md): a Get or Query
// carrying session tokens runs only once the derived table covers them.
// The waiting is done by no thread: the job is parked (parked_reads.h) and
// comes back when an AdvanceWatermarks covers it, or is answered
// ReadSessionNotAvailable by the timer when its waitMs runs out.
#include "sidecar/auth/authorize.h"
#include "sidecar/read_session.h"
#include "sidecar/server_impl.h"

namespace sidetable::sidecar {
namespace {

// The handler's read checks, before the session is resolved: a token that
// may not read the table must neither park a read on it (holding a slot for
// waitMs, then answered 504 instead of 403) nor learn from the session's
// checks which table a change of the log belongs to.
Status MayRead(const token::Token& t, const wire::Request& r) {
  if (r.op == wire::Op::kQuery) return auth::QueryConfinement(t, r.table).status();
  return auth::Authorize(t, r);
}

}  // namespace

bool Server::Impl::AdmitSession(Job& job, zmq::socket_t& out) {
  if (job.principal) {
    if (Status allowed = MayRead(*job.principal, job.request); !allowed.ok()) {
      FinishWithError(job, allowed, out);
      return false;
    }
  }
  std::vector<Requirement> waiting;
  Status s = ResolveSession(*owner_->engine_, *owner_->watermarks_, owner_->routes_.get(),
                            job.request, &waiting);
  if (!s.ok()) {
    FinishWithError(job, s, out);
    return false;
  }
  if (waiting.empty()) return true;
  const uint64_t wait_ms = job.request.wait_ms.value_or(wire::kDefaultWaitMs);
  const auto now = std::chrono::steady_clock::now();
  if (wait_ms == 0) {
    job.parked_at = now;
    ExpireParked(job, out);
    return false;
  }
  job.parked_at = now;
  switch (parked_.Park(&job, std::move(waiting), now + std::chrono::milliseconds(wait_ms))) {
    case ParkedReads::Outcome::kParked:
      owner_->metrics_.RecordSessionParked();
      return false;
    case ParkedReads::Outcome::kCovered:
      return true;
    case ParkedReads::Outcome::kClosed:
      owner_->metrics_.RecordBusy(BusyReason::kShuttingDown);
      FinishWithError(job, Status(Code::kServerBusy, "server is shutting down; not executed, retry elsewhere or later"),
                      out);
      return false;
  }
  return false;
}

void Server::Impl::ExpireParked(Job& job, zmq::socket_t& out) {
  const uint64_t waited = MicrosSince(job.parked_at);
  owner_->metrics_.RecordSessionWait(waited, /*timed_out=*/true);
  FinishWithError(job, Status(Code::kReadSessionNotAvailable,
                              "table '" + job.request.table + "' did not cover the session's writes within " +
                                  std::to_string(job.request.wait_ms.value_or(wire::kDefaultWaitMs)) +
                                  " ms (its pattern workers are behind or stopped); not executed"),
                  out);
}

void Server::Impl::ResumeCovered(size_t index, std::deque<Job>* local) {
  std::vector<Job> covered;
  parked_.TakeCovered(&covered);
  // Spread over the workers (and forwarders), starting with the next one,
  // never behind a backup; a closed queue (shutting down) means this worker
  // runs it itself.
  for (size_t i = 0; i < covered.size(); i++) {
    Job& job = covered[i];
    job.covered = true;
    if (!queues_[(index + 1 + i) % backup_queue_]->PushResumed(std::move(job))) {
      local->push_back(std::move(job));
    }
  }
}

}  // namespace sidetable::sidecar
