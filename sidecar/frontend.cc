// The frontend thread: reads request frames from the ROUTER socket, answers
// what it can itself (too large, malformed, busy, shutting down) and queues
// the rest on a worker. Every ServerBusy for a request not executed is
// produced here, straight onto the ROUTER socket, so it never waits behind
// work. (The other kind: a read's large reply to a connection that does
// not read its replies, Server::Impl::ChargeReply.)
#include <xxhash.h>

#include <array>
#include <optional>

#include "engine/query/filter.h"
#include "engine/query/query.h"
#include "engine/table_name.h"
#include "sidecar/server_impl.h"

namespace sidetable::sidecar {

void Server::Impl::ReadRequests(int max) {
  // Until a receive finds nothing: asking ZMQ_EVENTS before each request
  // would cost a poll() and a getpid() (libzmq's mailbox check) per request.
  if (group_ == nullptr) group_ = std::make_unique<WriteGroup>(owner_->engine_.get());
  for (int i = 0; i < max && OnRequest(); i++) {
    // Replies leave in groups of kInlineRepliesPerSend within a burst: the
    // client can send its next requests while the frontend works through
    // the rest of the burst, instead of the two sides taking turns. A
    // deferred write's reply is not among them until its group is flushed
    // (at the burst's end, or before any other request runs), so write
    // groups keep their size.
    // A burst's writes are written MaxDeferredWrites() at a time for the
    // same reason: their replies leave while the rest of the burst runs.
    if (deferred_.size() >= MaxDeferredWrites()) FlushDeferred();
    if (inline_replies_.size() >= kInlineRepliesPerSend) SendInlineReplies();
  }
  FlushDeferred();
  SendInlineReplies();
}

size_t Server::Impl::MaxDeferredWrites() const {
  // Replies that wait for their fsync leave through the acknowledger
  // whatever the group's size; smaller groups there only cost more hand-offs
  // (0.95 of the rate, +17% server CPU per insert in paired runs).
  return config_.engine.durability == Durability::kOs ? kMaxDeferredWrites : SIZE_MAX;
}

void Server::Impl::ReleaseFlushedAdmissions() {
  // A flushed write's record is in the change log, where the backlog bound
  // counts it: its admission goes back now, not at the burst's end, or the
  // writes after it in the burst would see it counted twice.
  const uint64_t flushed = group_->flushed();
  if (flushed > admissions_released_) {
    handler_.FinishDeferredWrites(flushed - admissions_released_);
    admissions_released_ = flushed;
  }
}

void Server::Impl::FlushDeferred() {
  // Even without deferred writes: the group may hold the locks of writes
  // that failed their checks.
  const Status flushed = group_->Flush();
  if (!deferred_.empty()) {
    if (!flushed.ok()) {
      log_->warn("a group of {} small writes was not written, each is answered with the error: {}",
                 deferred_.size(), flushed.ToString());
    }
    ReleaseFlushedAdmissions();
    // Each ticket's outcome is final now.
    for (DeferredReply& d : deferred_) {
      const Status outcome = group_->Outcome(d.ticket);
      if (!outcome.ok()) {
        // Nothing of it was written (a full disk, most often): the reply
        // encoded for success must not leave.
        FinishWithError(d.job, outcome, router_);
      } else {
        handler_.RecordTableWrite(d.counted);
        if (DurableNow(d.await_lsn, d.fence)) {
          inline_replies_.push_back(InlineReply{std::move(d.job), d.code, std::move(d.reply), d.entities});
        } else {
          AwaitDurable(d.job, d.code, d.reply, d.entities, d.await_lsn, std::move(d.fence));
        }
      }
    }
    deferred_.clear();
    // Handle did not wake the publisher for writes still in the group.
    if (owner_->publisher_) owner_->publisher_->Notify();
  }
  group_->Reset();
  admissions_released_ = 0;
}

void Server::Impl::SendInlineReplies() {
  for (InlineReply& r : inline_replies_) FinishJob(r.job, r.code, r.reply, router_, r.entities);
  inline_replies_.clear();
}

namespace {

// Same (table, PartitionKey), same hash: the requests of one partition go
// to one thread and run in the order they arrived. Table names are
// case-insensitive.
uint64_t PartitionHash(const std::string& table, const std::string& pk) {
  std::string key;
  key.reserve(table.size() + 1 + pk.size());
  AppendTableKey(table, &key);
  key.push_back('\0');
  key.append(pk);
  return XXH3_64bits(key.data(), key.size());
}

// The one PartitionKey a query's $filter confines it to (a point read, a
// partition scan or range), or nothing when it may read several partitions
// or does not parse (the worker answers that). Parsed here a first time so
// that such a query runs in its partition's order, behind the writes sent
// before it on the connection (found from outside: a pipelined query of a
// partition missed the EGTs sent just before it, on another worker).
std::optional<std::string> QueryPartition(const wire::Request& r) {
  if (r.filter.find_first_not_of(" \t\r\n") == std::string::npos) return std::nullopt;
  auto filter = query::ParseFilter(r.filter);
  if (!filter.ok()) return std::nullopt;
  query::Plan plan = query::MakePlan(filter->get());
  switch (plan.kind) {
    case query::PlanKind::kPoint:
      return std::move(plan.point_partition_key);
    case query::PlanKind::kPartitionScan:
    case query::PlanKind::kPartitionRange:
      if (plan.bounds.start) return std::move(plan.bounds.start->first);
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

}  // namespace

size_t Server::Impl::WorkerFor(const wire::Request& r, bool* any) {
  using wire::Op;
  const std::string* table = &r.table;
  const std::string* pk = nullptr;
  if (r.op == Op::kWrite && !r.ops.empty()) pk = &r.ops[0].entity.partition_key;
  if (r.op == Op::kBackup) return backup_queue_;
  if (r.op == Op::kGet || r.op == Op::kRequestArchive) pk = &r.pk;
  // A WriteMany goes with its first batch's partition: pipelined on one
  // connection, two WriteManys of one partition, or a WriteMany and a
  // Write or Get of it, used to run on two workers at once and commit in
  // either order (found from outside: the last write sent did not stick).
  // One whose batches live on several workers is split by worker instead
  // (PushWriteManyParts), so each batch runs in its partition's order.
  if (r.op == Op::kWriteMany && !r.writes.empty() && !r.writes[0].ops.empty()) {
    table = &r.writes[0].table;
    pk = &r.writes[0].ops[0].entity.partition_key;
  }
  std::optional<std::string> query_pk;
  if (r.op == Op::kQuery && (query_pk = QueryPartition(r))) pk = &*query_pk;
  // A table's creation and deletion run on one worker (that of its
  // partition ""), behind a barrier on every other worker (OnRequest,
  // PushBehindBarrier): ordered with every request of the table.
  static const std::string kTableItself;
  if (r.op == Op::kCreateTable || r.op == Op::kDeleteTable) pk = &kTableItself;
  const size_t workers = static_cast<size_t>(config_.workers);
  if (any != nullptr) *any = pk == nullptr;
  if (pk == nullptr) return round_robin_++ % workers;
  return PartitionHash(*table, *pk) % workers;
}

size_t Server::Impl::WorkerOfPartition(const std::string& table, const std::string& pk) const {
  return PartitionHash(table, pk) % static_cast<size_t>(config_.workers);
}

size_t Server::Impl::ForwarderFor(const wire::Request& r) {
  using wire::Op;
  const std::string* pk = nullptr;
  if (r.op == Op::kWrite && !r.ops.empty()) pk = &r.ops[0].entity.partition_key;
  if (r.op == Op::kGet || r.op == Op::kRequestArchive) pk = &r.pk;
  const size_t base = static_cast<size_t>(config_.workers);
  if (pk == nullptr) return base + round_robin_++ % forwarders_;
  return base + PartitionHash(r.table, *pk) % forwarders_;
}

bool Server::Impl::RunsInline(const wire::Request& r, size_t wire_bytes) const {
  // (In a cluster, a request for a shard served elsewhere never gets here:
  // OnRequest queues it on a forwarding thread, ClusterRouting::NeedsForwarding.)
  if (config_.inline_max_bytes == 0) return false;
  if (wire_bytes > config_.inline_max_bytes) {
    // A larger write (an EGT) only when it is the only request in flight: no
    // other request waits behind it here, and it saves the two hand-offs
    // (1.3x EGTs of 100 at depth 1, docs/performance.md session 20). With
    // anything else in flight it goes to its worker, so concurrent EGTs
    // still execute in parallel and small requests are not held up.
    // in_flight_ counts this request already; other threads only lower it.
    // Then it is a write like any other below.
    const bool alone = r.op == wire::Op::kWrite && wire_bytes <= config_.inline_alone_max_bytes &&
                       in_flight_.load(std::memory_order_acquire) == 1;
    if (!alone) return false;
  }
  switch (r.op) {
    case wire::Op::kPing:
      return true;
    case wire::Op::kGet:
      return r.after.empty();  // a read with session tokens may have to park
    case wire::Op::kWrite:
      // A RocksDB write stall would hold up every connection behind this
      // one write: it goes to a worker then. The fsync is not waited for
      // here (durable_acks.cc).
      return !owner_->engine_->WritesMayWait();
    default:
      return false;  // queries, batches of writes, table and admin operations
  }
}

void Server::Impl::SendReply(const std::string& identity, bool delimiter, const std::string& frame) {
  SendReply(identity, delimiter, zmq::message_t(frame.data(), frame.size()));
}

void Server::Impl::SendReply(const std::string& identity, bool delimiter, zmq::message_t&& frame) {
  router_.send(zmq::buffer(identity), zmq::send_flags::sndmore);
  if (delimiter) router_.send(zmq::message_t(), zmq::send_flags::sndmore);
  router_.send(frame, zmq::send_flags::dontwait);
}

void Server::Impl::AnswerBusy(const wire::Header& header, const std::string& identity,
                              bool delimiter, BusyReason why,
                              std::chrono::steady_clock::time_point received,
                              std::string_view tenant) {
  const bool stopping = why == BusyReason::kShuttingDown;
  Status s(Code::kServerBusy, stopping ? "server is shutting down; not executed, retry elsewhere or later"
                                       : "the server is busy (" + std::string(BusyReasonName(why)) +
                                             "); not executed, retry with back-off");
  std::string out;
  wire::EncodeError(header, s, &out);
  SendReply(identity, delimiter, out);
  owner_->metrics_.RecordBusy(why);
  owner_->metrics_.RecordRequest(static_cast<wire::Op>(header.op <= wire::kMaxOp ? header.op : 0),
                                 Code::kServerBusy, MicrosSince(received));
  // One warning a second at most: a flood must not become a flood of logs.
  if (const uint64_t n = busy_log_.Record(/*may_log=*/!stopping); n != 0) {
    log_->warn(
        "answering ServerBusy ({}{}; {} since the last warning): {} of {} bytes in flight on {} "
        "connections, {} requests",
        BusyReasonName(why),
        tenant.empty() ? std::string() : ", tenant '" + std::string(tenant) + "'", n,
        admission_->bytes_in_flight(), config_.max_inflight_bytes,
        admission_->connections_in_flight(), in_flight_.load());
  }
}

void Server::Impl::LogBusyOverdue() {
  if (owner_->stop_.load(std::memory_order_relaxed)) return;  // the stop says why
  if (const uint64_t n = busy_log_.TakeOverdue(); n != 0) {
    log_->warn(
        "answered ServerBusy {} more times after the last warning; now {} requests in flight", n,
        in_flight_.load());
  }
}

bool Server::Impl::OnRequest() {
  // On the stack: a request is 2 or 3 frames (identity, [empty,] body), and
  // a vector grown per request cost three allocations. A longer message is
  // malformed: up to 9 of its frames are read and dropped, as before.
  std::array<zmq::message_t, 3> frames;
  size_t nframes = 0;
  bool more = true;
  while (more && nframes < frames.size()) {
    if (!router_.recv(frames[nframes], zmq::recv_flags::dontwait)) break;
    more = frames[nframes++].more();
  }
  if (nframes == 0) return false;
  for (zmq::message_t extra; more && nframes < 9; nframes++) {
    if (!router_.recv(extra, zmq::recv_flags::dontwait)) break;
    more = extra.more();
  }
  const auto received = std::chrono::steady_clock::now();
  std::string identity = frames[0].to_string();
  bool delimiter = false;
  const zmq::message_t* payload = nullptr;
  if (nframes == 2) {
    payload = &frames[1];
  } else if (nframes == 3 && frames[1].size() == 0) {
    delimiter = true;
    payload = &frames[2];
  }
  if (payload == nullptr) {
    // Not one request frame: there is no request id to answer to.
    owner_->metrics_.RecordMalformed();
    log_->warn("peer {}: dropped a message of {} frames (one request frame expected)",
               PeerId(identity), nframes - 1);
    return true;
  }
  std::string_view data(static_cast<const char*>(payload->data()), payload->size());
  wire::Header header;
  header.op = 0;
  wire::ParseHeader(data, &header);  // best effort, for the error reply's id

  auto reject = [&](const Status& s) {
    std::string out;
    wire::EncodeError(header, s, &out);
    SendReply(identity, delimiter, out);
    owner_->metrics_.RecordRequest(static_cast<wire::Op>(header.op <= wire::kMaxOp ? header.op : 0),
                                   s.code(), MicrosSince(received));
  };

  // Cheapest answers first: nothing below is spent on a request that is
  // refused anyway, so refusals keep pace with a flood.
  if (owner_->stop_.load(std::memory_order_relaxed)) {
    AnswerBusy(header, identity, delimiter, BusyReason::kShuttingDown, received);
    return true;
  }
  if (data.size() > config_.max_request_bytes) {
    reject(Status(Code::kRequestBodyTooLarge, "request of " + std::to_string(data.size()) +
                                                  " bytes is over the limit of " +
                                                  std::to_string(config_.max_request_bytes)));
    return true;
  }
  // Before decoding, with the least the request can cost (its wire bytes):
  // a frame that cannot fit is refused without spending time on it. The
  // exact charge is taken after decoding.
  BusyReason why;
  if (!admission_->TryAdmit(identity, data.size() + sizeof(wire::Request), &why,
                            /*charge=*/false)) {
    AnswerBusy(header, identity, delimiter, why, received);
    return true;
  }
  Job job;
  job.received = received;
  Status decoded = wire::DecodeRequest(data, &job.request);
  if (!decoded.ok()) {
    owner_->metrics_.RecordMalformed();
    if (log_->should_log(spdlog::level::debug)) {
      log_->debug("req {}/{}: rejected: {}", PeerId(identity), header.request_id, decoded.ToString());
    }
    reject(decoded);
    return true;
  }
  job.wire_bytes = data.size();
  // From another sidecar of the cluster: runs here or is refused, never
  // forwarded again (forwarder.h).
  job.request.forwarded = handler_.routing() != nullptr && identity.starts_with(kForwardedIdPrefix);
  if (owner_->authenticator_ && !Authenticate(job, header, identity, delimiter)) return true;
  if (!owner_->authenticator_ && job.request.forwarded && !job.request.token.empty()) {
    // With authentication off, a token of Handler::ForwardToken's unchecked
    // key on a forwarded request is the scope of a principal the forwarding
    // member verified (the REST gateway's SAS): applied unverified, since it
    // only narrows what any request may do here anyway. Any other token is
    // ignored, as it is on requests that are not forwarded.
    auto scope = token::ParseToken(job.request.token);
    if (scope.ok() && scope->key_id == Handler::kUncheckedForwardKeyId) {
      job.principal = std::make_shared<const token::Token>(std::move(scope).value());
    }
  }
  // Gives back the tenant's quota slot of a request refused below.
  auto release_tenant = [&] {
    if (job.principal) quotas_.Release(job.principal->spec.tenant);
  };
  job.charge = data.size() + DecodedBytes(job.request);
  if (!admission_->TryAdmit(identity, job.charge, &why)) {
    release_tenant();
    AnswerBusy(header, identity, delimiter, why, received);
    return true;
  }
  job.envelope = std::move(identity);
  job.delimiter = delimiter;
  job.received = received;
  job.forward = forwarders_ > 0 && handler_.routing()->NeedsForwarding(job.request);
  bool any_worker = false;
  const size_t w = job.forward ? ForwarderFor(job.request) : WorkerFor(job.request, &any_worker);
  in_flight_.fetch_add(1, std::memory_order_relaxed);
  const bool inline_ok = !job.forward && RunsInline(job.request, data.size()) && queues_[w]->Idle();
  // Only a single write joins the burst's group; anything else runs after
  // the group is written, as it would have if each write ran alone.
  const bool joins_group = inline_ok && job.request.op == wire::Op::kWrite;
  if (!joins_group) FlushDeferred();
  if (inline_ok) {
    // Nothing of this partition is queued or executing, so running it here
    // overtakes nothing; the replies its worker already sent leave first.
    if (replies_waiting_.load(std::memory_order_acquire) > 0) ForwardReplies();
    std::string reply;
    uint64_t entities = 0, await_lsn = 0;
    std::vector<ShardEpoch> fence;
    const uint64_t ticket = group_->deferred();
    // Taken before Handle consumes the operations; used only if deferred.
    Handler::TableWrite counted;
    if (joins_group) counted = Handler::TableWriteOf(job.request);
    const Code code = handler_.HandleConsuming(job.request, job.principal.get(), &reply, &entities, &await_lsn, &fence,
                                               joins_group ? group_.get() : nullptr);
    owner_->metrics_.RecordInline();
    // This write may have flushed the group's earlier ones (same partition).
    ReleaseFlushedAdmissions();
    if (group_->deferred() > ticket) {
      deferred_.push_back(DeferredReply{std::move(job), code, std::move(reply), entities, await_lsn, std::move(fence),
                                        ticket, std::move(counted)});
    } else if (DurableNow(await_lsn, fence)) {
      inline_replies_.push_back(InlineReply{std::move(job), code, std::move(reply), entities});
    } else {
      AwaitDurable(job, code, reply, entities, await_lsn, std::move(fence));
    }
    return true;
  }
  // TryPush only moves the job when it succeeds; on failure it is still ours.
  // Not in a scale-out cluster: there a table operation waits for its
  // record to come back from the cluster topic (up to seconds), which would
  // hold every worker, and the other members apply it when they read it,
  // unordered with their requests anyway (docs/scale-out.md).
  const bool barrier =
      !job.forward && config_.workers > 1 && handler_.routing() == nullptr &&
      (job.request.op == wire::Op::kCreateTable || job.request.op == wire::Op::kDeleteTable);
  // A query that may read several partitions runs after everything queued
  // before it on the workers that hold the connection's unanswered
  // requests, so that it sees every write sent before it on the
  // connection; those workers only mark the point and go on.
  // Not with session tokens (a read that waits for them loses its place
  // anyway, parked_reads.h).
  const bool catch_up = !job.forward && any_worker && config_.workers > 1 &&
                        handler_.routing() == nullptr && job.request.op == wire::Op::kQuery &&
                        job.request.after.empty();
  Split split = Split::kNotSplit;
  if (!job.forward && job.request.op == wire::Op::kWriteMany) split = PushWriteManyParts(job);
  if (split == Split::kQueued) return true;
  bool pushed = false;
  if (split != Split::kNoRoom) {
    // Only the workers that hold this connection's unanswered requests can
    // hold a write it sent before the query: the mark goes to those alone,
    // and a query with none ahead of it elsewhere runs without one.
    WorkerSet ahead;
    if (catch_up) {
      ahead = admission_->QueuedOn(job.envelope);
      ahead.reset(w);
    }
    // Counted before the push: a quick answer releases what was noted.
    if (!job.forward && w < static_cast<size_t>(config_.workers)) {
      job.queued_on.set(w);
      admission_->NoteQueued(job.envelope, job.queued_on);
    }
    if (barrier) {
      pushed = PushBehindBarrier(w, job, /*shares_wait=*/true);
    } else if (catch_up && ahead.any()) {
      pushed = PushBehindBarrier(w, job, /*shares_wait=*/false, &ahead);
    } else {
      pushed = queues_[w]->TryPush(std::move(job));
    }
  }
  if (!pushed) {
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    admission_->Release(job.envelope, job.charge, job.queued_on);
    release_tenant();
    AnswerBusy(header, job.envelope, job.delimiter, BusyReason::kQueueFull, received);
  }
  return true;
}

bool Server::Impl::PushBehindBarrier(size_t executor, Job& job, bool shares_wait,
                                     const WorkerSet* on) {
  // All or nothing: a share on a queue whose operation was refused would
  // only pass through, but a refused share would hold the operation's
  // worker for good. The frontend is the only producer of new jobs, so the
  // room seen here is there at the push.
  const size_t workers = static_cast<size_t>(config_.workers);
  auto gets_share = [&](size_t i) { return i != executor && (on == nullptr || on->test(i)); };
  size_t shares = 0;
  for (size_t i = 0; i < workers; i++) {
    if ((i == executor || gets_share(i)) && !queues_[i]->HasRoom()) return false;
    shares += gets_share(i);
  }
  job.barrier = std::make_shared<WorkerBarrier>(shares, shares_wait);
  for (size_t i = 0; i < workers; i++) {
    if (!gets_share(i)) continue;
    Job share;
    share.barrier = job.barrier;
    share.barrier_share = true;
    if (!queues_[i]->PushShare(std::move(share))) {
      job.barrier->Cancel();  // the shares pushed already pass through
      job.barrier.reset();
      return false;
    }
  }
  if (queues_[executor]->TryPush(std::move(job))) return true;
  job.barrier->Cancel();
  job.barrier.reset();
  return false;
}

bool Server::Impl::Authenticate(Job& job, const wire::Header& header, const std::string& identity,
                                bool delimiter) {
  const auto now = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
  auto principal = owner_->authenticator_->Authenticate(job.request.token, now);
  if (!principal.ok()) {
    std::string out;
    wire::EncodeError(header, principal.status(), &out);
    SendReply(identity, delimiter, out);
    owner_->metrics_.RecordRequest(job.request.op, principal.status().code(), MicrosSince(job.received));
    // Never the token itself: it is a bearer credential.
    log_->info("req {}/{}: {} refused: {}", PeerId(identity), header.request_id, wire::OpName(job.request.op),
               principal.status().ToString());
    return false;
  }
  job.principal = std::move(principal).value();
  const std::string& tenant = job.principal->spec.tenant;
  if (!quotas_.TryAdmit(tenant, job.wire_bytes, job.received)) {
    owner_->tenant_metrics_.Record(tenant, Code::kServerBusy, job.wire_bytes, 0, 0);
    if (log_->should_log(spdlog::level::debug)) {
      log_->debug("req {}/{}: tenant '{}' over its quota", PeerId(identity), header.request_id, tenant);
    }
    AnswerBusy(header, identity, delimiter, BusyReason::kTenantQuota, job.received, tenant);
    return false;
  }
  // Invariant 9: the change log records who the token says, never what the
  // request typed.
  job.request.caller = job.principal->spec.identity;
  return true;
}

void Server::Impl::ForwardReplies() {
  SendInlineReplies();
  for (;;) {
    zmq::message_t identity, flag, reply;
    if (!replies_.recv(identity, zmq::recv_flags::dontwait)) return;
    (void)replies_.recv(flag);
    (void)replies_.recv(reply);
    replies_waiting_.fetch_sub(1, std::memory_order_relaxed);
    router_.send(identity, zmq::send_flags::sndmore);
    if (flag.size() == 1 && *static_cast<const char*>(flag.data()) == 1) {
      router_.send(zmq::message_t(), zmq::send_flags::sndmore);
    }
    router_.send(reply, zmq::send_flags::dontwait);
  }
}

}  // namespace sidetable::sidecar
