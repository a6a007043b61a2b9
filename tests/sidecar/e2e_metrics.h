// One value from a real sidecar's /metrics (its --http address), for the
// end-to-end tests. Tests linking this link PkgConfig::HTTPLIB.
#pragma once

#include <httplib.h>

#include <cstdint>
#include <string>

#include "testing/sidecar_process.h"

namespace sidetable::testing {

// UINT64_MAX when /metrics cannot be read or has no such line.
inline constexpr uint64_t kNoMetric = UINT64_MAX;

// `name` is the whole series as printed, labels included:
// `sidetable_query_prefetch_pages_total{outcome="served"}`.
inline uint64_t Metric(const SidecarProcess& server, const std::string& name) {
  const std::string& http = server.http();
  const auto colon = http.rfind(':');
  httplib::Client c(http.substr(0, colon), std::stoi(http.substr(colon + 1)));
  auto page = c.Get("/metrics");
  if (!page || page->status != 200) return kNoMetric;
  const std::string line = "\n" + name + " ";
  const auto at = page->body.find(line);
  if (at == std::string::npos) return kNoMetric;
  return std::stoull(page->body.substr(at + line.size()));
}

}  // namespace sidetable::testing
