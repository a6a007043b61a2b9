#include "common/http_endpoint.h"

#include <httplib.h>

#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <system_error>
#include <thread>

#include "common/process.h"

namespace sidetable::common {

Status CheckHostPort(const std::string& host_port, const std::string& setting) {
  const size_t colon = host_port.rfind(':');
  const std::string port = colon == std::string::npos ? "" : host_port.substr(colon + 1);
  if (colon == 0 || port.empty() || port.size() > 5 ||
      !std::all_of(port.begin(), port.end(), [](unsigned char ch) { return std::isdigit(ch); }) ||
      std::stoi(port) > 65535) {
    return Status(Code::kInvalidInput,
                  setting +
                      " must be host:port with a port of 0..65535 (0 picks a free one), got '" +
                      host_port + "'");
  }
  return Status::OK();
}

namespace {

// cpp-httplib gives each connection a pool thread until the connection
// closes: its defaults (8 threads, keep-alive and a request's headers waited
// for 5 s each) let 8 idle connections, or 8 Prometheus scrapers keeping
// theirs alive, hold every thread, and /health and /ready went unanswered
// for 4-5 s (session 41): a probe's 1 s time-out failed on a healthy
// process. Now every answer closes its connection, a connection that sends
// no complete request within a second is dropped, and more threads wait.
constexpr size_t kHttpThreads = 32;
constexpr time_t kHttpReadTimeoutSeconds = 1;

// The pool is started here, on the caller's thread, so that threads the
// process cannot get (ulimit -v, ulimit -u, a container's limits) are a
// start-up error rather than an exception on the endpoint's own thread,
// which nothing catches there (found from outside in session 43: the
// sidecar said it was listening, then aborted).
Status KeepConnectionsFromStarvingProbes(httplib::Server& http, const std::string& setting) {
  // Until httplib takes it: a pool never taken (the bind failed) is shut
  // down, which joins its threads (destroying it with them running would
  // terminate the process).
  struct Held {
    std::unique_ptr<httplib::ThreadPool> pool;
    ~Held() {
      if (pool) pool->shutdown();
    }
  };
  auto pool = std::make_shared<Held>();
  try {
    pool->pool = std::make_unique<httplib::ThreadPool>(kHttpThreads);
  } catch (const std::system_error& e) {
    return Status(Code::kUnavailable,
                  setting + ": cannot start the HTTP endpoint's " + std::to_string(kHttpThreads) +
                      " threads (" + e.what() +
                      "): check ulimit -u and ulimit -v, or the container's limits");
  }
  // httplib asks for the queue once, when it starts listening, and owns it.
  http.new_task_queue = [pool] { return pool->pool.release(); };
  http.set_keep_alive_max_count(1);
  http.set_read_timeout(kHttpReadTimeoutSeconds, 0);
  http.set_keep_alive_timeout(kHttpReadTimeoutSeconds);
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<HttpEndpoint>> HttpEndpoint::Start(const std::string& host_port, const std::string& setting,
                                                          HttpHandlers handlers) {
  ST_RETURN_IF_ERROR(CheckHostPort(host_port, setting));
  const auto colon = host_port.rfind(':');
  std::string host = host_port.substr(0, colon);
  int port = std::atoi(host_port.c_str() + colon + 1);
  std::unique_ptr<HttpEndpoint> ep(new HttpEndpoint());
  ep->http_ = std::make_unique<httplib::Server>();
  // cpp-httplib's default sets SO_REUSEPORT, with which a second process
  // binds the same port and the two answer /health in turn. SO_REUSEADDR
  // alone still allows a quick restart (TIME_WAIT) but refuses a port in use.
  ep->http_->set_socket_options([](socket_t sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  ST_RETURN_IF_ERROR(KeepConnectionsFromStarvingProbes(*ep->http_, setting));
  ep->http_->Get("/health", [health = std::move(handlers.health_json)](const httplib::Request&,
                                                                        httplib::Response& res) {
    res.set_content(health(), "application/json");
  });
  ep->http_->Get("/metrics", [metrics = std::move(handlers.metrics_text)](const httplib::Request&,
                                                                          httplib::Response& res) {
    res.set_content(metrics(), "text/plain; version=0.0.4");
  });
  if (handlers.ready) {
    ep->http_->Get("/ready", [ready = std::move(handlers.ready)](const httplib::Request&, httplib::Response& res) {
      auto [status, body] = ready();
      res.status = status;
      res.set_content(body, "application/json");
    });
  }
  for (auto& [path, page] : handlers.json_pages) {
    ep->http_->Get(path, [page = std::move(page)](const httplib::Request&, httplib::Response& res) {
      res.set_content(page(), "application/json");
    });
  }
  if (port == 0) {
    port = ep->http_->bind_to_any_port(host);
    if (port < 0) return Status(Code::kUnavailable, setting + ": cannot bind on " + host);
  } else if (!ep->http_->bind_to_port(host, port)) {
    const int err = errno;
    return Status(
        Code::kUnavailable,
        setting + ": cannot bind on " + host_port + " (" + std::strerror(err) +
            // Said for the sidecar and the worker alike: two of either started
            // from one configuration is the usual cause.
            (err == EADDRINUSE ? "; another process already uses this port, perhaps a second "
                                 "sidetable or sidetable-worker started from the same "
                                 "configuration: give each its own"
                               : "") +
            ")");
  }
  ep->port_ = port;
  ep->host_ = host;
  ep->thread_ = NamedThread("st-http", [raw = ep->http_.get()] { raw->listen_after_bind(); });
  // httplib's stop() does nothing until listen_after_bind() has marked the
  // server running. A start-up step failing right after this one (the REST
  // port in use) destroyed the endpoint before that: stop() was lost, the
  // join waited on accept() for good, and the process hung with /health
  // answering "ok" and SIGTERM ignored (session 39). Bounded: the thread
  // sets the mark before anything that can block.
  for (int i = 0; i < 5000 && !ep->http_->is_running(); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return ep;
}

void HttpEndpoint::Stop() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

HttpEndpoint::~HttpEndpoint() { Stop(); }

std::string JsonQuote(const std::string& s) {
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

}  // namespace sidetable::common
