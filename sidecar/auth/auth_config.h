// The `auth:` section of the sidecar configuration: whether requests must
// carry signed tokens, the keys that sign them, and the per-tenant quotas
// (docs/operations.md, docs/security.md).
//
//   auth:
//     mode: tokens            # off (default): no token is checked
//     keys:                   # at most two, so keys rotate without downtime
//       - {id: k1, file: /etc/sidetable/k1.key}
//     token_cache: 10000      # verified token strings remembered
//     quotas:
//       default: {requests_per_second: 0, bytes_per_second: 0, max_inflight: 0}   # 0 = no bound
//       tenants:
//         batch-jobs: {requests_per_second: 200}   # unset fields: the default's
//
// Strict like the rest of sidecar/config.cc: an unknown key fails start-up
// naming the file and the key.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/status.h"

namespace YAML {
class Node;
}

namespace sidetable::sidecar::auth {

// One tenant's bounds; 0 is unbounded. Rates are token buckets holding one
// second's worth (a burst of up to the rate is admitted at once).
struct TenantQuota {
  uint64_t requests_per_second = 0;
  uint64_t bytes_per_second = 0;  // request bytes on the wire
  uint64_t max_inflight = 0;      // requests admitted and not yet answered
};

struct AuthConfig {
  bool tokens = false;  // mode: tokens
  struct KeyFile {
    std::string id, file;
  };
  std::vector<KeyFile> keys;
  size_t token_cache = 10000;
  TenantQuota default_quota;
  std::map<std::string, TenantQuota> tenant_quotas;

  // The bounds of `tenant`: its override, else the default.
  const TenantQuota& QuotaFor(const std::string& tenant) const {
    auto it = tenant_quotas.find(tenant);
    return it == tenant_quotas.end() ? default_quota : it->second;
  }
  bool has_quotas() const;
};

// Reads the `auth` section of `root` (from file `path`) over *out.
Status LoadAuthConfig(const std::string& path, const YAML::Node& root, AuthConfig* out);
// Combinations: tokens need 1-2 keys with distinct ids; a cache of at least one.
Status ValidateAuthConfig(const AuthConfig& c);

}  // namespace sidetable::sidecar::auth
