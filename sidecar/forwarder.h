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
// CURVE (docs/security.md, "CURVE in a cluster"): when this sidecar's
// listeners require CURVE, so do its peers', and every forward is a CURVE
// client with this sidecar's own key pair, expecting the owner's public key
// as published in its member record. A socket belongs to one (endpoint,
// server key): when the key published for an endpoint changes (a member
// restarted with a new key) the old socket is closed, never reused. An
// owner without a published key gets nothing, not even a connection
// attempt: its request is refused ServerBusy (no_peer_key()), so a request
// is never sent in plain text by a sidecar that has CURVE on. A peer whose
// allow-list lacks this sidecar's key refuses the handshake, and the call
// ends as unreachable (ServerBusy, not executed).
//
// Thread safety: Call() from any number of threads at once.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <zmq.hpp>

#include "engine/status.h"
#include "protocol/curve_keys.h"

namespace spdlog {
class logger;
}

namespace sidetable::sidecar {

inline constexpr std::string_view kForwardedIdPrefix = "st-fwd:";

class Forwarder {
 public:
  // `member_id` names this sidecar in the routing ids it uses. `curve`:
  // this sidecar's key pair when its listeners require CURVE
  // (SecurityConfig::server_keys); empty keys: plain ZeroMQ.
  explicit Forwarder(std::string member_id, curve::KeyPair curve = {});
  ~Forwarder();

  // Sends `request` (a whole request frame) to `endpoint`, whose CURVE
  // public key (Z85) is `server_key`, and returns the reply frame.
  // kServerBusy when no reply came by `deadline` (the request may or may
  // not have executed), and, not sent, when the owner is not reachable or
  // CURVE is on and `server_key` is empty. Without CURVE `server_key` is
  // ignored.
  Result<std::string> Call(const std::string& endpoint, const std::string& server_key, const std::string& request,
                           std::chrono::steady_clock::time_point deadline);
  // A peer without a key (plain ZeroMQ; refused when CURVE is on).
  Result<std::string> Call(const std::string& endpoint, const std::string& request,
                           std::chrono::steady_clock::time_point deadline) {
    return Call(endpoint, std::string(), request, deadline);
  }

  bool curve() const { return !curve_.secret_key.empty(); }

  uint64_t forwarded() const { return forwarded_.load(std::memory_order_relaxed); }
  uint64_t timeouts() const { return timeouts_.load(std::memory_order_relaxed); }
  uint64_t unreachable() const { return unreachable_.load(std::memory_order_relaxed); }
  // Requests refused because CURVE is on and their owner published no key.
  uint64_t no_peer_key() const { return no_peer_key_.load(std::memory_order_relaxed); }
  // How long a send waits for a connection to the peer before the request
  // is refused (not sent, so its outcome is known).
  static constexpr std::chrono::milliseconds kConnectWait{250};

 private:
  struct Sockets;
  Sockets& ThreadSockets();

  const std::string member_id_;
  const curve::KeyPair curve_;
  std::shared_ptr<spdlog::logger> log_;
  // An id per Forwarder, so thread-local sockets never outlive theirs.
  const uint64_t instance_;
  zmq::context_t ctx_{1};
  std::atomic<uint64_t> next_request_id_{1};
  std::atomic<uint64_t> next_socket_{1};
  std::atomic<uint64_t> forwarded_{0};
  std::atomic<uint64_t> timeouts_{0};
  std::atomic<uint64_t> unreachable_{0};
  std::atomic<uint64_t> no_peer_key_{0};
  std::atomic<int64_t> no_peer_key_logged_ms_{0};  // rate limit of its warning
};

}  // namespace sidetable::sidecar
