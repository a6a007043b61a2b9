// Server::Impl: the frontend, the workers and shutdown, shared by
// server.cc (start-up, workers, the serving loop), frontend.cc (reading,
// admitting and answering requests) and shutdown.cc (the drain on SIGTERM).
// Internal to sidecar/.
//
// Threads: one frontend thread owns router_ and replies_ (Serve, Drain);
// workers own their inproc PUSH sockets; admission_ and the queues are the
// only state they share.
#pragma once

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "common/http_endpoint.h"
#include "common/log_throttle.h"
#include "sidecar/admission.h"
#include "sidecar/auth/tenant_quotas.h"
#include "sidecar/connection_limit.h"
#include "sidecar/handler.h"
#include "sidecar/job_queue.h"
#include "sidecar/parked_reads.h"
#include "sidecar/query_prefetch.h"
#include "sidecar/rest/gateway.h"
#include "sidecar/server.h"
#include "sidecar/status_pages.h"
#include "sidecar/zap_handler.h"

namespace sidetable::sidecar {

// libzmq's buffer per connection, in frames: rcvhwm counts messages, not
// bytes, so it is kept small and the frontend reads (and refuses) fast; the
// bytes libzmq may hold per connection are then at most
// (kRouterRcvHwm + 1) * maxmsgsize (docs/operations.md, "Capacity and limits").
inline constexpr int kRouterRcvHwm = 8;
// After the grace period: how long requests already executing may take
// before the process gives up on them, and how long replies may take to
// leave the socket.
inline constexpr std::chrono::milliseconds kExecutingMargin{1000};
inline constexpr std::chrono::milliseconds kReplyFlushMargin{500};
// The publisher gets what is left of the grace, and at least this.
inline constexpr std::chrono::milliseconds kPublisherMinimum{500};

inline constexpr const char* kRepliesEndpoint = "inproc://sidetable-replies";
// Replies at least this large are handed to ZeroMQ without a copy, and
// charged to admission until libzmq frees them (admission.h). Smaller ones
// are copied and not counted: a connection that reads none of them holds at
// most sndhwm of them in libzmq (docs/operations.md, "RSS ceiling").
inline constexpr size_t kZeroCopyReplyBytes = 64 << 10;

uint64_t MicrosSince(std::chrono::steady_clock::time_point since);
// A reply frame: a copy of a small reply, or a large one moved into the
// message (ZeroMQ frees it once sent). With `charged` (a large reply that
// Admission::TryChargeReply charged to `identity`), the charge goes back
// when libzmq frees it, on whichever thread that is; the shared_ptr keeps
// the Admission alive for a message freed while the context terminates,
// after Server::Impl is gone.
zmq::message_t ReplyMessage(std::string& reply, std::shared_ptr<Admission> charged = nullptr,
                            const std::string& identity = std::string());
std::string PeerId(std::string_view identity);
// zmq_poll that treats a signal (EINTR) as "nothing ready".
int Poll(zmq::pollitem_t* items, int n, int timeout_ms);

class Server::Impl {
 public:
  Impl(Server* owner, const ServerConfig& config);

  Status Bind();
  void StartWorkers();
  void Serve();
  // Returns false when something could not be stopped in time (a worker
  // still executing, or the publisher): the process must then exit without
  // destroying the engine.
  bool Drain();

