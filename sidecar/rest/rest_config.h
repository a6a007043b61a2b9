// RestConfig: the `rest:` section of the sidecar's configuration (the Azure
// Table REST gateway, docs/rest.md). Off unless `address` is set (or the
// --rest flag is given).
//
// Thread safety: a value, read-only once the gateway has started.
#pragma once

#include <cstdint>
#include <optional>
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
  int threads = 32;                       // rest.threads: requests executing off the loops at once
  // rest.io_threads: the listener's event loops. One serves about 30k
  // small requests/s (docs/performance.md); more spread connections over
  // more cores.
  int io_threads = 1;
  // The listener's bounds (http_server.h): over them a request gets 503
  // ServerBusy instead of memory.
  size_t max_connections = 1024;          // rest.max_connections
  uint64_t max_buffered_bytes = 256ull << 20;  // rest.max_buffered_mb: request bytes held, all connections
  int idle_timeout_ms = 30000;            // rest.idle_timeout_ms: a keep-alive connection between requests
  int request_timeout_ms = 30000;         // rest.request_timeout_ms: one request's bytes, first to last
  // rest.dev_account: devstoreaccount1 with its well-known key, on loopback.
  // Unset: on only while auth.mode is off. Its key is public, so with
  // auth.mode tokens it would let anyone on the host past the tokens: then
  // it takes an explicit `true`.
  std::optional<bool> dev_account;
  // The configuration file, when it holds an account's key (`key`, not
  // `key_file`) and group or others may read it: the gateway warns at
  // start-up (an account key reaches every table).
  std::string exposed_keys_file;
};

// Reads the `rest:` section of `root` (absent: the defaults); `path` names
// the file in error messages ("file: rest.accounts[0].key: ..."). An
// account's key is `key` (base64) or `key_file` (a file holding the base64,
// owner-only as auth.keys' files: refused when group or others may access
// it).
Status LoadRestConfig(const std::string& path, const YAML::Node& root, RestConfig* out);

// The accounts in force: the configured ones, plus devstoreaccount1 when
// dev_account is on (unset: when `tokens_required` is false), the listener
// is on loopback and no account has its name.
std::vector<RestAccount> EffectiveAccounts(const RestConfig& config, bool loopback, bool tokens_required);

}  // namespace sidetable::sidecar::rest
