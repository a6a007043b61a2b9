// Fence checks: one synchronous offset commit to the owners' group answers
// every caller queued before it was sent (docs/scale-out.md, "Writes").
#include <spdlog/spdlog.h>

#include <thread>

#include "sidecar/cluster/cluster_impl.h"

namespace sidetable::cluster {

void Cluster::Impl::CheckFence(std::function<void(Status)> done, int32_t shard, uint64_t epoch) {
  {
    std::lock_guard l(fence_mu_);
    if (!stop_.load()) {
      fence_waiters_.push_back({std::move(done), shard, epoch});
      fence_cv_.notify_one();
      return;
    }
  }
  done(Status(Code::kServerBusy, "cluster: stopping; outcome unknown, retry with the same client request id"));
}

void Cluster::Impl::FenceLoop() {
  for (;;) {
    std::vector<FenceWaiter> batch;
    {
      std::unique_lock l(fence_mu_);
      fence_cv_.wait(l, [&] { return stop_.load() || !fence_waiters_.empty(); });
      batch.swap(fence_waiters_);
    }
    if (batch.empty() && stop_.load()) return;
    Status verdict;
    bool retried = false;
    if (stop_.load()) {
      verdict = Status(Code::kServerBusy, "cluster: stopping; outcome unknown, retry with the same client request id");
    } else {
      rd_kafka_topic_partition_list_t* offsets = rd_kafka_topic_partition_list_new(4);
      {
        std::shared_lock l(routes_mu_);
        for (const auto& [s, offset] : commit_offsets_) {
          rd_kafka_topic_partition_list_add(offsets, change_topic_.c_str(), s)->offset = offset;
        }
      }
      fence_checks_++;
      if (offsets->cnt == 0) {
        verdict = Status(Code::kServerBusy, "cluster: NotOwner: this sidecar serves no shard; ownership changed, "
                                            "outcome unknown, retry with the same client request id");
      } else {
        // While the group rebalances the coordinator refuses every commit
        // (REBALANCE_IN_PROGRESS; librdkafka's mock for the whole join
        // phase, up to session timeout - 1 s). Retry within
        // cluster.rebalance_wait_ms: a later commit that passes, with the
        // shard still held under the same epoch (checked below, after the
        // commit), proves no one else claimed it in between, because our
        // revocation would have run before we could rejoin.
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.rebalance_wait_ms);
        rd_kafka_resp_err_t e;
        // Known to rebalance: a commit refused before (see rebalancing_since_ms_).
        auto rebalancing = [&] {
          const int64_t since = rebalancing_since_ms_.load();
          return since != 0 && SteadyMs() - since < options_.session_timeout_ms;
        };
        for (;;) {
          while ((rejoining_.load() || rebalancing()) && !stop_.load() &&
                 std::chrono::steady_clock::now() < give_up) {
            retried = true;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          }
          if (rejoining_.load() || rebalancing()) {
            // Still rebalancing: no commit (it could reach the coordinator
            // after it moved to the next generation: ILLEGAL_GENERATION, the
            // assignment dropped, one more rebalance for the whole group).
            e = RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS;
            break;
          }
          const uint64_t assigns_before = assigns_.load();
          e = rd_kafka_commit(group_, offsets, 0 /* sync */);
          for (int i = 0; e == RD_KAFKA_RESP_ERR_NO_ERROR && i < offsets->cnt; i++) e = offsets->elems[i].err;
          // (Unless an assignment ran meanwhile: that round is over.)
          if ((e == RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS || e == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
               e == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID) &&
              assigns_.load() == assigns_before) {
            int64_t none = 0;
            rebalancing_since_ms_.compare_exchange_strong(none, SteadyMs());
          }
          if (e != RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS || stop_.load() ||
              std::chrono::steady_clock::now() >= give_up) {
            break;
          }
          retried = true;
          // Wait for this client to finish its part of the rebalance (the
          // assignment callback) before committing again: a commit sent with
          // the old generation just after the coordinator moved on fails with
          // ILLEGAL_GENERATION, which makes librdkafka drop the whole
          // assignment (docs/scale-out.md, "Status").
          const uint64_t seen = assigns_.load();
          while (assigns_.load() == seen && !stop_.load() && std::chrono::steady_clock::now() < give_up) {
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
          }
          for (int i = 0; i < offsets->cnt; i++) offsets->elems[i].err = RD_KAFKA_RESP_ERR_NO_ERROR;
        }
        if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
          // ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS: the
          // group moved on. Anything else (Kafka unreachable, a local state
          // error) proves nothing either: the outcome is unknown.
          verdict = Status(Code::kServerBusy, std::string("cluster: fence check failed (") + rd_kafka_err2name(e) +
                                                  "): ownership changed; outcome unknown, retry with the same "
                                                  "client request id");
        }
      }
      rd_kafka_topic_partition_list_destroy(offsets);
    }
    for (auto& w : batch) {
      Status s = verdict;
      if (s.ok() && retried && w.shard < 0) {
        // Which shard it wrote to is unknown: the retried commit proves nothing for it.
        s = Status(Code::kServerBusy, "cluster: fence check met a rebalance; outcome unknown, retry with the "
                                      "same client request id");
      } else if (s.ok() && w.shard >= 0) {
        std::shared_lock l(routes_mu_);
        auto it = serving_.find(w.shard);
        if (it == serving_.end() || (w.epoch != 0 && it->second != w.epoch)) {
          s = Status(Code::kServerBusy, "cluster: NotOwner: shard " + std::to_string(w.shard) +
                                            " changed owner; outcome unknown, retry with the same client request id");
        }
      }
      if (!s.ok()) fence_failures_++;
      w.done(std::move(s));
    }
    if (stop_.load()) {
      std::lock_guard l(fence_mu_);
      if (fence_waiters_.empty()) return;
    }
  }
}

}  // namespace sidetable::cluster
