#include "workers/http_endpoint.h"

#include <httplib.h>

namespace sidetable::workers {

Result<std::unique_ptr<WorkerHttp>> WorkerHttp::Start(const std::string& host_port,
                                                      const WorkerMetrics* metrics,
                                                      std::function<std::string()> health_json) {
  auto colon = host_port.rfind(':');
  if (colon == std::string::npos) {
    return Status(Code::kInvalidInput, "http must be host:port, got '" + host_port + "'");
  }
  std::string host = host_port.substr(0, colon);
  int port = std::atoi(host_port.c_str() + colon + 1);
  std::unique_ptr<WorkerHttp> ep(new WorkerHttp());
  ep->http_ = std::make_unique<httplib::Server>();
  ep->http_->Get("/health", [health = std::move(health_json)](const httplib::Request&, httplib::Response& res) {
    res.set_content(health(), "application/json");
  });
  ep->http_->Get("/metrics", [metrics](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics->Render(), "text/plain; version=0.0.4");
  });
  if (port == 0) {
    port = ep->http_->bind_to_any_port(host);
    if (port < 0) return Status(Code::kUnavailable, "http: cannot bind on " + host);
  } else if (!ep->http_->bind_to_port(host, port)) {
    return Status(Code::kUnavailable, "http: cannot bind on " + host_port);
  }
  ep->port_ = port;
  ep->thread_ = std::thread([raw = ep->http_.get()] { raw->listen_after_bind(); });
  return ep;
}

void WorkerHttp::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

WorkerHttp::~WorkerHttp() { Stop(); }

}  // namespace sidetable::workers
