// CURVE on the client's socket (docs/security.md, "Transport"), and the key
// files behind client/curve.h.
#include "client/curve.h"

#include <zmq.hpp>

#include "client/client.h"

namespace sidetable::client {

Status Client::SetCurve() {
  const CurveClientKeys& k = options_.curve;
  if (!k.enabled() && k.public_key.empty() && k.secret_key.empty()) return Status::OK();
  for (const std::string* key : {&k.server_public_key, &k.public_key, &k.secret_key}) {
    if (!curve::IsZ85Key(*key)) {
      return Status(Code::kInvalidInput,
                    "CURVE needs the server's public key and this client's key pair, each a Z85 key of 40 characters");
    }
  }
  if (!zmq_has("curve")) return Status(Code::kInvalidInput, "this libzmq was built without CURVE");
  // Z85 text: libzmq takes the 40 characters as they are.
  socket_->set(zmq::sockopt::curve_serverkey, k.server_public_key);
  socket_->set(zmq::sockopt::curve_publickey, k.public_key);
  socket_->set(zmq::sockopt::curve_secretkey, k.secret_key);
  return Status::OK();
}

Result<CurveClientKeys> LoadCurveKeys(const std::string& server_public_key_file, const std::string& secret_key_file) {
  if (server_public_key_file.empty() != secret_key_file.empty()) {
    return Status(Code::kInvalidInput, "CURVE needs both the server's public key file and this client's secret key file");
  }
  CurveClientKeys keys;
  if (server_public_key_file.empty()) return keys;
  Result<std::string> server = curve::LoadPublicKeyFile(server_public_key_file);
  if (!server.ok()) return server.status();
  Result<curve::KeyPair> own = curve::LoadSecretKeyFile(secret_key_file);
  if (!own.ok()) return own.status();
  keys.server_public_key = std::move(server).value();
  keys.public_key = std::move(own->public_key);
  keys.secret_key = std::move(own->secret_key);
  return keys;
}

}  // namespace sidetable::client
