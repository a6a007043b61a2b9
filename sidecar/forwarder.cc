#include "sidecar/forwarder.h"

#include <map>
#include <vector>

#include <spdlog/spdlog.h>

#include "protocol/wire.h"

namespace sidetable::sidecar {
namespace {
std::atomic<uint64_t> g_instances{1};

int64_t SteadyMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

// The sockets of one thread for one Forwarder instance: one per endpoint,
// set up for the server key it was connected with.
struct Forwarder::Sockets {
  struct Slot {
    std::string server_key;  // "" without CURVE
    std::unique_ptr<zmq::socket_t> socket;
  };
  uint64_t instance = 0;
  std::map<std::string, Slot> by_endpoint;
};

Forwarder::Forwarder(std::string member_id, curve::KeyPair curve)
    : member_id_(std::move(member_id)),
      curve_(std::move(curve)),
      log_(spdlog::default_logger()->clone("forward")),
      instance_(g_instances.fetch_add(1)) {}

Forwarder::~Forwarder() {
  // Threads' sockets still refer to ctx_: closing the context would block
  // on them, so let it terminate without waiting for them (their owners
  // are the worker threads, which have stopped by now).
  ctx_.shutdown();
}

Forwarder::Sockets& Forwarder::ThreadSockets() {
  thread_local std::vector<std::unique_ptr<Sockets>> all;
  for (auto& s : all) {
    if (s->instance == instance_) return *s;
  }
  all.push_back(std::make_unique<Sockets>());
  all.back()->instance = instance_;
  return *all.back();
}

Result<std::string> Forwarder::Call(const std::string& endpoint, const std::string& server_key,
                                    const std::string& request, std::chrono::steady_clock::time_point deadline) {
  const std::string& key = curve() ? server_key : std::string();
  if (curve() && key.empty()) {
    no_peer_key_.fetch_add(1, std::memory_order_relaxed);
    // One warning a second at most: every request for the shard lands here.
    const int64_t now = SteadyMs();
    int64_t last = no_peer_key_logged_ms_.load(std::memory_order_relaxed);
    if (now - last >= 1000 && no_peer_key_logged_ms_.compare_exchange_strong(last, now)) {
      log_->warn("not forwarding to {}: this sidecar requires CURVE and the owner's member record publishes no "
                 "CURVE key ({} such requests refused so far)",
                 endpoint, no_peer_key());
    }
    return Status(Code::kServerBusy, "the shard's owner " + endpoint +
                                         " publishes no CURVE key and this sidecar forwards only over CURVE "
                                         "(security.curve_secret_key_file on every member); not executed");
  }
  Sockets& mine = ThreadSockets();
  auto& entry = mine.by_endpoint[endpoint];
  // A socket set up for another server key (the member restarted with a
  // new key) would keep failing its handshake: replace it.
  if (entry.socket && entry.server_key != key) entry.socket.reset();
  auto& slot = entry.socket;
  try {
    if (!slot) {
      auto s = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::dealer);
      const std::string id = std::string(kForwardedIdPrefix) + member_id_ + ":" +
                             std::to_string(next_socket_.fetch_add(1));
      s->set(zmq::sockopt::routing_id, id);
      s->set(zmq::sockopt::linger, 0);
      s->set(zmq::sockopt::immediate, 1);  // no queueing for a peer not connected
      if (!key.empty()) {
        // Before connect: the handshake uses what is set now.
        s->set(zmq::sockopt::curve_serverkey, key);
        s->set(zmq::sockopt::curve_publickey, curve_.public_key);
        s->set(zmq::sockopt::curve_secretkey, curve_.secret_key);
      }
      s->connect(endpoint);
      slot = std::move(s);
      entry.server_key = key;
    }
    std::string frame = request;
    const uint64_t id = next_request_id_.fetch_add(1);
    wire::SetRequestId(&frame, id);
    zmq::socket_t& sock = *slot;
    // With ZMQ_IMMEDIATE nothing is queued for a peer not connected: a
    // dead owner (killed, not yet replaced by the group) is answered at
    // once instead of after the whole wait. A live one on loopback connects
    // in well under this.
    zmq::pollitem_t out_item{static_cast<void*>(sock), 0, ZMQ_POLLOUT, 0};
    const auto connect_by = std::min(deadline, std::chrono::steady_clock::now() + kConnectWait);
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(connect_by -
                                                                               std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        unreachable_.fetch_add(1, std::memory_order_relaxed);
        // With CURVE a handshake the owner refused looks the same from
        // here (no connection): name that cause too.
        return Status(Code::kServerBusy,
                      "the shard's owner " + endpoint + " is not reachable" +
                          (key.empty() ? std::string()
                                       : " (or it refused this sidecar's CURVE key: is the key on its "
                                         "security.curve_clients_file?)") +
                          "; not executed, retry with back-off");
      }
      if (zmq::poll(&out_item, 1, left) > 0) break;
    }
    // DEALER to ROUTER: an empty delimiter frame, as REQ-style clients send.
    sock.send(zmq::message_t(), zmq::send_flags::sndmore);
    sock.send(zmq::buffer(frame), zmq::send_flags::none);
    forwarded_.fetch_add(1, std::memory_order_relaxed);
    zmq::pollitem_t in_item{static_cast<void*>(sock), 0, ZMQ_POLLIN, 0};
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline -
                                                                               std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        timeouts_.fetch_add(1, std::memory_order_relaxed);
        slot.reset();  // a late reply dies with the socket
        return Status(Code::kServerBusy, "the shard's owner " + endpoint +
                                             " did not answer in time; outcome unknown, retry with the same "
                                             "client request id");
      }
      if (zmq::poll(&in_item, 1, left) <= 0) continue;
      std::vector<zmq::message_t> frames;
      for (;;) {
        zmq::message_t m;
        if (!sock.recv(m, zmq::recv_flags::dontwait)) break;
        const bool more = m.more();
        frames.push_back(std::move(m));
        if (!more) break;
      }
      if (frames.empty()) continue;
      std::string reply = frames.back().to_string();
      wire::Header h;
      // Replies of earlier requests that timed out cannot arrive here (their
      // socket was closed); anything else with another id is not ours.
      if (!wire::ParseHeader(reply, &h) || h.request_id != id) continue;
      wire::SetRequestId(&reply, 0);
      return reply;
    }
  } catch (const zmq::error_t& e) {
    slot.reset();
    return Status(Code::kServerBusy, "forwarding to " + endpoint + ": " + e.what());
  }
}

}  // namespace sidetable::sidecar
