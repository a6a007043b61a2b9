// CURVE key files in the client library (docs/security.md, "Transport"):
// what an application, a worker or a tool needs to connect to a sidecar that
// requires CURVE, and to make key pairs. The file format lives with the wire
// protocol (protocol/curve_keys.h), because the sidecar reads the same
// files; this header is the clients' (and tools') door to it.
//
// Thread safety: stateless functions over values and files.
#pragma once

#include <string>

#include "client/client.h"
#include "protocol/curve_keys.h"

namespace sidetable::client {

// The sidecar's public key file (SERVER.pub) and this client's secret key
// file (PREFIX.key, owner-only; its public key is derived). Both empty: no
// CURVE (an empty CurveClientKeys). One without the other is an error.
Result<CurveClientKeys> LoadCurveKeys(const std::string& server_public_key_file, const std::string& secret_key_file);

namespace curve_keys {
using curve::GenerateKeyPair;
using curve::KeyPair;
using curve::LoadPublicKeyFile;
using curve::LoadSecretKeyFile;
using curve::WriteKeyPair;
}  // namespace curve_keys

}  // namespace sidetable::client
