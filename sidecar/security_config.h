// SecurityConfig: the `security:` section of the sidecar's configuration
// (docs/security.md, "Transport"): ZeroMQ CURVE on the listeners, the
// allow-list of client keys, and the listener policy's explicit opt-outs.
//
// The key files are read when the configuration is loaded, so that a bad
// file stops the start naming the configuration file and the key; the
// allow-list is read again by the ZAP handler when it changes.
//
// Thread safety: a value type.
#pragma once

#include <string>
#include <vector>

#include "protocol/curve_keys.h"

namespace sidetable::sidecar {

struct SecurityConfig {
  // security.curve_secret_key_file: the sidecar's secret key (Z85, owner-only
  // file; the public key is derived). Set: every listener requires CURVE.
  std::string curve_secret_key_file;
  // security.curve_clients_file: the public keys allowed to connect, one a
  // line. Needed with curve_secret_key_file.
  std::string curve_clients_file;
  // security.insecure: true allows non-loopback listeners without CURVE and
  // tokens (and a non-loopback HTTP endpoint). Development only.
  bool insecure = false;
  // security.http_public: true allows /health and /metrics on a non-loopback
  // address (they reveal table names; they have no authentication).
  bool http_public = false;

  // Read from the files by LoadConfigFile.
  curve::KeyPair server_keys;
  std::vector<curve::AllowedKey> clients;

  bool curve() const { return !curve_secret_key_file.empty(); }
};

// For a sidecar in cluster mode (docs/security.md, "CURVE in a cluster"):
// what start-up should warn about. Members forward to each other as CURVE
// clients with their own key pairs, and each admits only the keys on its
// allow-list. With one key pair shared by a service's sidecars (the simple
// set-up) a sidecar whose own public key is not on its allow-list refuses
// every peer. That is right only when each member has a key pair of its
// own, listed on the others' allow-lists, which one sidecar cannot see:
// hence a warning, not a refusal. Empty without CURVE.
std::vector<std::string> ClusterCurveWarnings(const SecurityConfig& c);

// Reads the key files named in *c into it. Messages name the key
// ("security.curve_secret_key_file: key file ...: ..."); the caller adds
// the configuration file.
Status LoadSecurityKeys(SecurityConfig* c);

}  // namespace sidetable::sidecar
