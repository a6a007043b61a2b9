// ZapHandler: ZeroMQ's authentication protocol (ZAP, ZeroMQ RFC 27) for the
// sidecar's CURVE listeners. libzmq asks it, at each handshake, whether a
// client's public key may connect; a key not on the allow-list
// (security.curve_clients_file) is refused there, before any request is
// read. Any mechanism other than CURVE is refused too.
//
// The allow-list is read again when its file changes (size or modification
// time, checked every second); a file that no longer reads keeps the
// previous list in force and is logged.
//
// Lifecycle: Start() binds inproc://zeromq.zap.01 on the server's context
// (before the listeners bind, so no handshake goes unchecked) and runs one
// thread; the destructor stops it and closes its socket (before the context
// is terminated).
//
// Thread safety: the counters from any thread; the rest from its owner.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/status.h"
#include "protocol/curve_keys.h"

namespace zmq {
class context_t;
}

namespace sidetable::sidecar {

class ZapHandler {
 public:
  static Result<std::unique_ptr<ZapHandler>> Start(zmq::context_t* ctx, std::vector<curve::AllowedKey> allowed,
                                                   std::string allow_list_file);
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  uint64_t allowed() const { return allowed_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

 private:
  ZapHandler() = default;
  class Loop;
  std::unique_ptr<Loop> loop_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> allowed_{0}, refused_{0};
};

}  // namespace sidetable::sidecar
