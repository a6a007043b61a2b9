// A WriteMany split by worker thread (write_many_gather.h): queued as one
// part per worker, answered by whichever worker finishes the last part.
#include <memory>
#include <utility>
#include <vector>

#include "sidecar/server_impl.h"
#include "sidecar/write_many_gather.h"

namespace sidetable::sidecar {

Server::Impl::Split Server::Impl::PushWriteManyParts(Job& job) {
  const wire::Request& r = job.request;
  const size_t workers = static_cast<size_t>(config_.workers);
  // Not in a scale-out cluster (ClusterRouting splits by owner there, and
  // forwards), and not with session tokens (a request that waits for them
  // waits whole, session_wait.cc).
  if (workers < 2 || r.writes.size() < 2 || handler_.routing() != nullptr || !r.after.empty()) {
    return Split::kNotSplit;
  }
  // A batch without operations fails in the engine wherever it runs: with
  // the first batch's part.
  const size_t first = WorkerFor(r);
  std::vector<std::vector<uint32_t>> per_worker(workers);
  for (size_t i = 0; i < r.writes.size(); i++) {
    const wire::WriteItem& w = r.writes[i];
    const size_t worker =
        w.ops.empty() ? first : WorkerOfPartition(w.table, w.ops[0].entity.partition_key);
    per_worker[worker].push_back(static_cast<uint32_t>(i));
  }
  std::vector<size_t> targets;  // the workers that get a part
  for (size_t worker = 0; worker < workers; worker++) {
    if (!per_worker[worker].empty()) targets.push_back(worker);
  }
  if (targets.size() < 2) return Split::kNotSplit;
  // All or nothing, as for a table operation's barrier: the frontend is
  // the only producer of new jobs, so the room seen here is there below.
  for (size_t worker : targets) {
    if (!queues_[worker]->HasRoom()) return Split::kNoRoom;
  }

  // Each part is the request with its own batches (and the caller, id and
  // the rest of the request as they were).
  std::vector<wire::WriteItem> writes = std::move(job.request.writes);
  job.request.writes.clear();
  std::vector<Job> part_jobs;
  part_jobs.reserve(targets.size());
  for (size_t worker : targets) {
    Job part;
    part.request = job.request;
    part.request.writes.reserve(per_worker[worker].size());
    for (uint32_t i : per_worker[worker]) part.request.writes.push_back(std::move(writes[i]));
    part.envelope = job.envelope;
    part.received = job.received;
    part.principal = job.principal;
    part.part = std::make_shared<WriteManyPart>();
    part.part->indexes = std::move(per_worker[worker]);
    part_jobs.push_back(std::move(part));
  }
  // Counted on every part's worker until the whole is answered (a query
  // on the connection waits for them, frontend.cc), before any push.
  for (size_t worker : targets) job.queued_on.set(worker);
  admission_->NoteQueued(job.envelope, job.queued_on);
  auto gather = std::make_shared<WriteManyGather>(std::move(job), writes.size(), targets.size());
  for (size_t k = 0; k < targets.size(); k++) {
    const size_t worker = targets[k];
    Job& part = part_jobs[k];
    part.part->gather = gather;
    if (!queues_[worker]->TryPush(std::move(part))) {
      // Only a closed queue refuses after HasRoom: the server is stopping.
      FailPart(part,
               Status(Code::kServerBusy,
                      "server is shutting down; not executed, retry elsewhere or later"),
               router_);
    }
  }
  owner_->metrics_.RecordWriteManySplit(targets.size());
  return Split::kQueued;
}

void Server::Impl::FinishPart(Job& part, Code code, const std::string& reply, uint64_t entities,
                              uint64_t await_lsn, zmq::socket_t& out) {
  const std::shared_ptr<WriteManyPart> p = std::move(part.part);
  if (!p->gather->Add(p->indexes, code, reply, entities, await_lsn)) return;
  WriteManyGather::Answer answer = p->gather->Finish();
  // The batches a part's whole failure answered in a 200 reply count as
  // failed writes, as the handler counts those that fail on their own.
  if (answer.code == Code::kOk) {
    for (Code c : answer.part_failures) owner_->metrics_.RecordBatchError(c);
  }
  Complete(p->gather->whole(), answer.code, answer.reply, out, answer.entities, answer.await_lsn);
}

void Server::Impl::FailPart(Job& part, const Status& s, zmq::socket_t& out) {
  std::string reply;
  wire::EncodeError(
      wire::Header{wire::kVersion, static_cast<uint8_t>(part.request.op), 0, part.request.id}, s,
      &reply);
  FinishPart(part, s.code(), reply, 0, 0, out);
}

}  // namespace sidetable::sidecar
