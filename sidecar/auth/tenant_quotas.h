// TenantQuotas: per-tenant admission (auth.quotas), the tenant being the
// label of the request's verified token. Beside the per-connection bounds
// of sidecar/admission.h and in their style: the frontend asks before
// queueing, a refused request is answered ServerBusy at once (reason
// "tenant_quota") and only the tenant over its quota is refused.
//
// Three bounds per tenant, each optional (0 = none):
//   requests_per_second, bytes_per_second  token buckets holding one
//       second's worth, refilled continuously; a request is admitted when
//       its bucket is not empty (so a request larger than the byte rate is
//       still admitted, and drives the bucket negative: the tenant then
//       waits for it to refill);
//   max_inflight  requests admitted and not yet answered.
// The state of tenants with nothing in flight and full buckets is dropped,
// so the map is bounded by what is in flight and recently active.
//
// Thread safety: TryAdmit() on the frontend thread and the REST gateway's
// threads (it locks), Release() on any
// thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "sidecar/auth/auth_config.h"

namespace sidetable::sidecar::auth {

class TenantQuotas {
 public:
  using Clock = std::chrono::steady_clock;
  explicit TenantQuotas(const AuthConfig& config) : config_(config) {}

  // Charges one request of `bytes` to `tenant` and returns true, or returns
  // false and charges nothing.
  bool TryAdmit(const std::string& tenant, uint64_t bytes, Clock::time_point now);
  // Gives back the in-flight slot TryAdmit() took.
  void Release(const std::string& tenant);

 private:
  struct State {
    double requests = 0, bytes = 0;  // tokens in the buckets
    uint64_t inflight = 0;
    Clock::time_point refilled{};
    bool fresh = true;
  };
  const AuthConfig& config_;
  std::mutex mu_;
  std::unordered_map<std::string, State> tenants_;
  size_t admits_since_sweep_ = 0;
};

}  // namespace sidetable::sidecar::auth
