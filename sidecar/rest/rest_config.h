// RestConfig: the `rest:` section of the sidecar's configuration (the Azure
// Table REST gateway, docs/rest.md). Off unless `address` is set (or the
// --rest flag is given).
//
// Thread safety: a value, read-only once the gateway has started.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/status.h"

namespace YAML {
class Node;
}

namespace sidetable::sidecar::rest {

// The development account every Azure tool knows (Azurite's): accepted out
// of the box when the listener is on loopback and the config names no
// account of that name.
inline constexpr const char* kDevAccount = "devstoreaccount1";
inline constexpr const char* kDevAccountKeyBase64 =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

struct RestAccount {
  std::string name;
  std::string key;  // raw bytes (the config holds base64, as Azure shows it)
};

struct CorsRule {
  std::vector<std::string> allowed_origins;  // "*" allows any
  std::vector<std::string> allowed_methods;  // upper case
  std::vector<std::string> allowed_headers;  // lower case; "*" allows any
  std::vector<std::string> exposed_headers;
  int max_age_seconds = 0;
};

struct RestConfig {
  std::string address;                    // rest.address "host:port" ("" = off)
  std::vector<RestAccount> accounts;      // rest.accounts
  std::vector<CorsRule> cors;             // rest.cors
  size_t max_body_bytes = 4 << 20;        // rest.max_body_mb (EGTs are limited to 4 MiB)
  int threads = 32;                       // rest.threads: connections served at once
  bool dev_account = true;                // rest.dev_account: devstoreaccount1 on loopback
};

// Reads the `rest:` section of `root` (absent: the defaults); `path` names
// the file in error messages ("file: rest.accounts[0].key: ...").
Status LoadRestConfig(const std::string& path, const YAML::Node& root, RestConfig* out);

// The accounts in force: the configured ones, plus devstoreaccount1 when
// dev_account is on, the listener is on loopback and no account has its name.
std::vector<RestAccount> EffectiveAccounts(const RestConfig& config, bool loopback);

}  // namespace sidetable::sidecar::rest
