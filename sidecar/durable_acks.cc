// The acknowledger (Durability::kFsync): a write is executed by a worker or
// the frontend, which go on with the next request at once; its reply waits
// here until the write is durable. One thread waits for one WAL fsync
// (Engine::WaitDurable) on behalf of every write executed meanwhile, so the
// group that shares an fsync is as large as what arrived during the last
// one, not bounded by the number of workers, and no thread sleeps per write
// (engine/internal/commit_queue.h).
//
// Ordering: writes of one partition are executed in order and their LSNs
// increase, so their replies leave in order too. Shutdown: in-flight counts
// these replies, so the drain waits for them; StopAcks() answers what is
// left before the sockets close.
#include "sidecar/server_impl.h"

namespace sidetable::sidecar {

void Server::Impl::Complete(Job& job, Code code, std::string& reply, zmq::socket_t& out, uint64_t entities,
                            uint64_t await_lsn, std::vector<ShardEpoch>&& fence) {
  if (DurableNow(await_lsn, fence)) {
    FinishJob(job, code, reply, out, entities);
  } else {
    AwaitDurable(job, code, reply, entities, await_lsn, std::move(fence));
  }
}

bool Server::Impl::DurableNow(uint64_t await_lsn, const std::vector<ShardEpoch>& fence) const {
  if (!fence.empty()) return false;
  return await_lsn == 0 || await_lsn <= owner_->engine_->durable_lsn();
}

void Server::Impl::AwaitDurable(Job& job, Code code, std::string& reply, uint64_t entities, uint64_t await_lsn,
                                std::vector<ShardEpoch>&& fence) {
  std::lock_guard lock(acks_mu_);
  acks_.push_back(PendingAck{std::move(job), code, std::move(reply), entities, await_lsn, std::move(fence)});
  if (acks_.size() == 1) acks_cv_.notify_one();
}

void Server::Impl::AckLoop() {
  zmq::socket_t out(ctx_, zmq::socket_type::push);
  out.set(zmq::sockopt::sndhwm, 0);  // bounded by admission, never drop a reply
  out.connect(kRepliesEndpoint);
  std::vector<PendingAck> batch;
  for (;;) {
    {
      std::unique_lock lock(acks_mu_);
      acks_cv_.wait(lock, [&] { return acks_stop_ || !acks_.empty(); });
      if (acks_.empty()) break;
      batch.swap(acks_);
    }
    uint64_t lsn = 0;
    for (const PendingAck& a : batch) lsn = std::max(lsn, a.lsn);
    const Status durable = owner_->engine_->WaitDurable(lsn);
    if (!durable.ok()) log_->error("acknowledging {} writes up to LSN {}: {}", batch.size(), lsn, durable.ToString());
    // The change log is read only up to the durable LSN: now there is more.
    if (owner_->publisher_) owner_->publisher_->Notify();
    // Scale-out with replicated acknowledgement: one delivery wait and one
    // fence check for the whole group (cluster_routing.h).
    Status replicated = Status::OK();
    if (ClusterRouting* routing = handler_.routing(); routing != nullptr && durable.ok()) {
      std::vector<ShardEpoch> shards;
      uint64_t fenced_lsn = 0;
      for (const PendingAck& a : batch) {
        if (a.fence.empty()) continue;
        fenced_lsn = std::max(fenced_lsn, a.lsn);
        for (const ShardEpoch& se : a.fence) {
          if (std::find(shards.begin(), shards.end(), se) == shards.end()) shards.push_back(se);
        }
      }
      replicated = routing->AwaitReplicated(fenced_lsn, shards,
                                            std::chrono::steady_clock::now() + routing->ack_timeout());
    }
    for (PendingAck& a : batch) {
      if (!a.fence.empty() && !replicated.ok()) {
        FinishWithError(a.job, replicated, out);
      } else if (durable.ok() || a.lsn <= owner_->engine_->durable_lsn()) {
        FinishJob(a.job, a.code, a.reply, out, a.entities);
      } else {
        FinishWithError(a.job, durable, out);
      }
    }
    batch.clear();
  }
  out.set(zmq::sockopt::linger, -1);
  out.close();
}

void Server::Impl::StopAcks() {
  {
    std::lock_guard lock(acks_mu_);
    acks_stop_ = true;
    acks_cv_.notify_all();
  }
  if (acker_.joinable()) acker_.join();
}

}  // namespace sidetable::sidecar
