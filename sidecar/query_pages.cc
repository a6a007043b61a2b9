// Server::Impl's side of the query prefetch (query_prefetch.h): a worker
// takes a page computed ahead instead of scanning, and after answering a
// page with a continuation, with nothing else queued, computes the next.
#include "sidecar/server_impl.h"

namespace sidetable::sidecar {
namespace {

// How long a request waits for its page when another worker is computing
// it. That worker started before the request arrived, so waiting is never
// slower than a scan started now unless the worker stalls; a query page is
// bounded by query.max_examined.
constexpr std::chrono::milliseconds kPrefetchWait{1000};

}  // namespace

bool Server::Impl::PrefetchServes(const Job& job) const {
  // Not: reads with session tokens (they wait for a derived table first),
  // requests forwarded within a cluster, or any query of a cluster member
  // (which rows it serves moves with the shards).
  return prefetch_ != nullptr && job.request.op == wire::Op::kQuery && job.request.after.empty() && !job.forward &&
         handler_.routing() == nullptr;
}

bool Server::Impl::TakePrefetched(const Job& job, std::string* reply, uint64_t* entities) {
  if (!PrefetchServes(job) || !job.request.next_pk) return false;
  auto page = prefetch_->Take(
      QueryPrefetch::KeyFor(job.envelope, job.request), [this] { return VisibleSequence(); },
      std::chrono::steady_clock::now() + kPrefetchWait);
  if (!page) return false;
  *reply = std::move(page->reply);
  wire::SetRequestId(reply, job.request.id);
  *entities = page->entities;
  return true;
}

std::optional<wire::Request> Server::Impl::NextPageRequest(const Job& job, Code code,
                                                           const std::string& reply) const {
  if (code != Code::kOk || !PrefetchServes(job) || reply.size() < wire::kHeaderBytes) return std::nullopt;
  wire::Request next;
  if (!wire::PeekQueryContinuation(std::string_view(reply).substr(wire::kHeaderBytes), &next.next_pk, &next.next_rk)
           .ok() ||
      !next.next_pk) {
    return std::nullopt;
  }
  const wire::Request& r = job.request;
  next.id = r.id;
  next.op = wire::Op::kQuery;
  next.table = r.table;
  next.filter = r.filter;
  next.select = r.select;
  next.top = r.top;
  next.token = r.token;
  return next;
}

uint64_t Server::Impl::VisibleSequence() const { return owner_->engine_->visible_sequence(); }

void Server::Impl::PrefetchPage(const Job& job, const wire::Request& next, uint64_t page_sequence) {
  const std::string key = QueryPrefetch::KeyFor(job.envelope, next);
  // Read before the scan takes its snapshot (query_prefetch.h).
  const uint64_t sequence = VisibleSequence();
  if (!prefetch_->Begin(key, sequence, page_sequence)) return;
  std::string reply;
  uint64_t entities = 0;
  const Code code = handler_.Handle(next, job.principal.get(), &reply, &entities);
  // An error is not kept: the request itself meets it again (or not).
  if (code != Code::kOk) reply.clear();
  prefetch_->Finish(key, std::move(reply), entities);
}

}  // namespace sidetable::sidecar
