// Shutdown (SIGTERM/SIGINT): what docs/protocol.md promises a client.
//
// 0. Reads parked for their session tokens are answered ServerBusy at once
//    (never executed): their wait could outlast the grace.
// 1. Until shutdown_grace_ms: queued requests are executed and answered;
//    new ones are answered ServerBusy "shutting down" (the frontend keeps
//    reading, so nothing that reaches the socket goes unanswered).
// 2. When the grace runs out: requests still queued are taken off the
//    queues (atomically with the workers' Pop, so none is both executed and
//    refused) and answered ServerBusy.
// 3. Requests executing right then get kExecutingMargin to finish.
//    Writes waiting for their fsync (durable_acks.cc) count as in flight,
//    and are answered before the sockets close.
// 4. Replies get kReplyFlushMargin to leave the socket.
// 5. The publisher gets what is left of the grace, at least
//    kPublisherMinimum, to deliver what it has; the rest stays in the change
//    log and is published after a restart (the outbox).
// So the process exits within the grace plus about two seconds.
#include "sidecar/server_impl.h"

namespace sidetable::sidecar {

void Server::Impl::RefuseQueued() {
  std::deque<Job> left;
  for (auto& q : queues_) q->TakeAll(&left);
  // A table operation's barrier taken off a queue: whoever waits on it goes
  // on (worker_barrier.h). A share is not a request: nothing to answer.
  std::erase_if(left, [](Job& job) {
    if (job.barrier) job.barrier->Cancel();
    return job.barrier_share;
  });
  // A WriteMany's part: its gather answers the request once every part
  // is in (write_many_gather.h); the part holds no admission of its own.
  const Status stopping(Code::kServerBusy,
                        "server is shutting down; not executed, retry elsewhere or later");
  std::erase_if(left, [&](Job& job) {
    if (!job.part) return false;
    FailPart(job, stopping, router_);
    return true;
  });
  if (left.empty()) return;
  log_->warn("stopping: grace period over; answering ServerBusy to {} queued requests (not executed)",
             left.size());
  for (Job& job : left) {
    wire::Header h{wire::kVersion, static_cast<uint8_t>(job.request.op), 0, job.request.id};
    AnswerBusy(h, job.envelope, job.delimiter, BusyReason::kShuttingDown, job.received);
    admission_->Release(job.envelope, job.charge, job.queued_on);
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Server::Impl::RefuseParked() {
  std::vector<Job> left;
  parked_.Close(&left);
  if (left.empty()) return;
  log_->info("stopping: answering ServerBusy to {} reads waiting for their session tokens", left.size());
  for (Job& job : left) {
    wire::Header h{wire::kVersion, static_cast<uint8_t>(job.request.op), 0, job.request.id};
    AnswerBusy(h, job.envelope, job.delimiter, BusyReason::kShuttingDown, job.received);
    admission_->Release(job.envelope, job.charge, job.queued_on);
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
  }
}

void Server::Impl::CloseSockets() {
  router_.close();
  replies_.close();
  zap_.reset();  // its socket too, or terminating the context would wait for it
  connections_.reset();  // the same
  // Terminating the context waits for queued replies to be sent, at most
  // the router's linger (kReplyFlushMargin).
  ctx_.close();
}

bool Server::Impl::Drain() {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::milliseconds(config_.shutdown_grace_ms);
  log_->info("stopping: answering new requests ServerBusy; finishing {} in flight (grace {} ms)",
             in_flight_.load(), config_.shutdown_grace_ms);
  for (auto& q : queues_) q->Close();  // workers finish what is queued, then exit
  RefuseParked();
  zmq::pollitem_t items[] = {{router_.handle(), 0, ZMQ_POLLIN, 0},
                             {replies_.handle(), 0, ZMQ_POLLIN, 0}};
  auto serve_for = [&](int ms) {
    Poll(items, 2, ms);
    if (items[1].revents & ZMQ_POLLIN) ForwardReplies();
    if (items[0].revents & ZMQ_POLLIN) ReadRequests(256);
  };
  while (in_flight_.load() > 0 && Clock::now() < deadline) serve_for(10);
  RefuseQueued();
  const auto executing_deadline = Clock::now() + kExecutingMargin;
  while (live_workers_.load() > 0 && Clock::now() < executing_deadline) serve_for(5);
  // The workers are done: what waits for its fsync is answered now.
  if (live_workers_.load() == 0) StopAcks();
  ForwardReplies();
  const int stuck = live_workers_.load();
  bool clean = stuck == 0;
  if (clean) {
    for (auto& w : workers_) w.join();
    ForwardReplies();
    CloseSockets();
  } else {
    // A worker is still inside the engine: its socket keeps the context
    // alive, so the context is not terminated and the engine not closed.
    log_->error("stopping: {} requests still executing {} ms after the grace period; exiting "
                "without their replies", in_flight_.load(), kExecutingMargin.count());
  }
  StopMaintenance();
  if (http_) http_->Stop();
  if (owner_->publisher_) {
    const auto publisher_deadline = std::max(deadline, Clock::now() + kPublisherMinimum);
    if (!owner_->publisher_->Stop(publisher_deadline)) {
      // Nothing is lost: unpublished changes stay in the change log and are
      // published after a restart.
      log_->warn("stopping: the change publisher did not stop in time (published up to LSN {}); "
                 "the rest stays in the change log and is published after restart",
                 owner_->publisher_->published_lsn());
      clean = false;
    }
  }
  log_->info("stopped in {} ms", MicrosSince(start) / 1000);
  return clean;
}

}  // namespace sidetable::sidecar
