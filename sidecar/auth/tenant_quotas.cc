#include "sidecar/auth/tenant_quotas.h"

#include <algorithm>

namespace sidetable::sidecar::auth {

bool TenantQuotas::TryAdmit(const std::string& tenant, uint64_t bytes, Clock::time_point now) {
  const TenantQuota& q = config_.QuotaFor(tenant);
  std::lock_guard lock(mu_);
  State& s = tenants_[tenant];
  const double rps = static_cast<double>(q.requests_per_second), bps = static_cast<double>(q.bytes_per_second);
  if (s.fresh) {
    s.requests = rps;
    s.bytes = bps;
    s.refilled = now;
    s.fresh = false;
  } else {
    const double seconds = std::chrono::duration<double>(now - s.refilled).count();
    s.requests = std::min(rps, s.requests + seconds * rps);
    s.bytes = std::min(bps, s.bytes + seconds * bps);
    s.refilled = now;
  }
  if ((q.requests_per_second && s.requests < 1) || (q.bytes_per_second && s.bytes <= 0) ||
      (q.max_inflight && s.inflight >= q.max_inflight)) {
    return false;
  }
  if (q.requests_per_second) s.requests -= 1;
  if (q.bytes_per_second) s.bytes -= static_cast<double>(bytes);
  s.inflight++;
  // Now and then forget idle tenants whose buckets are full again: they
  // would start full anyway.
  if (++admits_since_sweep_ >= 4096) {
    admits_since_sweep_ = 0;
    for (auto it = tenants_.begin(); it != tenants_.end();) {
      const TenantQuota& tq = config_.QuotaFor(it->first);
      const double idle = std::chrono::duration<double>(now - it->second.refilled).count();
      if (it->second.inflight == 0 && idle > 1.0 &&
          (tq.requests_per_second == 0 || it->second.requests + idle * tq.requests_per_second >= tq.requests_per_second) &&
          (tq.bytes_per_second == 0 || it->second.bytes + idle * tq.bytes_per_second >= tq.bytes_per_second)) {
        it = tenants_.erase(it);
      } else {
        ++it;
      }
    }
  }
  return true;
}

void TenantQuotas::Release(const std::string& tenant) {
  std::lock_guard lock(mu_);
  auto it = tenants_.find(tenant);
  if (it != tenants_.end() && it->second.inflight > 0) it->second.inflight--;
}

}  // namespace sidetable::sidecar::auth
