// TenantMetrics: per-tenant counters for /metrics, labelled with the
// tenant of each request's verified token (auth.mode: tokens):
//   sidetable_tenant_requests_total{tenant}
//   sidetable_tenant_errors_total{tenant,code}     error replies, 503s included
//   sidetable_tenant_busy_total{tenant}            ServerBusy answers (any reason)
//   sidetable_tenant_bytes_total{tenant,direction} request and reply bytes
//   sidetable_tenant_entities_total{tenant}        entities written or returned
// Tenant labels come from signed tokens, so their number is the issuer's
// choice; past kMaxTenants distinct labels the rest count under "_other",
// keeping /metrics bounded whatever tokens are issued.
//
// Thread safety: every method from any thread (one short critical section).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "engine/status.h"

namespace sidetable::sidecar::auth {

class TenantMetrics {
 public:
  static constexpr size_t kMaxTenants = 1000;

  void Record(const std::string& tenant, Code code, uint64_t bytes_in, uint64_t bytes_out, uint64_t entities);
  // Appends the counters in the Prometheus text format.
  void Render(std::string* out) const;

  struct Counters {
    uint64_t requests = 0, busy = 0, bytes_in = 0, bytes_out = 0, entities = 0;
    std::map<Code, uint64_t> errors;
  };
  Counters Get(const std::string& tenant) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, Counters> tenants_;
};

}  // namespace sidetable::sidecar::auth
