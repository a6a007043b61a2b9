#include "tools/kafka-mock/broker_ports.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <string>

namespace sidetable::kafka_mock {
namespace {

using BindFn = int (*)(int, const sockaddr*, socklen_t);

std::mutex g_mu;
std::deque<int> g_bound;  // pre-bound sockets not handed out yet, in port order
int g_handed_out = 0;

BindFn RealBind() {
  static const BindFn real = reinterpret_cast<BindFn>(dlsym(RTLD_NEXT, "bind"));
  return real;
}

sockaddr_in Loopback(int port) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  in.sin_port = htons(static_cast<uint16_t>(port));
  return in;
}

bool IsLoopbackAnyPortStream(int fd, const sockaddr* addr, socklen_t len) {
  if (addr == nullptr || len < static_cast<socklen_t>(sizeof(sockaddr_in)) ||
      addr->sa_family != AF_INET) {
    return false;
  }
  sockaddr_in in;
  std::memcpy(&in, addr, sizeof in);
  if (in.sin_port != 0 || in.sin_addr.s_addr != htonl(INADDR_LOOPBACK)) return false;
  int type = 0;
  socklen_t type_len = sizeof type;
  return getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &type_len) == 0 && type == SOCK_STREAM;
}

void CloseAll() {
  for (int fd : g_bound) ::close(fd);
  g_bound.clear();
}

}  // namespace

Status ArmBrokerPorts(int first, int count) {
  std::lock_guard<std::mutex> lock(g_mu);
  CloseAll();
  g_handed_out = 0;
  const BindFn real = RealBind();
  if (real == nullptr) return Status(Code::kInternal, "libc's bind() not found");
  for (int i = 0; i < count; ++i) {
    const int port = first + i;
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
    int on = 1;
    const sockaddr_in in = Loopback(port);
    if (fd < 0 || ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) != 0 ||
        real(fd, reinterpret_cast<const sockaddr*>(&in), sizeof in) != 0) {
      const int err = errno;
      if (fd >= 0) ::close(fd);
      CloseAll();
      return Status(
          Code::kUnavailable,
          "cannot listen on 127.0.0.1:" + std::to_string(port) + " (broker " +
              std::to_string(i + 1) + " of " + std::to_string(count) + "): " + std::strerror(err) +
              (err == EADDRINUSE ? ": another process listens there; choose another --port" : ""));
    }
    g_bound.push_back(fd);
  }
  return Status::OK();
}

int DisarmBrokerPorts() {
  std::lock_guard<std::mutex> lock(g_mu);
  CloseAll();
  return g_handed_out;
}

}  // namespace sidetable::kafka_mock

// Interposes on libc's bind() for this executable (broker_ports.h).
extern "C" int bind(int fd, const sockaddr* addr, socklen_t len) noexcept {
  using namespace sidetable::kafka_mock;
  const BindFn real = RealBind();
  if (real == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  std::unique_lock<std::mutex> lock(g_mu);
  if (g_bound.empty() || !IsLoopbackAnyPortStream(fd, addr, len)) {
    lock.unlock();
    return real(fd, addr, len);
  }
  const int ours = g_bound.front();
  // The caller's descriptor now names our bound socket (the caller's
  // unbound one is closed by dup3); it listens on it as on its own.
  if (::dup3(ours, fd, O_CLOEXEC) < 0) return -1;
  ::close(ours);
  g_bound.pop_front();
  ++g_handed_out;
  return 0;
}
