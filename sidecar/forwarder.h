// Forwarder: one request to another sidecar of the cluster, and its reply
// (docs/scale-out.md, "Routing").
//
// The calling thread blocks until the reply or the deadline: forwarding
// runs on the workers and the REST gateway's threads, never on the
// frontend. Each calling thread has its own DEALER socket per peer
// endpoint, so the requests of one partition (which one worker executes in
// order) reach the owner in order over one connection. Every socket's
// routing id starts with kForwardedIdPrefix: the receiving frontend marks
// such requests forwarded, and a forwarded request is never forwarded
// again (no loops while two sidecars disagree about an owner for a moment).
// A socket that timed out is closed, so a late reply is dropped with it.
//
// Thread safety: Call() from any number of threads at once.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "engine/status.h"

namespace sidetable::sidecar {

inline constexpr std::string_view kForwardedIdPrefix = "st-fwd:";

class Forwarder {
 public:
  // `member_id` names this sidecar in the routing ids it uses. Plain
  // ZeroMQ: CURVE between sidecars is not built (docs/scale-out.md).
  explicit Forwarder(std::string member_id);
  ~Forwarder();

  // Sends `request` (a whole request frame) to `endpoint` and returns the
  // reply frame. kServerBusy when no reply came by `deadline` (the request
  // may or may not have executed).
  Result<std::string> Call(const std::string& endpoint, const std::string& request,
                           std::chrono::steady_clock::time_point deadline);

  uint64_t forwarded() const { return forwarded_.load(std::memory_order_relaxed); }
  uint64_t timeouts() const { return timeouts_.load(std::memory_order_relaxed); }
  uint64_t unreachable() const { return unreachable_.load(std::memory_order_relaxed); }
  // How long a send waits for a connection to the peer before the request
  // is refused (not sent, so its outcome is known).
  static constexpr std::chrono::milliseconds kConnectWait{250};

 private:
  struct Sockets;
  Sockets& ThreadSockets();

  const std::string member_id_;
  // An id per Forwarder, so thread-local sockets never outlive theirs.
  const uint64_t instance_;
  zmq::context_t ctx_{1};
  std::atomic<uint64_t> next_request_id_{1};
  std::atomic<uint64_t> next_socket_{1};
  std::atomic<uint64_t> forwarded_{0};
  std::atomic<uint64_t> timeouts_{0};
  std::atomic<uint64_t> unreachable_{0};
};

}  // namespace sidetable::sidecar
