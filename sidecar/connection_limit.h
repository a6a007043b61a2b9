// ConnectionLimit: a bound on the connections of the ZeroMQ listener
// (sidecar.max_connections).
//
// libzmq accepts every TCP connection it is offered and has no option to
// bound them. Each one holds a descriptor and 27-64 KB of libzmq's buffers
// whether or not it ever sends (docs/performance.md, memory per idle
// connection), so before this bound a flood of idle connections grew the
// sidecar's memory without limit and, at the descriptor limit, left RocksDB
// unable to open its next WAL, which RocksDB treats as fatal: writes refused
// until a restart (docs/operations.md, "Floods").
//
// How: a ZeroMQ socket monitor on the ROUTER reports each accepted and each
// closed connection with its descriptor; this class keeps the set of open
// ones and shuts down (shutdown(2), SHUT_RDWR) a connection accepted past
// the bound at once. libzmq then reads the end of the stream and closes the
// connection itself, as when a client goes away: libzmq keeps owning the
// descriptor. Since the event arrives after the fact, the descriptor is first
// checked to still be a socket on the listener that accepted it
// (IsConnectionOf), so one closed and reused meanwhile for anything else
// (a RocksDB file, a Kafka connection) is left alone.
//
// The connections that came first go on being served; the newest sees its
// connection closed, normally before any request is read (a ZeroMQ client
// reconnects with back-off, its ZMQ_RECONNECT_IVL). The event comes after
// libzmq accepted the connection, on this class's thread: when that thread
// is scheduled late, a request sent at once may be answered before the
// close. The bound is on memory and descriptors, not on requests.
//
// Lifecycle: Start() on the thread that owns the ROUTER, before its first
// bind, so that every connection is counted; one thread reads the events.
// Destroy it after the ROUTER is closed and before the context is
// terminated (it closes its own socket).
//
// Thread safety: the counters from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>

#include "engine/status.h"

namespace zmq {
class context_t;
class socket_t;
}  // namespace zmq

namespace sidetable::sidecar {

class ConnectionLimit {
 public:
  // `max_connections` >= 1: the connections kept open at once.
  static Result<std::unique_ptr<ConnectionLimit>> Start(zmq::context_t* ctx, zmq::socket_t* router,
                                                        uint64_t max_connections);
  ~ConnectionLimit();
  ConnectionLimit(const ConnectionLimit&) = delete;
  ConnectionLimit& operator=(const ConnectionLimit&) = delete;

  uint64_t limit() const { return limit_; }
  uint64_t open() const { return open_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  explicit ConnectionLimit(uint64_t limit);
  class Loop;
  const uint64_t limit_;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> open_{0}, refused_{0};
};

// Whether `fd` is a connected socket whose local address is the listener
// `endpoint`'s as libzmq names it in its events ("tcp://127.0.0.1:5555",
// "tcp://[::1]:5555", "tcp://0.0.0.0:5555", "ipc:///path"): the same port
// for tcp, the same path for ipc. Anything else (not a socket, another
// port, a listening socket) is not.
bool IsConnectionOf(int fd, const std::string& endpoint);

// The bound the listener keeps: `configured`, lowered to a quarter of the
// soft limit on open descriptors (RLIMIT_NOFILE; 0 = unknown or unlimited)
// so that the connections, the REST listener's half and RocksDB's files
// fit together. At least 1.
uint64_t FitConnectionLimit(uint64_t configured, uint64_t soft_file_limit);

}  // namespace sidetable::sidecar
