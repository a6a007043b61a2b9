// HttpServer: the REST gateway's HTTP/1.1 listener. Event-loop threads
// (io_threads; each connection stays on one, given in turn) read the
// connections (epoll, non-blocking sockets) and frame requests with
// HttpRequestReader; a request the caller marks cheap runs right there on
// its loop, the others on a bounded pool of threads; each response leaves
// in one write. Keep-alive, pipelining (answered in
// order: a connection has one request executing at a time), chunked
// bodies and Expect: 100-continue are served.
//
// Why not a thread per connection (cpp-httplib, before): every request
// then cost its thread a poll(), a sleep and a wake-up, and two send()s;
// with the loop, a burst of ready connections is one epoll_wait and a
// point read never leaves the thread that read it (docs/performance.md,
// "The REST gateway").
//
// Bounds: at most max_connections connections (the next one is answered
// 503 and closed); a request's head and body within HttpLimits (431/413,
// then close: the framing is lost); request bytes held across all
// connections, received or framed and not yet answered, plus the unsent
// part of responses the pool handed back to the loop, within
// max_buffered_bytes (a request that would pass it: 503, close);
// a connection idle past idle_timeout_ms, or sending one request for
// longer than request_timeout_ms, is closed. Memory is therefore bounded
// by max_buffered_bytes plus the connections' fixed cost.
//
// Lifecycle: Start() binds (port 0: any free port) and starts the threads;
// Stop() (also the destructor) stops accepting, lets the requests being
// executed finish and send their responses, answers 503 to each request
// that reaches it after the stop began (never executed), closes idle
// connections, and after at most 2 s closes every connection.
//
// Thread safety: Start/Stop from one thread. `handle` runs on the loops
// and on the pool threads at once; `runs_inline` and `error` on the loops
// (at once when io_threads > 1).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/status.h"
#include "sidecar/rest/http.h"

namespace sidetable::sidecar::rest {

struct HttpServerOptions {
  std::string host = "127.0.0.1";
  int port = 0;
  int io_threads = 1;               // event loops; connections are spread over them in turn
  int pool_threads = 32;            // requests executing off the loops at once
  size_t max_connections = 1024;
  uint64_t max_buffered_bytes = 256ull << 20;
  int idle_timeout_ms = 30000;      // between requests on a keep-alive connection
  int request_timeout_ms = 30000;   // from a request's first byte to its last
  HttpLimits limits;
};

struct HttpServerCallbacks {
  // Fills the response to a request (HEAD: the body is dropped on sending).
  std::function<void(HttpRequest& req, HttpResponse& res)> handle;
  // True: run `handle` on the loop thread (it must not block: no waiting
  // for an fsync, a replica or a stalled write). Absent: every request
  // goes to the pool.
  std::function<bool(const HttpRequest& req)> runs_inline;
  // Fills the response the server itself answers with `status` (framing
  // errors, limits, 503 when over a bound) in the application's error
  // form; `message` says why.
  std::function<void(int status, const std::string& message, HttpResponse& res)> error;
  // Called on the loop thread about every 250 ms, also when idle (the
  // gateway logs the end of a burst of 5xx answers from it). Optional.
  std::function<void()> tick;
};

struct HttpServerStats {
  uint64_t connections_open = 0;
  uint64_t requests_inline = 0;
  uint64_t requests_pooled = 0;
  uint64_t refused_busy =
      0;  // 503s for max_connections / max_buffered_bytes, and closes past max_connections + 64
  uint64_t buffered_bytes = 0;  // requests and unsent responses held, against max_buffered_bytes
};

class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options, HttpServerCallbacks callbacks);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  HttpServerStats Stats() const;
  void Stop();

  class Impl;

 private:
  HttpServer() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sidetable::sidecar::rest
