// HttpEndpoint: GET /health (JSON) and GET /metrics (Prometheus text) for any
// sidetable process, and GET /ready where the owner says what ready means,
// served by cpp-httplib on a thread of its own.
//
// The owner supplies the two bodies as callbacks, so this part knows nothing
// of the server or the worker it reports on (and nothing includes back).
//
// Thread safety: Start/Stop from one thread. The callbacks run on the HTTP
// thread and must read only thread-safe state. Stop() (also run by the
// destructor) returns once no callback runs any more.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>
#include <thread>

#include "engine/status.h"

namespace httplib {
class Server;
}

namespace sidetable::common {

struct HttpHandlers {
  std::function<std::string()> health_json;  // body of GET /health
  std::function<std::string()> metrics_text;  // body of GET /metrics
  // Further JSON pages, GET <path> (e.g. the sidecar's /cluster).
  std::vector<std::pair<std::string, std::function<std::string()>>> json_pages;
  // GET /ready (optional): the HTTP status (200 or 503) and a JSON body.
  std::function<std::pair<int, std::string>()> ready;
};

// "host:port" with a host and a port of 0..65535 (0: any free port). A
// larger port would wrap around in the socket API and bind another one
// than the logs and the ready file name. `setting` names the key.
Status CheckHostPort(const std::string& host_port, const std::string& setting);

class HttpEndpoint {
 public:
  // host_port: "127.0.0.1:9464"; port 0 picks a free port (see port()).
  // `setting` names the configuration key in error messages ("sidecar.http").
  static Result<std::unique_ptr<HttpEndpoint>> Start(const std::string& host_port, const std::string& setting,
                                                     HttpHandlers handlers);
  ~HttpEndpoint();
  HttpEndpoint(const HttpEndpoint&) = delete;
  HttpEndpoint& operator=(const HttpEndpoint&) = delete;

  int port() const { return port_; }
  // "host:port" as bound (the configured host, the port resolved).
  std::string address() const { return host_ + ":" + std::to_string(port_); }
  void Stop();

 private:
  HttpEndpoint() = default;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
  std::string host_;
};

// A JSON string literal for health bodies: quotes, backslashes and control
// characters escaped (the values are table names, endpoints and addresses).
std::string JsonQuote(const std::string& s);

}  // namespace sidetable::common