 private:
  // frontend.cc
  // Reads up to `max` requests (stops when none is waiting), then sends
  // the inline replies of the burst.
  void ReadRequests(int max);
  // False when no message was waiting.
  bool OnRequest();
  // Sends the replies the workers queued on replies_ (after the frontend's
  // own pending inline replies).
  void ForwardReplies();
  // Sends the inline replies held back during a burst of requests.
  void SendInlineReplies();
  void SendReply(const std::string& identity, bool delimiter, const std::string& frame);
  void SendReply(const std::string& identity, bool delimiter, zmq::message_t&& frame);
  // `tenant`: the tenant over its quota (BusyReason::kTenantQuota), named
  // in the warning.
  void AnswerBusy(const wire::Header& header, const std::string& identity, bool delimiter,
                  BusyReason why, std::chrono::steady_clock::time_point received,
                  std::string_view tenant = {});
  // On an idle tick: the ServerBusy answers counted since AnswerBusy's last
  // warning, once the second has passed (a burst's end).
  void LogBusyOverdue();
  // *any: the request has no partition of its own (it went round robin).
  size_t WorkerFor(const wire::Request& r, bool* any = nullptr);
  // The worker of a (table, PartitionKey): one per partition, so its
  // requests run in arrival order.
  size_t WorkerOfPartition(const std::string& table, const std::string& pk) const;
  // write_many_split.cc: a WriteMany whose batches live on several workers
  // is queued as one part per worker (write_many_gather.h). kNotSplit: one
  // worker holds them all (or splitting does not apply), queue it whole;
  // kNoRoom: a queue is full, the job is still the caller's.
  enum class Split { kNotSplit, kQueued, kNoRoom };
  Split PushWriteManyParts(Job& job);
  // A part executed (or refused as a whole): handed to its gather; the
  // last part answers the request through Complete.
  void FinishPart(Job& part, Code code, const std::string& reply, uint64_t entities,
                  uint64_t await_lsn, zmq::socket_t& out);
  void FailPart(Job& part, const Status& s, zmq::socket_t& out);
  // Scale-out: the forwarding thread for a request (queues_ after the
  // workers'), by partition so one partition's forwards keep their order.
  size_t ForwarderFor(const wire::Request& r);
  size_t forwarders_ = 0;  // forwarding threads (0 unless in a cluster)
  // The last queue: Backup operations, on a thread of their own so that a
  // backup (a flush, and copies on another filesystem) holds up no
  // partition's requests; one at a time, kBackupQueueDepth waiting.
  size_t backup_queue_ = 0;
  static constexpr size_t kBackupQueueDepth = 2;
  // A small point read or write the frontend may execute itself (when its
  // partition's worker is idle) instead of handing it to the worker.
  bool RunsInline(const wire::Request& r, size_t wire_bytes) const;
  // auth.mode tokens: verifies the job's token, records its identity as the
  // caller and takes the tenant's quota; false when the request was answered
  // (403 or ServerBusy).
  bool Authenticate(Job& job, const wire::Header& header, const std::string& identity, bool delimiter);
  // server.cc
  void WorkerLoop(size_t index);
  // Sends a worker's (or the timer's) reply through its PUSH socket, or
  // the frontend's straight to the client when `out` is router_, and gives
  // back what the job held.
  // `reply` may be moved from (ReplyMessage).
  void FinishJob(Job& job, Code code, std::string& reply, zmq::socket_t& out, uint64_t entities = 0);
  // Charges a large reply to admission; a read's reply to a connection
  // that does not read the ones queued before it becomes ServerBusy
  // (*code too). True when `reply` is charged and must be released.
  bool ChargeReply(const Job& job, Code* code, std::string& reply);
  void FinishWithError(Job& job, const Status& s, zmq::socket_t& out);
  // A table operation's worker: waits until the other workers reached its
  // barrier. False: it was answered ServerBusy instead (stopping).
  bool WaitForBarrier(Job& job, zmq::socket_t& out);
  // Queues a table operation behind a barrier on every worker (false: a
  // queue is full, the job is still the caller's).
  // shares_wait false: the other workers only mark the point and go on
  // (a query of several partitions, worker_barrier.h). `on`: the other
  // workers that get a share (every one when none is given).
  bool PushBehindBarrier(size_t executor, Job& job, bool shares_wait = true,
                         const WorkerSet* on = nullptr);
  // Answers an executed request: at once, or (a write not yet durable in
  // fsync durability) through the acknowledger once its LSN is.
  void Complete(Job& job, Code code, std::string& reply, zmq::socket_t& out, uint64_t entities,
                uint64_t await_lsn, std::vector<ShardEpoch>&& fence = {});
  // The two halves of Complete: whether the reply may leave now (no LSN to
  // wait for, or it is durable already), and handing it to the
  // acknowledger otherwise.
  // In a cluster with replicated acknowledgement a write that `fence`s
  // shards always waits (ClusterRouting::AwaitReplicated).
  bool DurableNow(uint64_t await_lsn, const std::vector<ShardEpoch>& fence = {}) const;
  void AwaitDurable(Job& job, Code code, std::string& reply, uint64_t entities, uint64_t await_lsn,
                    std::vector<ShardEpoch>&& fence = {});
  // durable_acks.cc: one thread waits for the fsync of every write the
  // workers and the frontend executed meanwhile, then answers them all.
  void AckLoop();
  void StopAcks();
  // session.cc (read-your-writes): true when the job may execute now;
  // false when it was parked or answered.
  bool AdmitSession(Job& job, zmq::socket_t& out);
  void ExpireParked(Job& job, zmq::socket_t& out);
  void ResumeCovered(size_t index, std::deque<Job>* local);
  // query_pages.cc: the next page of a query computed ahead
  // (query_prefetch.h). Whether `job` is a query the prefetch serves.
  bool PrefetchServes(const Job& job) const;
  // A page computed ahead for `job`: true with the reply (under the job's
  // request id) and its entity count; false: execute it.
  bool TakePrefetched(const Job& job, std::string* reply, uint64_t* entities);
  // The request for the page after `reply` (a page of `job`'s query), if
  // it has a continuation; read before the reply is handed away.
  std::optional<wire::Request> NextPageRequest(const Job& job, Code code, const std::string& reply) const;
  // Computes that page and leaves it in prefetch_, unless the engine's
  // sequence moved since `page_sequence` (read before the page before was
  // executed): then writes are going on and the page would go stale.
  void PrefetchPage(const Job& job, const wire::Request& next, uint64_t page_sequence);
  uint64_t VisibleSequence() const;
  void MaintenanceLoop();
  void StopMaintenance();
  // transport.cc: CURVE on the ROUTER socket and its ZAP handler, before
  // any endpoint is bound (security.curve_secret_key_file).
  Status SecureRouter();
  // transport.cc: sidecar.max_connections on the ROUTER, fitted to the
  // descriptor limit (connection_limit.h); before any endpoint is bound.
  Status LimitConnections();
  // shutdown.cc
  void RefuseQueued();
  void RefuseParked();
  void CloseSockets();

