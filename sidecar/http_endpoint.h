// HttpEndpoint: GET /health (JSON) and GET /metrics (Prometheus text) on a
// loopback address, served by cpp-httplib on its own threads.
#pragma once

#include <memory>
#include <string>
#include <thread>

#include "engine/status.h"
#include "sidecar/server.h"

namespace httplib {
class Server;
}

namespace sidetable::sidecar {

// Gauges of the server core, for /metrics and /health.
uint64_t ServerQueueDepth(const Server::Impl* impl);
uint64_t ServerInFlight(const Server::Impl* impl);

class HttpEndpoint {
 public:
  // host_port: "127.0.0.1:9464"; port 0 picks a free port (see port()).
  static Result<std::unique_ptr<HttpEndpoint>> Start(const std::string& host_port, Server* server,
                                                     Metrics* metrics, const Server::Impl* impl);
  ~HttpEndpoint();
  int port() const { return port_; }
  void Stop();

 private:
  HttpEndpoint() = default;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace sidetable::sidecar
