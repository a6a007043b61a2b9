// The bodies of the sidecar's GET /health and GET /metrics, served by
// common::HttpEndpoint. The server passes its own gauges in, so this file
// needs only the server's public interface.
//
// Thread safety: called on the HTTP thread; reads only thread-safe state
// (engine stats, publisher stats, atomic counters).
#pragma once

#include <cstdint>
#include <string>

#include "sidecar/metrics.h"
#include "sidecar/server.h"

namespace sidetable::sidecar {

struct ServerGauges {
  uint64_t queue_depth = 0;  // requests queued at the workers
  uint64_t in_flight = 0;    // requests accepted and not yet answered
  uint64_t inflight_bytes = 0;        // their admission charge (sidecar/admission.h)
  uint64_t inflight_bytes_peak = 0;
  uint64_t inflight_bytes_limit = 0;
  uint64_t inflight_connections = 0;
  bool shutting_down = false;
  uint64_t parked_reads = 0;  // reads waiting for session tokens (parked_reads.h)
  // CURVE handshakes the ZAP handler answered (zap_handler.h); curve false: off.
  bool curve = false;
  uint64_t curve_allowed = 0, curve_refused = 0;
};

std::string HealthJson(Server& server, const ServerGauges& gauges);
std::string MetricsText(Server& server, const Metrics& metrics, const ServerGauges& gauges);
// Scale-out: the cluster's own metrics and the routing counters
// (sidetable_cluster_forwarded_total, ...).
std::string ClusterMetricsText(const cluster::Cluster& cluster, const ClusterRouting& routing);

}  // namespace sidetable::sidecar
