// WorkerHttp: GET /health (JSON) and GET /metrics (Prometheus text) on a
// loopback address, served by cpp-httplib on its own thread.
//
// Thread safety: Start/Stop from one thread; the handlers read only
// thread-safe state (the metrics, and the `health` callback's own).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "engine/status.h"
#include "workers/metrics.h"

namespace httplib {
class Server;
}

namespace sidetable::workers {

class WorkerHttp {
 public:
  // host_port "127.0.0.1:9465"; port 0 picks a free port (see port()).
  static Result<std::unique_ptr<WorkerHttp>> Start(const std::string& host_port, const WorkerMetrics* metrics,
                                                   std::function<std::string()> health_json);
  ~WorkerHttp();
  int port() const { return port_; }
  void Stop();

 private:
  WorkerHttp() = default;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace sidetable::workers