  Server* owner_;
  const ServerConfig config_;
  zmq::context_t ctx_;
  // CURVE's allow-list (security.*): after ctx_, so destroyed before it.
  std::unique_ptr<ZapHandler> zap_;
  // sidecar.max_connections on the ROUTER (connection_limit.h): after
  // ctx_, so destroyed before it.
  std::unique_ptr<ConnectionLimit> connections_;
  zmq::socket_t router_;
  zmq::socket_t replies_;
  Handler handler_;
  // Shared with the large replies libzmq still holds (ReplyMessage).
  std::shared_ptr<Admission> admission_;
  auth::TenantQuotas quotas_;
  std::shared_ptr<spdlog::logger> log_;

  std::vector<std::unique_ptr<JobQueue>> queues_;
  // Query pages computed ahead (query.prefetch_mb; null = off).
  std::unique_ptr<QueryPrefetch> prefetch_;
  // Before the workers, after ctx_: destroyed first, closing its socket.
  ParkedReads parked_;
  std::vector<std::thread> workers_;
  std::atomic<int> live_workers_{0};
  std::atomic<uint64_t> in_flight_{0};
  size_t round_robin_ = 0;
  common::LogThrottle busy_log_;  // AnswerBusy's warning, one a second at most

  // Inline replies of the current burst of requests. They leave together,
  // kInlineRepliesPerSend at a time and the rest at the burst's end: ZeroMQ
  // wakes its I/O thread (an eventfd write, a context switch, a send() per
  // reply) only for the first message it finds waiting, so a group of
  // replies costs one wake-up instead of one each. Groups of 8 rather than
  // the whole burst: 32 pipelined point reads ran 21% faster (118k -> 143k/s,
  // docs/performance.md item 14), and 8 beat 4 and 16. Bounded by the burst
  // (ReadRequests' max), and their bytes stay charged to admission until
  // sent.
  static constexpr size_t kInlineRepliesPerSend = 8;
  struct InlineReply {
    Job job;
    Code code;
    std::string reply;
    uint64_t entities;
  };
  std::vector<InlineReply> inline_replies_;
  // The burst's single writes, deferred into one WriteGroup and written
  // with one RocksDB write when the burst ends (engine/write_group.h): one
  // WAL append for the burst instead of one per write. Flushed before
  // anything else is executed or handed to a worker, so each partition's
  // requests still run in arrival order. Their replies leave only after the
  // flush, as errors if it failed.
  struct DeferredReply {
    Job job;
    Code code;
    std::string reply;
    uint64_t entities;
    uint64_t await_lsn;
    std::vector<ShardEpoch> fence;
    uint64_t ticket;  // WriteGroup::Outcome
    Handler::TableWrite counted;  // recorded once the ticket is OK
  };
  //
  // In os durability a group holds at most kMaxDeferredWrites
  // (MaxDeferredWrites): a group as large as the burst (up to the engine's
  // 64) left the client idle while the frontend wrote it, and the frontend
  // idle while the client answered with its next burst. Written 16 at a
  // time, one half of a 32-deep pipeline travels while the other is
  // written: single inserts at depth 32 ran 1.21x faster in paired runs
  // (median of 6 pairs; caps of 8, 12, 16 and 24 all beat the whole burst),
  // for one more WAL write per 16 inserts (docs/performance.md, session 18).
  static constexpr size_t kMaxDeferredWrites = 16;
  size_t MaxDeferredWrites() const;
  std::unique_ptr<WriteGroup> group_;  // created by the frontend thread; before the engine goes
  std::vector<DeferredReply> deferred_;
  // Flushes the group and turns the deferred replies into inline replies
  // (or hands them to the acknowledger, or answers their flush's error).
  void FlushDeferred();
  // Gives back the change-stream admission of the group's writes flushed
  // since the last call (Handler::FinishDeferredWrites).
  void ReleaseFlushedAdmissions();
  uint64_t admissions_released_ = 0;  // tickets of group_ given back so far
  // Replies the workers (and the acknowledger) have put on replies_ and the
  // frontend has not forwarded yet: counted after each send, so the
  // frontend skips the receive (a poll() and a getpid() in libzmq when
  // nothing is there) before every inline request.
  std::atomic<uint64_t> replies_waiting_{0};

  struct PendingAck {
    Job job;
    Code code;
    std::string reply;
    uint64_t entities;
    uint64_t lsn;
    std::vector<ShardEpoch> fence;  // cluster: what AwaitReplicated must confirm
  };
  std::thread acker_;
  std::mutex acks_mu_;
  std::condition_variable acks_cv_;
  std::vector<PendingAck> acks_;
  bool acks_stop_ = false;

  std::thread maintenance_;
  std::mutex maintenance_mu_;
  std::condition_variable maintenance_cv_;
  bool maintenance_stop_ = false;

  ServerGauges Gauges() const;

  // Before http_: its callbacks read it until http_ is destroyed.
  std::atomic<bool> routed_once_{false};  // GET /ready: every shard was routed once (ReadyJson)
  std::unique_ptr<common::HttpEndpoint> http_;
  // The Azure Table REST gateway (rest.address; null = off): calls handler_.
  std::unique_ptr<rest::Gateway> rest_;

  friend class Server;
};

}  // namespace sidetable::sidecar
