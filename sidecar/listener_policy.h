// The listener policy (docs/security.md, "Transport"): a sidecar reachable
// from other hosts must authenticate and encrypt (CURVE) and authorise
// (tokens), unless its configuration says `security.insecure: true` in so
// many words; /health and /metrics, which have no authentication and reveal
// table names, stay on loopback unless `security.http_public: true` (or
// `insecure: true`).
//
// Thread safety: pure functions over a configuration.
#pragma once

#include <string>

#include "engine/status.h"

namespace sidetable::sidecar {

struct ServerConfig;

// tcp:// on a loopback address (127.0.0.0/8, ::1, localhost, the `lo`
// interface), ipc:// and inproc://. Anything else (0.0.0.0, *, a real
// address or interface, a host name) is not.
bool IsLoopbackEndpoint(const std::string& endpoint);
// The same for an HTTP "host:port".
bool IsLoopbackHostPort(const std::string& host_port);

// Whether every request must carry a verified token (auth.mode: tokens).
// The one place the policy reads the authorisation settings.
bool TokensRequired(const ServerConfig& config);

// Refuses, naming the key and the address, a non-loopback sidecar.listen
// without CURVE and tokens, or a non-loopback sidecar.http, unless opted out.
Status CheckListenerPolicy(const ServerConfig& config);

// For an ipc:// endpoint: refuses (kUnavailable) a socket path another
// process is listening on. libzmq's bind removes an existing path and binds
// anew, so a second sidecar on the same path took the first one's clients
// without an error, and the first served nobody for good (tcp:// refuses a
// port in use). A path nobody answers on (left by a killed process) is
// free. Other endpoints: OK.
Status CheckIpcEndpointFree(const std::string& endpoint);

// A start-up warning when the embedded Kafka (a mock cluster for
// development) serves a sidecar with a non-loopback listener; "" otherwise.
std::string EmbeddedKafkaWarning(const ServerConfig& config);

}  // namespace sidetable::sidecar
