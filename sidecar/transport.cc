// CURVE on the sidecar's ROUTER socket (docs/security.md, "Transport"):
// the server key pair from security.curve_secret_key_file, client keys
// checked by the ZAP handler against security.curve_clients_file. Set before
// the first bind: every listener of the socket then requires CURVE.
#include "sidecar/server_impl.h"

namespace sidetable::sidecar {

Status Server::Impl::SecureRouter() {
  const SecurityConfig& s = config_.security;
  if (!s.curve()) return Status::OK();
  if (!zmq_has("curve")) {
    return Status(Code::kUnavailable, "security.curve_secret_key_file: this libzmq was built without CURVE");
  }
  auto zap = ZapHandler::Start(&ctx_, s.clients, s.curve_clients_file);
  if (!zap.ok()) return zap.status();
  zap_ = std::move(zap).value();
  try {
    // A ZAP domain makes libzmq ask the handler at every handshake.
    router_.set(zmq::sockopt::zap_domain, "sidetable");
    router_.set(zmq::sockopt::curve_server, true);
    router_.set(zmq::sockopt::curve_secretkey, s.server_keys.secret_key);
  } catch (const zmq::error_t& e) {
    return Status(Code::kInvalidInput, std::string("security.curve_secret_key_file: ") + e.what());
  }
  log_->info("CURVE on every listener: server public key {}; {} client keys allowed ({})", s.server_keys.public_key,
             s.clients.size(), s.curve_clients_file);
  if (s.clients.empty()) log_->warn("security.curve_clients_file {} allows no key: every client is refused",
                                    s.curve_clients_file);
  return Status::OK();
}

}  // namespace sidetable::sidecar
