// Gateway: the Azure Table REST API (docs/rest.md) served by the project's
// HTTP/1.1 listener (http_server.h: one epoll loop that runs point reads
// and small writes itself, a bounded pool for the rest), on the sidecar's
// engine through the same
// Handler as the ZeroMQ path: each HTTP request becomes the wire::Request
// the ZeroMQ path would build, so authorisation, ServerBusy, the change
// stream and the change log's record of the caller are the same. A write
// is answered once durable (Handle is called without await_lsn).
//
// Lifecycle: Start() binds (port 0 picks a free port) and serves on a
// thread of its own; Stop() (also the destructor) stops accepting, waits
// for the requests being served and returns. The Handler must outlive it.
//
// Thread safety: Start/Stop from one thread; requests are served on the
// listener's loop and up to rest.threads pool threads at once, each
// calling the (thread-safe) Handler.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "engine/status.h"
#include "sidecar/rest/http_server.h"
#include "sidecar/rest/rest_config.h"

namespace sidetable::sidecar {
class Handler;
class Metrics;
namespace auth {
class TenantQuotas;
class TenantMetrics;
}  // namespace auth
}

namespace sidetable::sidecar::rest {

// The server's accounting the gateway shares with the ZeroMQ path (each
// may be null): per-operation counters and latency, and with auth.mode
// tokens the tenant's quotas (over them: 503 ServerBusy, reason
// tenant_quota) and per-tenant counters. All are thread-safe.
struct GatewayHooks {
  Metrics* metrics = nullptr;
  auth::TenantQuotas* quotas = nullptr;
  auth::TenantMetrics* tenant_metrics = nullptr;
  // True while a write may block (fsync durability, scale-out replication,
  // a RocksDB write stall): writes then run on the listener's pool, not
  // on its loop. Absent: writes always run on the pool.
  std::function<bool()> writes_may_wait;
};

class Gateway {
 public:
  // `tokens_required`: auth.mode is tokens, so every request gets a
  // principal (SharedKey: the whole account; SAS: its scope).
  static Result<std::unique_ptr<Gateway>> Start(const RestConfig& config, const Handler* handler,
                                                bool tokens_required, GatewayHooks hooks = {});
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // "host:port" as bound (the port resolved).
  std::string address() const;
  // The listener's connections and requests (inline or on the pool) and
  // its 503s, for /metrics.
  HttpServerStats Stats() const;
  void Stop();

  class Impl;

 private:
  Gateway() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sidetable::sidecar::rest
