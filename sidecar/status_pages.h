// The bodies of the sidecar's GET /health and GET /metrics, served by
// common::HttpEndpoint. The server passes its own gauges in, so this file
// needs only the server's public interface.
//
// Thread safety: called on the HTTP thread; reads only thread-safe state
// (engine stats, publisher stats, atomic counters).
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "sidecar/cluster/cluster.h"
#include "sidecar/metrics.h"
#include "sidecar/query_prefetch.h"
#include "sidecar/rest/http_server.h"
#include "sidecar/server.h"

namespace sidetable::sidecar {

struct ServerGauges {
  uint64_t queue_depth = 0;  // requests queued at the workers
  uint64_t in_flight = 0;    // requests accepted and not yet answered
  uint64_t inflight_bytes = 0;  // their admission charge, and large replies' (sidecar/admission.h)
  uint64_t inflight_reply_bytes = 0;  // of which: large replies libzmq holds, not yet sent
  uint64_t inflight_bytes_peak = 0;
  uint64_t inflight_bytes_limit = 0;
  uint64_t inflight_connections = 0;
  // The ZeroMQ listener's connections (connection_limit.h): open now, the
  // bound (sidecar.max_connections as fitted), closed for being past it.
  uint64_t connections_open = 0, connections_limit = 0, connections_refused = 0;
  bool shutting_down = false;
  uint64_t parked_reads = 0;  // reads waiting for session tokens (parked_reads.h)
  // CURVE handshakes the ZAP handler answered (zap_handler.h); curve false: off.
  bool curve = false;
  uint64_t curve_allowed = 0, curve_refused = 0;
  // The REST listener's counters; absent: the gateway is off.
  std::optional<rest::HttpServerStats> rest;
  // The query prefetch's counters (query_prefetch.h); absent: it is off.
  std::optional<QueryPrefetchStats> prefetch;
  // Scale-out (absent: off): why the member cannot serve as it should
  // (Cluster::KafkaProblem, Cluster::MemberIdProblem; "" = fine).
  struct ClusterProblems {
    std::string kafka, member_id;
  };
  std::optional<ClusterProblems> cluster;
};

// `cluster` (null outside scale-out, or before it started): its problems
// (held shards, another service's claims) make the status "degraded".
std::string HealthJson(Server& server, const ServerGauges& gauges,
                       const cluster::Cluster* cluster = nullptr);

// GET /ready: 503 while stopping; in a scale-out service, 503 until every
// shard has had a route at once (served here or by a known owner) since the
// start, so a new member takes traffic only once it can answer it; 200
// afterwards (a later rebalance is answered per request: a short wait or
// ServerBusy for the shards moving, docs/scale-out.md). `routed_once` is
// the sticky flag the caller keeps. `routes` is null without scale-out.
// `kafka_problem` (Cluster::KafkaProblem, "" = none): a member not ready
// because Kafka does not answer it says so instead of "joining".
std::pair<int, std::string> ReadyJson(bool stopping, const std::vector<cluster::Route>* routes,
                                      std::atomic<bool>* routed_once,
                                      const std::string& kafka_problem = {});
std::string MetricsText(Server& server, const Metrics& metrics, const ServerGauges& gauges);
// Scale-out: the cluster's own metrics and the routing counters
// (sidetable_cluster_forwarded_total, ...).
std::string ClusterMetricsText(const cluster::Cluster& cluster, const ClusterRouting& routing);

}  // namespace sidetable::sidecar
