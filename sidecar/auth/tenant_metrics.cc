#include "sidecar/auth/tenant_metrics.h"

#include "common/prometheus_text.h"

namespace sidetable::sidecar::auth {

void TenantMetrics::Record(const std::string& tenant, Code code, uint64_t bytes_in, uint64_t bytes_out,
                           uint64_t entities) {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(tenant);
  if (it == tenants_.end()) {
    it = tenants_.emplace(tenants_.size() < kMaxTenants ? tenant : std::string("_other"), Counters{}).first;
  }
  Counters& c = it->second;
  c.requests++;
  c.bytes_in += bytes_in;
  c.bytes_out += bytes_out;
  c.entities += entities;
  if (code != Code::kOk) c.errors[code]++;
  if (code == Code::kServerBusy) c.busy++;
}

TenantMetrics::Counters TenantMetrics::Get(const std::string& tenant) const {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? Counters{} : it->second;
}

void TenantMetrics::Render(std::string* out) const {
  using prometheus::Escape;
  using prometheus::Header;
  using prometheus::Line;
  std::lock_guard lock(mu_);
  if (tenants_.empty()) return;
  auto label = [](const std::string& t) { return "tenant=\"" + Escape(t) + "\""; };
  Header(out, "sidetable_tenant_requests_total", "counter", "Requests answered, by the tenant of their token.");
  for (const auto& [t, c] : tenants_) Line(out, "sidetable_tenant_requests_total", label(t), c.requests);
  Header(out, "sidetable_tenant_errors_total", "counter", "Error replies, by tenant and Azure error code.");
  for (const auto& [t, c] : tenants_) {
    for (const auto& [code, n] : c.errors) {
      Line(out, "sidetable_tenant_errors_total", label(t) + ",code=\"" + std::string(ErrorCodeName(code)) + "\"", n);
    }
  }
  Header(out, "sidetable_tenant_busy_total", "counter", "ServerBusy (503) answers, by tenant.");
  for (const auto& [t, c] : tenants_) Line(out, "sidetable_tenant_busy_total", label(t), c.busy);
  Header(out, "sidetable_tenant_bytes_total", "counter", "Request (in) and reply (out) bytes, by tenant.");
  for (const auto& [t, c] : tenants_) {
    Line(out, "sidetable_tenant_bytes_total", label(t) + ",direction=\"in\"", c.bytes_in);
    Line(out, "sidetable_tenant_bytes_total", label(t) + ",direction=\"out\"", c.bytes_out);
  }
  Header(out, "sidetable_tenant_entities_total", "counter", "Entities written or returned, by tenant.");
  for (const auto& [t, c] : tenants_) Line(out, "sidetable_tenant_entities_total", label(t), c.entities);
}

}  // namespace sidetable::sidecar::auth
