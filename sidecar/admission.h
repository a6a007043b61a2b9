// Admission: which accepted-but-unanswered requests the server holds, and
// the bounds that turn a flood into ServerBusy (503) instead of memory.
//
// A request is charged, from the moment the frontend admits it until its
// reply is handed to the ROUTER socket, at its wire size plus an estimate of
// its decoded size (DecodedBytes). Three bounds, checked by the frontend
// before anything is queued:
//   - max_inflight_bytes: the whole server;
//   - max_inflight_per_connection requests and
//     max_inflight_bytes_per_connection bytes: one ZeroMQ identity, so one
//     flooding connection cannot fill every worker queue while the others
//     starve.
// A connection (or the server) with nothing in flight is always admitted,
// so a single legal request can never be refused forever; the largest
// charge is therefore the slack over each bound (docs/operations.md,
// "Capacity and limits").
//
// Large replies (kZeroCopyReplyBytes and more, server_impl.h) are charged
// too, from when they are handed to ZeroMQ until libzmq frees them (sent,
// dropped or their peer gone): a client that sends queries and does not
// read the replies would otherwise fill libzmq's queue (sndhwm, 1,000
// replies and more) with pages of megabytes that nothing here counts. Their
// bytes count against both byte bounds, so such a connection's next
// requests are refused (connection_bytes), and a read's reply that finds
// its connection already holding queued replies past a bound is replaced by
// ServerBusy (TryChargeReply).
//
// Thread safety: every method takes the lock: TryAdmit() runs on the
// frontend thread, Release() and TryChargeReply() on any thread that
// answers, ReleaseReply() on libzmq's I/O thread (or whichever frees the
// message); the accessors from any thread (the HTTP pages).
#pragma once

#include <array>
#include <atomic>
#include <bitset>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "protocol/wire.h"

namespace sidetable::sidecar {

// Why a request was answered ServerBusy; labels the busy counter.
enum class BusyReason : uint8_t {
  kQueueFull = 0,          // the partition's worker queue is full (sidecar.queue_depth)
  kInflightBytes,          // sidecar.max_inflight_bytes
  kConnectionRequests,     // sidecar.max_inflight_per_connection
  kConnectionBytes,        // sidecar.max_inflight_bytes_per_connection
  kShuttingDown,           // SIGTERM: not accepted, or still queued when the grace ran out
  kTenantQuota,            // the token's tenant is over auth.quotas (sidecar/auth/tenant_quotas.h)
};
inline constexpr size_t kBusyReasons = 6;
std::string_view BusyReasonName(BusyReason r);  // "queue_full", ...

// Worker threads, by index (sidecar.workers is at most 256).
using WorkerSet = std::bitset<256>;

struct AdmissionLimits {
  uint64_t max_bytes = 0;
  uint64_t max_connection_requests = 0;
  uint64_t max_connection_bytes = 0;
};

class Admission {
 public:
  explicit Admission(const AdmissionLimits& limits) : limits_(limits) {}

  // Charges `bytes` to `identity` and returns true, or returns false and
  // sets *why without charging anything. With charge false it only answers
  // whether it would admit (the frontend's check before decoding).
  bool TryAdmit(const std::string& identity, uint64_t bytes, BusyReason* why, bool charge = true);
  // Gives back what TryAdmit() charged, once the request is answered, and
  // the workers NoteQueued() counted it on.
  void Release(const std::string& identity, uint64_t bytes, const WorkerSet& queued_on = {});
  // Counts an admitted request of `identity` as queued on `workers` until
  // its Release. Called before the push, so that a quick answer cannot
  // release it first; a connection with nothing charged is not tracked.
  void NoteQueued(const std::string& identity, const WorkerSet& workers);
  // Takes a request off the workers NoteQueued() counted it on, before its
  // reply is sent (so that the client's next request never sees it there);
  // its Release is then given no workers.
  void Unqueue(const std::string& identity, const WorkerSet& workers);
  // The workers that hold requests of `identity` not answered yet: what a
  // query of several partitions must wait for to see that connection's
  // earlier writes (frontend.cc, the order mark).
  WorkerSet QueuedOn(const std::string& identity) const;
  // Charges a large reply's `bytes` to `identity` while libzmq holds it.
  // Refuses (false, *why, nothing charged) only when `refusable` and the
  // connection holds queued replies already and this one would take it
  // past max_connection_bytes, or the server past max_bytes: a connection
  // with no reply queued always gets its reply, so a client that reads is
  // never refused the reply of a request it was admitted for.
  bool TryChargeReply(const std::string& identity, uint64_t bytes, bool refusable, BusyReason* why);
  // Gives back what TryChargeReply() charged, once libzmq frees the reply.
  void ReleaseReply(const std::string& identity, uint64_t bytes);

  uint64_t bytes_in_flight() const { return bytes_.load(std::memory_order_relaxed); }
  uint64_t peak_bytes_in_flight() const { return peak_.load(std::memory_order_relaxed); }
  // The part of bytes_in_flight() that is replies waiting in libzmq.
  uint64_t reply_bytes() const { return reply_bytes_.load(std::memory_order_relaxed); }
  size_t connections_in_flight() const;

 private:
  struct PerConnection {
    uint64_t requests = 0;
    uint64_t bytes = 0;        // requests' and replies' charges
    uint64_t reply_bytes = 0;  // replies' alone
    std::vector<uint32_t> queued;  // requests queued or running, by worker (NoteQueued)
  };
  // Requires mu_.
  static void UnqueueLocked(PerConnection& c, const WorkerSet& workers);
  // Adds `bytes` to the server's total and its peak. Requires mu_.
  void AddLocked(uint64_t bytes);
  // Takes `bytes` off `it` and the total; forgets the connection once it
  // holds nothing. Requires mu_.
  void SubtractLocked(std::unordered_map<std::string, PerConnection>::iterator it, uint64_t bytes);
  const AdmissionLimits limits_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, PerConnection> connections_;  // only those with something in flight
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> peak_{0};
  std::atomic<uint64_t> reply_bytes_{0};
};

// What a decoded request costs in memory beyond its wire bytes: the strings
// it owns and the vectors of operations and properties. An estimate (no
// allocator overhead), but one that grows with every count a frame declares,
// so a frame of many tiny properties is charged for what it really holds.
uint64_t DecodedBytes(const wire::Request& r);

}  // namespace sidetable::sidecar
