#include "client/connection_watch.h"

#include <zmq.hpp>

#include <cstdio>
#include <cstring>

namespace sidetable::client {
namespace {

// The client owns its context, so one name per context is unique.
constexpr char kMonitorEndpoint[] = "inproc://sidetable.client-connection";

constexpr int kEvents = ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED | ZMQ_EVENT_DISCONNECTED |
                        ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                        ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_SUCCEEDED;

std::string Times(int n) { return n == 1 ? "once" : std::to_string(n) + " times"; }

}  // namespace

std::unique_ptr<ConnectionWatch> ConnectionWatch::Start(zmq::context_t& ctx,
                                                        zmq::socket_t& socket) {
  if (zmq_socket_monitor(socket.handle(), kMonitorEndpoint, kEvents) != 0) return nullptr;
  std::unique_ptr<ConnectionWatch> w(new ConnectionWatch());
  try {
    w->monitor_ = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::pair);
    w->monitor_->set(zmq::sockopt::linger, 0);
    w->monitor_->connect(kMonitorEndpoint);
  } catch (const zmq::error_t&) {
    zmq_socket_monitor(socket.handle(), nullptr, 0);
    return nullptr;
  }
  w->watched_ = &socket;
  return w;
}

ConnectionWatch::~ConnectionWatch() {
  // The socket may already be closed (the client closes it first); libzmq
  // then ends the monitor itself.
  if (monitor_) monitor_->close();
}

void ConnectionWatch::Drain() {
  if (!monitor_) return;
  // An event is two frames: 2 bytes of event and 4 of value, then the endpoint.
  zmq::message_t head, address;
  while (monitor_->recv(head, zmq::recv_flags::dontwait)) {
    const bool more = head.more();
    if (more) (void)monitor_->recv(address, zmq::recv_flags::dontwait);
    if (head.size() < 6) continue;
    uint16_t event;
    int32_t value;
    std::memcpy(&event, head.data(), sizeof event);
    std::memcpy(&value, static_cast<const char*>(head.data()) + 2, sizeof value);
    OnEvent(event, value);
  }
}

void ConnectionWatch::OnEvent(uint16_t event, int32_t value) {
  switch (event) {
    case ZMQ_EVENT_HANDSHAKE_SUCCEEDED:
      seen_ = Seen{};
      seen_.up = seen_.ever_up = true;
      return;
    case ZMQ_EVENT_CONNECTED:
      seen_.tcp_open = true;
      connected_since_retry_ = true;
      return;
    case ZMQ_EVENT_CONNECT_RETRIED:
      // libzmq retries after a failed connect, and reconnects after a
      // disconnect: only the first kind says nothing listens.
      if (!connected_since_retry_) seen_.refused_connects++;
      connected_since_retry_ = false;
      return;
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
      seen_.closed_in_handshake++;
      seen_.tcp_open = false;  // its DISCONNECTED follows: counted once
      return;
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
      seen_.auth_refused++;
      seen_.tcp_open = false;
      return;
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
      seen_.protocol_errors++;
      seen_.last_protocol_error = value;
      seen_.tcp_open = false;
      return;
    case ZMQ_EVENT_DISCONNECTED:
      if (seen_.up) drops_++;
      if (seen_.tcp_open) seen_.closed_in_handshake++;
      seen_.tcp_open = false;
      seen_.up = false;
      return;
    default:
      return;
  }
}

bool ConnectionWatch::StillUp(uint64_t drops) {
  Drain();
  return seen_.up && drops_ == drops;
}

std::string ConnectionWatch::Explain(const std::string& endpoint, bool curve) {
  Drain();
  return Explain(seen_, endpoint, curve);
}

std::string ConnectionWatch::Explain(const Seen& s, const std::string& endpoint, bool curve) {
  if (s.up) return "the connection is up: the sidecar did not answer in time (busy or stopped)";
  if (s.auth_refused > 0) {
    return "the sidecar refused this client's CURVE key at the handshake (" +
           Times(s.auth_refused) + "): it is not in the sidecar's security.curve_clients_file";
  }
  if (s.protocol_errors > 0) {
    char code[16];
    std::snprintf(code, sizeof code, "0x%x", static_cast<unsigned>(s.last_protocol_error));
    return "the ZeroMQ handshake failed (" + Times(s.protocol_errors) + ", protocol error " + code +
           "): " +
           (curve ? "the sidecar does not use CURVE, or uses another key than this client's server "
                    "key"
                  : "the sidecar may require CURVE (docs/security.md)");
  }
  if (s.closed_in_handshake > 0) {
    return "the sidecar closed the connection during the handshake (" +
           Times(s.closed_in_handshake) +
           "): it is at its connection bound (sidecar.max_connections), or " +
           (curve ? "this client's server key is not the sidecar's"
                  : "it requires CURVE (docs/security.md)");
  }
  if (s.refused_connects > 0) {
    return std::string(s.ever_up ? "the connection was lost, and " : "") + "the connect failed (" +
           Times(s.refused_connects) + "): nothing listens at " + endpoint;
  }
  if (s.ever_up) return "the connection was lost";
  return "";
}

}  // namespace sidetable::client
