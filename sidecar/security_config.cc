#include "sidecar/security_config.h"

namespace sidetable::sidecar {

Status LoadSecurityKeys(SecurityConfig* c) {
  auto bad = [](const std::string& key, const std::string& m) { return Status(Code::kInvalidInput, key + ": " + m); };
  if (c->curve_secret_key_file.empty()) {
    if (!c->curve_clients_file.empty()) {
      return bad("security.curve_clients_file", "needs security.curve_secret_key_file (the sidecar's key pair)");
    }
    return Status::OK();
  }
  if (c->curve_clients_file.empty()) {
    return bad("security.curve_secret_key_file",
               "needs security.curve_clients_file (the client public keys allowed to connect)");
  }
  Result<curve::KeyPair> keys = curve::LoadSecretKeyFile(c->curve_secret_key_file);
  if (!keys.ok()) return bad("security.curve_secret_key_file", keys.status().message());
  Result<std::vector<curve::AllowedKey>> clients = curve::LoadAllowList(c->curve_clients_file);
  if (!clients.ok()) return bad("security.curve_clients_file", clients.status().message());
  c->server_keys = std::move(keys).value();
  c->clients = std::move(clients).value();
  return Status::OK();
}

std::vector<std::string> ClusterCurveWarnings(const SecurityConfig& c) {
  std::vector<std::string> out;
  if (!c.curve()) return out;
  for (const auto& k : c.clients) {
    if (k.public_key == c.server_keys.public_key) return out;
  }
  out.push_back("security.curve_clients_file " + c.curve_clients_file + " does not list this sidecar's own public key " +
                c.server_keys.public_key +
                ": members sharing this key pair cannot forward to it (their handshakes are refused); list the key "
                "unless every member has a key pair of its own on the others' allow-lists");
  return out;
}

}  // namespace sidetable::sidecar
