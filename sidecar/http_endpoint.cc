#include "sidecar/http_endpoint.h"

#include <httplib.h>

namespace sidetable::sidecar {
namespace {

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

Result<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(const std::string& host_port,
                                                          Server* server, Metrics* metrics,
                                                          const Server::Impl* impl) {
  auto colon = host_port.rfind(':');
  if (colon == std::string::npos) {
    return Status(Code::kInvalidInput, "sidecar.http must be host:port, got '" + host_port + "'");
  }
  std::string host = host_port.substr(0, colon);
  int port = std::atoi(host_port.c_str() + colon + 1);
  std::unique_ptr<HttpEndpoint> ep(new HttpEndpoint());
  ep->http_ = std::make_unique<httplib::Server>();
  ep->http_->Get("/health", [server, impl](const httplib::Request&, httplib::Response& res) {
    EngineStats st = server->engine().Stats();
    std::string body = "{\"status\":\"ok\",\"lsn\":" + std::to_string(st.last_lsn) +
                       ",\"first_lsn\":" + std::to_string(st.first_available_lsn) +
                       ",\"in_flight\":" + std::to_string(ServerInFlight(impl)) +
                       ",\"queue_depth\":" + std::to_string(ServerQueueDepth(impl)) +
                       ",\"endpoints\":[";
    for (size_t i = 0; i < server->endpoints().size(); i++) {
      body += (i ? "," : "") + JsonString(server->endpoints()[i]);
    }
    body += "]";
    if (auto* p = server->publisher()) {
      changestream::PublisherStats ps = p->Stats();
      body += ",\"kafka\":{\"bootstrap\":" + JsonString(p->bootstrap()) +
              ",\"published_lsn\":" + std::to_string(ps.published_lsn) +
              ",\"backlog_events\":" + std::to_string(ps.backlog_events) +
              ",\"backlog_full\":" + (ps.backlog_full ? "true" : "false") + "}";
    }
    body += "}";
    res.set_content(body, "application/json");
  });
  ep->http_->Get("/metrics", [server, metrics, impl](const httplib::Request&, httplib::Response& res) {
    Metrics::Gauges g;
    EngineStats st = server->engine().Stats();
    g.last_lsn = st.last_lsn;
    g.first_available_lsn = st.first_available_lsn;
    g.queue_depth = ServerQueueDepth(impl);
    g.in_flight = ServerInFlight(impl);
    if (auto* p = server->publisher()) {
      changestream::PublisherStats ps = p->Stats();
      g.publishing = true;
      g.published_lsn = ps.published_lsn;
      g.backlog_events = ps.backlog_events;
      g.backlog_bytes = ps.backlog_bytes;
      g.published_events_total = ps.events_total;
      g.published_bytes_total = ps.bytes_total;
      g.delivery_errors_total = ps.delivery_errors;
      g.backlog_full = ps.backlog_full;
    }
    res.set_content(metrics->Render(g), "text/plain; version=0.0.4");
  });
  if (port == 0) {
    port = ep->http_->bind_to_any_port(host);
    if (port < 0) return Status(Code::kUnavailable, "cannot bind HTTP on " + host);
  } else if (!ep->http_->bind_to_port(host, port)) {
    return Status(Code::kUnavailable, "cannot bind HTTP on " + host_port);
  }
  ep->port_ = port;
  ep->thread_ = std::thread([raw = ep->http_.get()] { raw->listen_after_bind(); });
  return ep;
}

void HttpEndpoint::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

HttpEndpoint::~HttpEndpoint() { Stop(); }

}  // namespace sidetable::sidecar
