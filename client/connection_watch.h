// ConnectionWatch: what a client's socket saw of its connection, so that a
// request nobody answered says why.
//
// A request with no reply (Code::kNoReply) has causes a user deals with in
// different ways: nothing listens at the endpoint (start the sidecar); the
// sidecar closes each connection during the ZeroMQ handshake (it is at
// sidecar.max_connections, docs/operations.md "Floods", or it requires CURVE
// and this client speaks plain ZeroMQ, or the reverse with another server
// key); the sidecar refuses this client's CURVE key; or the connection is up
// and the sidecar is slow or stuck. A DEALER hides all of them behind its
// queue and its reconnects; libzmq's socket monitor reports them, and this
// class reads it.
//
// Cost: the monitor's events are queued by libzmq's I/O thread on an
// inproc pair, one per connect, handshake or disconnect; the client reads
// them only when a request runs out of time and when it is idle, never per
// reply. Events libzmq could not queue (its limit of 1,000 while the client
// never idles nor times out) are lost; the next ones correct the state.
//
// Thread safety: the client's thread only, like the socket it watches.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace sidetable::client {

class ConnectionWatch {
 public:
  // What a socket saw since its last handshake that succeeded (all since
  // it was made, when none has). Public so that tests can feed events.
  struct Seen {
    bool up = false;              // a handshake succeeded and no disconnect since
    bool ever_up = false;         // some handshake succeeded
    bool tcp_open = false;        // connected, handshake not finished
    int refused_connects = 0;     // connect attempts that failed (nothing listens)
    int closed_in_handshake = 0;  // the peer closed before the handshake ended
    int auth_refused = 0;         // ZAP said no (a CURVE key not allowed)
    int protocol_errors = 0;      // the handshake broke (a mechanism mismatch)
    int last_protocol_error = 0;
  };

  // Starts watching `socket`, which must not be connected yet. nullptr when
  // libzmq cannot monitor it: the client works as before, unexplained.
  static std::unique_ptr<ConnectionWatch> Start(zmq::context_t& ctx, zmq::socket_t& socket);
  ~ConnectionWatch();

  // Reads the events queued so far; never blocks.
  void Drain();
  // One libzmq event (ZMQ_EVENT_*, with its value) into the state.
  void OnEvent(uint16_t event, int32_t value);
  const Seen& seen() const { return seen_; }
  // Connections lost after their handshake since the watch started.
  uint64_t drops() const { return drops_; }
  // Drains, then whether the connection is up and none was lost since
  // drops() was `drops`: a request sent then is still with the sidecar, so
  // a long one (Backup) is worth waiting for.
  bool StillUp(uint64_t drops);

  // Drains, then says in a phrase why `endpoint` has not answered: "" when
  // nothing was seen yet. `curve`: the client uses CURVE (the phrase for a
  // connection closed in the handshake depends on it).
  std::string Explain(const std::string& endpoint, bool curve);
  // The same phrase for a given state (tests).
  static std::string Explain(const Seen& seen, const std::string& endpoint, bool curve);

 private:
  ConnectionWatch() = default;
  zmq::socket_t* watched_ = nullptr;
  std::unique_ptr<zmq::socket_t> monitor_;
  Seen seen_;
  uint64_t drops_ = 0;  // not in Seen: a handshake resets that
  bool connected_since_retry_ = false;
};

}  // namespace sidetable::client
