#include "sidecar/status_pages.h"

#include "common/http_endpoint.h"

namespace sidetable::sidecar {

using common::JsonQuote;

std::string HealthJson(Server& server, const ServerGauges& gauges) {
  EngineStats st = server.engine().Stats();
  StorageHealth storage = server.engine().Storage();
  const bool degraded = storage.state != StorageState::kOk;
  std::string body = std::string("{\"status\":") + (degraded ? "\"degraded\"" : "\"ok\"") +
                     ",\"lsn\":" + std::to_string(st.last_lsn) +
                     ",\"first_lsn\":" + std::to_string(st.first_available_lsn) +
                     ",\"in_flight\":" + std::to_string(gauges.in_flight) +
                     ",\"queue_depth\":" + std::to_string(gauges.queue_depth) + ",\"endpoints\":[";
  for (size_t i = 0; i < server.endpoints().size(); i++) {
    body += (i ? "," : "") + JsonQuote(server.endpoints()[i]);
  }
  body += "]";
  // Why writes are refused, and since when (docs/operations.md#faults).
  body += ",\"storage\":{\"state\":" + JsonQuote(std::string(StorageStateName(storage.state))) +
          ",\"free_bytes\":" + std::to_string(storage.free_bytes) +
          ",\"reserve_held\":" + (storage.reserve_held ? "true" : "false") +
          ",\"write_refusals\":" + std::to_string(storage.write_refusals);
  if (degraded) {
    body += ",\"error\":" + JsonQuote(storage.error) +
            ",\"since\":" + JsonQuote(FormatDateTime(storage.since));
  }
  body += "}";
  if (auto* p = server.publisher()) {
    changestream::PublisherStats ps = p->Stats();
    body += ",\"kafka\":{\"bootstrap\":" + JsonQuote(p->bootstrap()) +
            ",\"published_lsn\":" + std::to_string(ps.published_lsn) +
            ",\"backlog_events\":" + std::to_string(ps.backlog_events) +
            ",\"backlog_full\":" + (ps.backlog_full ? "true" : "false") + "}";
  }
  body += "}";
  return body;
}

std::string MetricsText(Server& server, const Metrics& metrics, const ServerGauges& gauges) {
  Metrics::Gauges g;
  EngineStats st = server.engine().Stats();
  g.last_lsn = st.last_lsn;
  g.first_available_lsn = st.first_available_lsn;
  g.queue_depth = gauges.queue_depth;
  g.in_flight = gauges.in_flight;
  StorageHealth storage = server.engine().Storage();
  g.storage_ok = storage.state == StorageState::kOk;
  g.storage_write_refusals_total = storage.write_refusals;
  g.storage_free_bytes = storage.free_bytes;
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
  }
  return metrics.Render(g);
}

}  // namespace sidetable::sidecar
