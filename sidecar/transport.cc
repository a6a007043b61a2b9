// CURVE on the sidecar's ROUTER socket (docs/security.md, "Transport"):
// the server key pair from security.curve_secret_key_file, client keys
// checked by the ZAP handler against security.curve_clients_file. Set before
// the first bind: every listener of the socket then requires CURVE. And the
// bound on its connections (sidecar.max_connections), set up before the
// first bind too, so that every connection is counted.
#include <sys/resource.h>

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

Status Server::Impl::LimitConnections() {
  rlimit rl{};
  const uint64_t soft = ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                            ? static_cast<uint64_t>(rl.rlim_cur)
                            : 0;
  const uint64_t limit = FitConnectionLimit(config_.max_connections, soft);
  if (limit < config_.max_connections) {
    log_->warn(
        "ZeroMQ listener: sidecar.max_connections {} lowered to {}: the process may open {} "
        "descriptors "
        "(RLIMIT_NOFILE) and the listener keeps to a quarter of them; raise the limit (ulimit -Hn, "
        "LimitNOFILE=, --ulimit nofile=) to serve more connections",
        config_.max_connections, limit, soft);
  }
  auto c = ConnectionLimit::Start(&ctx_, &router_, limit);
  if (!c.ok()) return c.status();
  connections_ = std::move(c).value();
  return Status::OK();
}

}  // namespace sidetable::sidecar
