#include "sidecar/connection_limit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <unordered_set>
#include <zmq.hpp>

#include "common/log_throttle.h"
#include "common/process.h"

namespace sidetable::sidecar {

namespace {

constexpr char kMonitorEndpoint[] = "inproc://sidetable.connection-monitor";

// The port of "tcp://host:port" (host may be "[v6]"); -1 if there is none.
int PortOf(const std::string& endpoint) {
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon + 1 >= endpoint.size()) return -1;
  int port = 0;
  for (size_t i = colon + 1; i < endpoint.size(); i++) {
    const char c = endpoint[i];
    if (c < '0' || c > '9' || port > 65535) return -1;
    port = port * 10 + (c - '0');
  }
  return port <= 65535 ? port : -1;
}

}  // namespace

bool IsConnectionOf(int fd, const std::string& endpoint) {
  sockaddr_storage local{};
  socklen_t len = sizeof(local);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0)
    return false;  // not a socket
  sockaddr_storage peer{};
  socklen_t peer_len = sizeof(peer);
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0)
    return false;  // not connected
  if (endpoint.rfind("tcp://", 0) == 0) {
    const int port = PortOf(endpoint);
    if (port < 0) return false;
    if (local.ss_family == AF_INET)
      return ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port) == port;
    if (local.ss_family == AF_INET6)
      return ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port) == port;
    return false;
  }
  if (endpoint.rfind("ipc://", 0) == 0) {
    if (local.ss_family != AF_UNIX) return false;
    const std::string path = endpoint.substr(6);
    const auto* un = reinterpret_cast<const sockaddr_un*>(&local);
    const size_t path_bytes =
        len > offsetof(sockaddr_un, sun_path) ? len - offsetof(sockaddr_un, sun_path) : 0;
    if (!path.empty() && path[0] == '@') {  // abstract: a leading NUL in the kernel's name
      return path_bytes >= path.size() && un->sun_path[0] == '\0' &&
             std::memcmp(un->sun_path + 1, path.data() + 1, path.size() - 1) == 0;
    }
    return std::strncmp(un->sun_path, path.c_str(), sizeof(un->sun_path)) == 0;
  }
  return false;
}

uint64_t FitConnectionLimit(uint64_t configured, uint64_t soft_file_limit) {
  if (configured < 1) configured = 1;
  if (soft_file_limit == 0) return configured;
  const uint64_t quarter = soft_file_limit / 4;
  return quarter >= 1 && quarter < configured ? quarter : configured;
}

// The monitor's reader: one PAIR socket and the set of open connections.
class ConnectionLimit::Loop {
 public:
  explicit Loop(zmq::context_t* ctx) : socket_(*ctx, zmq::socket_type::pair) {
    // libzmq drops an event it cannot queue; a lost "disconnected" would
    // count a connection open for good. 0 leaves the pipe unbounded on our
    // side: an event is ~40 bytes and this thread does little with each.
    socket_.set(zmq::sockopt::rcvhwm, 0);
  }

  void Connect() { socket_.connect(kMonitorEndpoint); }

  void Run(ConnectionLimit* owner) {
    while (!owner->stop_.load(std::memory_order_relaxed)) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq_poll(&item, 1, 100) < 0 && zmq_errno() == ETERM) break;
      // Drain whatever is queued: a flood's events arrive in bursts.
      for (int i = 0; i < 1024 && (item.revents & ZMQ_POLLIN); i++) {
        if (!ReadOne(owner)) break;
      }
      // The end of a burst is logged once it is a second old, not only with
      // the next burst's first warning.
      if (const uint64_t n = log_.TakeOverdue(); n != 0) {
        spdlog::warn(
            "ZeroMQ listener at sidecar.max_connections ({}): closed {} more new connections after "
            "the last warning",
            owner->limit_, n);
      }
    }
    socket_.close();
  }

 private:
  // One event: a frame of uint16 event + uint32 value (the descriptor), then
  // the endpoint. False when none is queued.
  bool ReadOne(ConnectionLimit* owner) {
    zmq::message_t head, where;
    try {
      if (!socket_.recv(head, zmq::recv_flags::dontwait)) return false;
      if (!head.more() || !socket_.recv(where)) return true;  // not the format libzmq documents
    } catch (const zmq::error_t&) {
      return false;
    }
    if (head.size() < 6) return true;
    uint16_t event = 0;
    uint32_t value = 0;
    std::memcpy(&event, head.data(), 2);
    std::memcpy(&value, static_cast<const char*>(head.data()) + 2, 4);
    const int fd = static_cast<int>(value);
    if (event == ZMQ_EVENT_DISCONNECTED) {
      if (fds_.erase(fd) != 0) owner->open_.store(fds_.size(), std::memory_order_relaxed);
      return true;
    }
    if (event != ZMQ_EVENT_ACCEPTED) return true;
    // A descriptor already in the set: its "disconnected" went missing and
    // it was reused, so it is the same one connection.
    if (fds_.count(fd) != 0 || fds_.size() < owner->limit_) {
      fds_.insert(fd);
      owner->open_.store(fds_.size(), std::memory_order_relaxed);
      return true;
    }
    owner->refused_.fetch_add(1, std::memory_order_relaxed);
    const std::string endpoint(static_cast<const char*>(where.data()), where.size());
    if (IsConnectionOf(fd, endpoint)) ::shutdown(fd, SHUT_RDWR);
    if (const uint64_t n = log_.Record()) {
      spdlog::warn(
          "ZeroMQ listener at sidecar.max_connections ({} open): closing new connections ({} since "
          "the last "
          "warning)",
          owner->limit_, n);
    }
    return true;
  }

  zmq::socket_t socket_;
  std::unordered_set<int> fds_;  // the open connections' descriptors
  common::LogThrottle log_;
};

Result<std::unique_ptr<ConnectionLimit>> ConnectionLimit::Start(zmq::context_t* ctx,
                                                                zmq::socket_t* router,
                                                                uint64_t max_connections) {
  std::unique_ptr<ConnectionLimit> c(
      new ConnectionLimit(max_connections < 1 ? 1 : max_connections));
  c->loop_ = std::make_unique<Loop>(ctx);
  if (zmq_socket_monitor(router->handle(), kMonitorEndpoint,
                         ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0) {
    return Status(Code::kUnavailable,
                  std::string("cannot monitor the ZeroMQ listener's connections: ") +
                      zmq_strerror(zmq_errno()));
  }
  try {
    // Connected before the first bind: libzmq drops events nobody reads yet.
    c->loop_->Connect();
  } catch (const zmq::error_t& e) {
    zmq_socket_monitor(router->handle(), nullptr, 0);
    return Status(Code::kUnavailable,
                  std::string("cannot read the connection monitor: ") + e.what());
  }
  c->thread_ = common::NamedThread("st-connlimit", [raw = c.get()] { raw->loop_->Run(raw); });
  return c;
}

ConnectionLimit::ConnectionLimit(uint64_t limit) : limit_(limit) {}

ConnectionLimit::~ConnectionLimit() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

}  // namespace sidetable::sidecar
