#include "sidecar/listener_policy.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "sidecar/config.h"

namespace sidetable::sidecar {
namespace {

bool IsLoopbackHost(std::string host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host == "localhost" || host == "lo" || host == "::1") return true;
  in_addr v4;
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) return IN6_IS_ADDR_LOOPBACK(&v6);
  return false;  // *, 0.0.0.0, an interface, a host name: reachable, or may be
}

std::string HostOf(const std::string& host_port) {
  const size_t colon = host_port.rfind(':');
  return colon == std::string::npos ? host_port : host_port.substr(0, colon);
}

}  // namespace

bool IsLoopbackEndpoint(const std::string& endpoint) {
  if (endpoint.rfind("ipc://", 0) == 0 || endpoint.rfind("inproc://", 0) == 0) return true;
  if (endpoint.rfind("tcp://", 0) != 0) return false;
  return IsLoopbackHost(HostOf(endpoint.substr(6)));
}

bool IsLoopbackHostPort(const std::string& host_port) { return IsLoopbackHost(HostOf(host_port)); }

bool TokensRequired(const ServerConfig& config) {
  // Every request must carry a valid token (sidecar/auth/auth_config.h).
  return config.auth.tokens;
}

Status CheckListenerPolicy(const ServerConfig& c) {
  auto bad = [](std::string m) { return Status(Code::kInvalidInput, std::move(m)); };
  if (!c.security.insecure) {
    for (const auto& ep : c.listen) {
      if (IsLoopbackEndpoint(ep)) continue;
      std::string missing;
      if (!c.security.curve()) missing = "CURVE (security.curve_secret_key_file)";
      if (!TokensRequired(c)) missing += std::string(missing.empty() ? "" : " and ") + "tokens (auth.mode: tokens)";
      if (missing.empty()) continue;
      return bad("sidecar.listen: '" + ep + "' is not a loopback address, and a listener other hosts can reach "
                 "needs CURVE and tokens; missing: " + missing +
                 ". Listen on 127.0.0.1 or ipc://, or set security.insecure: true (development only)");
    }
  }
  if (!c.http.empty() && !IsLoopbackHostPort(c.http) && !c.security.http_public && !c.security.insecure) {
    return bad("sidecar.http: '" + c.http + "' is not a loopback address, and /health and /metrics have no "
               "authentication and reveal table names. Serve them on 127.0.0.1, or set security.http_public: true "
               "(or security.insecure: true)");
  }
  // The REST gateway authenticates every request (SharedKey or SAS) but
  // speaks plain HTTP: off loopback only when the config says so.
  if (!c.rest.address.empty() && !IsLoopbackHostPort(c.rest.address) && !c.security.insecure) {
    return bad("rest.address: '" + c.rest.address + "' is not a loopback address, and the REST gateway serves "
               "plain HTTP (no TLS). Serve it on 127.0.0.1, or set security.insecure: true (development only)");
  }
  return Status::OK();
}

std::string EmbeddedKafkaWarning(const ServerConfig& c) {
  if (c.kafka.bootstrap != "embedded") return "";
  for (const auto& ep : c.listen) {
    if (IsLoopbackEndpoint(ep)) continue;
    return "kafka.bootstrap: embedded is for development only (librdkafka's mock cluster in this process: no "
           "durability, no authentication, no encryption), and sidecar.listen '" + ep +
           "' is not on loopback. For anything other hosts use, run a real Kafka cluster (kafka.bootstrap) with "
           "SASL/TLS settings under kafka.properties (configs/sidetable.prod.yaml)";
  }
  return "";
}

Status CheckIpcEndpointFree(const std::string& endpoint) {
  constexpr std::string_view kIpc = "ipc://";
  if (!endpoint.starts_with(kIpc)) return Status::OK();
  const std::string path = endpoint.substr(kIpc.size());
  sockaddr_un addr{};
  // Abstract names ("@...") are refused by the kernel when taken; a path too
  // long for sun_path fails in bind with its own message.
  if (path.empty() || path[0] == '@' || path.size() >= sizeof(addr.sun_path)) return Status::OK();
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::OK();
  const bool answered = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
  ::close(fd);
  if (!answered) return Status::OK();
  return Status(Code::kUnavailable,
                "cannot bind " + endpoint +
                    ": another process is listening on that socket (a second sidecar "
                    "with the same sidecar.listen?); binding would take its clients away");
}

}  // namespace sidetable::sidecar
