#include "sidecar/status_pages.h"

#include "common/http_endpoint.h"
#include "common/prometheus_text.h"

namespace sidetable::sidecar {

using common::JsonQuote;

std::pair<int, std::string> ReadyJson(bool stopping, const std::vector<cluster::Route>* routes,
                                      std::atomic<bool>* routed_once,
                                      const std::string& kafka_problem) {
  if (stopping) return {503, "{\"ready\":false,\"reason\":\"stopping\"}"};
  if (routes != nullptr && !routed_once->load()) {
    size_t unrouted = 0;
    for (const cluster::Route& r : *routes) unrouted += r.kind == cluster::Route::Kind::kUnavailable;
    if (unrouted > 0 || routes->empty()) {
      // Without Kafka no shard can be assigned: waiting will not help.
      const std::string why = kafka_problem.empty()
                                  ? "\"joining\""
                                  : "\"kafka_unreachable\",\"problem\":" + JsonQuote(kafka_problem);
      return {503, "{\"ready\":false,\"reason\":" + why +
                       ",\"unrouted_shards\":" + std::to_string(unrouted) + "}"};
    }
    routed_once->store(true);
  }
  return {200, "{\"ready\":true}"};
}

std::string HealthJson(Server& server, const ServerGauges& gauges,
                       const cluster::Cluster* cluster) {
  EngineStats st = server.engine().Stats();
  changestream::PublisherStats ps;
  if (auto* p = server.publisher()) ps = p->Stats();
  StorageHealth storage = server.engine().Storage();
  // Degraded: the sidecar serves, but writes are refused (storage), the
  // change stream is stuck or full, or (scale-out) Kafka does not answer,
  // the member id is not this process's alone, shards are held or the
  // change topic carries another service's claims.
  std::vector<std::string> cluster_problems;
  if (gauges.cluster) {
    for (const std::string* p : {&gauges.cluster->kafka, &gauges.cluster->member_id}) {
      if (!p->empty()) cluster_problems.push_back(*p);
    }
  }
  if (cluster != nullptr) {
    for (std::string& p : cluster->Stats().problems) cluster_problems.push_back(std::move(p));
  }
  const bool storage_degraded = storage.state != StorageState::kOk;
  const bool degraded =
      storage_degraded ||
      (server.publisher() != nullptr && (ps.blocked_lsn != 0 || ps.backlog_full)) ||
      !cluster_problems.empty();
  const char* status = gauges.shutting_down ? "stopping" : degraded ? "degraded" : "ok";
  std::string body = std::string("{\"status\":\"") + status +
                     "\",\"lsn\":" + std::to_string(st.last_lsn) +
                     ",\"first_lsn\":" + std::to_string(st.first_available_lsn) +
                     ",\"in_flight\":" + std::to_string(gauges.in_flight) +
                     ",\"queue_depth\":" + std::to_string(gauges.queue_depth) +
                     ",\"inflight_bytes\":" + std::to_string(gauges.inflight_bytes) +
                     ",\"inflight_reply_bytes\":" + std::to_string(gauges.inflight_reply_bytes) +
                     ",\"inflight_bytes_peak\":" + std::to_string(gauges.inflight_bytes_peak) +
                     ",\"inflight_bytes_limit\":" + std::to_string(gauges.inflight_bytes_limit) +
                     ",\"inflight_connections\":" + std::to_string(gauges.inflight_connections) +
                     ",\"parked_reads\":" + std::to_string(gauges.parked_reads) +
                     ",\"connections\":{\"open\":" + std::to_string(gauges.connections_open) +
                     ",\"limit\":" + std::to_string(gauges.connections_limit) +
                     ",\"refused\":" + std::to_string(gauges.connections_refused) + "},\"busy\":{";
  for (size_t i = 0; i < kBusyReasons; i++) {
    const auto why = static_cast<BusyReason>(i);
    body += (i ? ",\"" : "\"") + std::string(BusyReasonName(why)) + "\":" +
            std::to_string(server.metrics().busy(why));
  }
  body += "},\"endpoints\":[";
  for (size_t i = 0; i < server.endpoints().size(); i++) {
    body += (i ? "," : "") + JsonQuote(server.endpoints()[i]);
  }
  body += "]";
  // Why writes are refused, and since when (docs/operations.md#faults).
  body += ",\"storage\":{\"state\":" + JsonQuote(std::string(StorageStateName(storage.state))) +
          // null, not 0, when it could not be measured: 0 reads as a full disk.
          ",\"free_bytes\":" + (storage.free_known ? std::to_string(storage.free_bytes) : "null") +
          ",\"reserve_held\":" + (storage.reserve_held ? "true" : "false") +
          ",\"write_refusals\":" + std::to_string(storage.write_refusals) +
          // Not "degraded": the loss happened before this start; the number
          // stays until the next one, for whoever looks after a crash.
          ",\"wal_recovery_dropped_bytes\":" + std::to_string(st.wal_recovery_dropped_bytes);
  if (storage_degraded) {
    body += ",\"error\":" + JsonQuote(storage.error) +
            ",\"since\":" + JsonQuote(FormatDateTime(storage.since));
  }
  body += "}";
  if (auto* p = server.publisher()) {
    body += ",\"kafka\":{\"bootstrap\":" + JsonQuote(p->bootstrap()) +
            ",\"published_lsn\":" + std::to_string(ps.published_lsn) +
            ",\"backlog_events\":" + std::to_string(ps.backlog_events) +
            ",\"backlog_full\":" + (ps.backlog_full ? "true" : "false") +
            ",\"blocked_lsn\":" + std::to_string(ps.blocked_lsn);
    if (ps.blocked_lsn != 0) body += ",\"blocked_reason\":" + JsonQuote(ps.blocked_reason);
    body += "}";
  }
  if (gauges.cluster || cluster != nullptr) {
    // Scale-out: what keeps this member from serving (docs/scale-out.md, "Failure cases").
    body += ",\"cluster\":{";
    if (gauges.cluster) {
      body +=
          "\"kafka_reachable\":" + std::string(gauges.cluster->kafka.empty() ? "true" : "false") +
          ",";
    }
    body += "\"problems\":[";
    for (size_t i = 0; i < cluster_problems.size(); i++)
      body += (i ? "," : "") + JsonQuote(cluster_problems[i]);
    body += "]}";
  }
  body += "}";
  return body;
}

std::string MetricsText(Server& server, const Metrics& metrics, const ServerGauges& gauges) {
  Metrics::Gauges g;
  EngineStats st = server.engine().Stats();
  g.last_lsn = st.last_lsn;
  g.first_available_lsn = st.first_available_lsn;
  g.commits = st.commits;
  g.group_commits = st.group_commits;
  g.wal_syncs = st.wal_syncs;
  g.wal_recovery_dropped_bytes = st.wal_recovery_dropped_bytes;
  g.row_cache_hits = st.row_cache_hits;
  g.row_cache_misses = st.row_cache_misses;
  g.row_cache_bytes = st.row_cache_bytes;
  g.queue_depth = gauges.queue_depth;
  g.in_flight = gauges.in_flight;
  g.inflight_bytes = gauges.inflight_bytes;
  g.inflight_reply_bytes = gauges.inflight_reply_bytes;
  g.inflight_bytes_peak = gauges.inflight_bytes_peak;
  g.inflight_bytes_limit = gauges.inflight_bytes_limit;
  g.inflight_connections = gauges.inflight_connections;
  g.parked_reads = gauges.parked_reads;
  StorageHealth storage = server.engine().Storage();
  g.storage_ok = storage.state == StorageState::kOk;
  g.storage_write_refusals_total = storage.write_refusals;
  g.storage_free_bytes = storage.free_bytes;
  g.storage_free_known = storage.free_known;
  g.writes_stalled = server.engine().WritesMayWait();
  if (auto* p = server.publisher()) {
    changestream::PublisherStats ps = p->Stats();
    g.publishing = true;
    g.published_lsn = ps.published_lsn;
    g.backlog_events = ps.backlog_events;
    g.backlog_bytes = ps.backlog_bytes;
    g.published_events_total = ps.events_total;
    g.published_bytes_total = ps.bytes_total;
    g.delivery_errors_total = ps.delivery_errors;
    g.backlog_full = ps.backlog_full;
    g.blocked_lsn = ps.blocked_lsn;
    g.chunked_events_total = ps.chunked_events_total;
    g.refused_writes_total = ps.refused_writes;
  }
  std::string out = metrics.Render(g);
  server.tenant_metrics().Render(&out);
  if (gauges.curve) {
    prometheus::Header(&out, "sidetable_curve_handshakes_total", "counter", "CURVE handshakes by the allow-list's answer (security.curve_clients_file).");
    out += "sidetable_curve_handshakes_total{result=\"allowed\"} " + std::to_string(gauges.curve_allowed) + "\n";
    out += "sidetable_curve_handshakes_total{result=\"refused\"} " + std::to_string(gauges.curve_refused) + "\n";
  }
  prometheus::Header(&out, "sidetable_connections", "gauge",
                     "Open connections of the ZeroMQ listener.");
  prometheus::Line(&out, "sidetable_connections", "", gauges.connections_open);
  prometheus::Header(
      &out, "sidetable_connections_limit", "gauge",
      "The ZeroMQ listener's bound on open connections (sidecar.max_connections, fitted to the "
      "descriptor limit).");
  prometheus::Line(&out, "sidetable_connections_limit", "", gauges.connections_limit);
  prometheus::Header(
      &out, "sidetable_connections_refused_total", "counter",
      "ZeroMQ connections closed on arrival because sidecar.max_connections were open.");
  prometheus::Line(&out, "sidetable_connections_refused_total", "", gauges.connections_refused);
  if (gauges.rest) {
    prometheus::Header(&out, "sidetable_rest_connections", "gauge", "Open connections of the REST listener.");
    prometheus::Line(&out, "sidetable_rest_connections", "", gauges.rest->connections_open);
    prometheus::Header(&out, "sidetable_rest_requests_total", "counter",
                       "REST requests by where they ran: on the listener's loop (inline) or its pool.");
    prometheus::Line(&out, "sidetable_rest_requests_total", "path=\"inline\"", gauges.rest->requests_inline);
    prometheus::Line(&out, "sidetable_rest_requests_total", "path=\"pool\"", gauges.rest->requests_pooled);
    prometheus::Header(&out, "sidetable_rest_busy_total", "counter",
                       "REST requests and connections refused with 503 ServerBusy by the listener's bounds "
                       "(rest.max_connections, rest.max_buffered_mb).");
    prometheus::Line(&out, "sidetable_rest_busy_total", "", gauges.rest->refused_busy);
    prometheus::Header(&out, "sidetable_rest_buffered_bytes", "gauge",
                       "Bytes of requests and unsent responses the REST listener holds (bounded by "
                       "rest.max_buffered_mb).");
    prometheus::Line(&out, "sidetable_rest_buffered_bytes", "", gauges.rest->buffered_bytes);
  }
  if (gauges.prefetch) {
    const QueryPrefetchStats& p = *gauges.prefetch;
    prometheus::Header(&out, "sidetable_query_prefetch_pages_total", "counter",
                       "Query pages computed ahead of the client's request (query.prefetch_mb), by outcome: "
                       "served, stale (a write came first), unused (not asked for in time, or failed), "
                       "skipped (not computed: the prefetch was full), writing (not computed: writes are going on).");
    prometheus::Line(&out, "sidetable_query_prefetch_pages_total", "outcome=\"served\"", p.served);
    prometheus::Line(&out, "sidetable_query_prefetch_pages_total", "outcome=\"stale\"", p.stale);
    prometheus::Line(&out, "sidetable_query_prefetch_pages_total", "outcome=\"unused\"", p.unused);
    prometheus::Line(&out, "sidetable_query_prefetch_pages_total", "outcome=\"skipped\"", p.skipped);
    prometheus::Line(&out, "sidetable_query_prefetch_pages_total", "outcome=\"writing\"", p.writing);
    prometheus::Header(&out, "sidetable_query_prefetch_held_bytes", "gauge",
                       "Bytes of query pages computed ahead and not yet asked for (at most query.prefetch_mb).");
    prometheus::Line(&out, "sidetable_query_prefetch_held_bytes", "", p.held_bytes);
  }
  return out;
}

std::string ClusterMetricsText(const cluster::Cluster& cluster, const ClusterRouting& routing) {
  std::string out = cluster.RenderMetrics();
  auto counter = [&](const char* name, const char* help, uint64_t v) {
    prometheus::Header(&out, name, "counter", help);
    prometheus::Line(&out, name, "", v);
  };
  counter("sidetable_cluster_forwarded_total", "Requests forwarded to the owner of their shard.",
          routing.forwarded());
  counter("sidetable_cluster_forward_timeouts_total",
          "Forwarded requests whose owner did not answer in time (outcome unknown).", routing.forward_timeouts());
  counter("sidetable_cluster_forward_unreachable_total",
          "Requests not forwarded because their owner could not be reached.", routing.forward_unreachable());
  counter("sidetable_cluster_forward_no_peer_key_total",
          "Requests not forwarded because CURVE is on and their owner publishes no CURVE key.",
          routing.forward_no_peer_key());
  counter("sidetable_cluster_fanout_queries_total", "Queries without a PartitionKey fanned out over the owners.",
          routing.fanouts());
  counter("sidetable_cluster_not_owner_total",
          "Requests that found their shard's owner had moved (re-routed or refused).", routing.not_owner());
  counter("sidetable_cluster_busy_total",
          "Requests answered ServerBusy by routing or replicated acknowledgement.", routing.busy());
  return out;
}

}  // namespace sidetable::sidecar
