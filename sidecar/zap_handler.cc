#include "sidecar/zap_handler.h"

#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <chrono>
#include <map>
#include <zmq.hpp>

#include "common/log_throttle.h"
#include "common/process.h"

namespace sidetable::sidecar {

// The handler's thread: one REP socket, the allow-list, its file's identity.
class ZapHandler::Loop {
 public:
  Loop(zmq::context_t* ctx, std::vector<curve::AllowedKey> allowed, std::string file)
      : socket_(*ctx, zmq::socket_type::rep), file_(std::move(file)),
        log_(spdlog::default_logger()->clone("zap")) {
    Install(allowed);
    stamp_ = Stamp();
  }

  void Bind() { socket_.bind("inproc://zeromq.zap.01"); }

  void Run(ZapHandler* owner) {
    auto next_check = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    while (!owner->stop_.load(std::memory_order_relaxed)) {
      zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
      if (zmq_poll(&item, 1, 200) < 0 && zmq_errno() == ETERM) break;
      try {
        if (item.revents & ZMQ_POLLIN) Answer(owner);
      } catch (const zmq::error_t& e) {
        if (e.num() == ETERM) break;  // the context is closing
        log_->error("ZAP: {}", e.what());
      }
      if (std::chrono::steady_clock::now() >= next_check) {
        ReloadIfChanged();
        next_check = std::chrono::steady_clock::now() + std::chrono::seconds(1);
      }
      // The end of a burst of refusals is logged once it is a second old,
      // not only with the next burst's first warning.
      if (const uint64_t n = refusal_log_.TakeOverdue(); n != 0) {
        log_->warn("refused {} more handshakes after the last warning (not in {})", n, file_);
      }
    }
    socket_.close();
  }

 private:
  // ZAP request: version, request id, domain, address, routing id,
  // mechanism, credentials (CURVE: the client's 32-byte public key).
  void Answer(ZapHandler* owner) {
    std::vector<zmq::message_t> frames;
    for (;;) {
      zmq::message_t m;
      if (!socket_.recv(m, zmq::recv_flags::dontwait)) break;
      const bool more = m.more();
      frames.push_back(std::move(m));
      if (!more) break;
    }
    if (frames.empty()) return;
    const std::string request_id = frames.size() > 1 ? frames[1].to_string() : "";
    const std::string address = frames.size() > 3 ? frames[3].to_string() : "";
    const std::string mechanism = frames.size() > 5 ? frames[5].to_string() : "";
    std::string key;
    if (frames.size() > 6 && mechanism == "CURVE" && frames[6].size() == curve::kKeyBytes) {
      key = curve::Z85Encode(frames[6].to_string_view());
    }
    auto it = key.empty() ? allowed_.end() : allowed_.find(key);
    const bool ok = frames.size() >= 7 && frames[0].to_string_view() == "1.0" && it != allowed_.end();
    // The user id becomes the connection's User-Id property: the key's label,
    // or the key itself.
    const std::string user = ok ? (it->second.empty() ? key : it->second) : "";
    Reply(request_id, ok ? "200" : "400", ok ? "OK" : "client key not allowed", user);
    if (ok) {
      owner->allowed_.fetch_add(1, std::memory_order_relaxed);
      log_->debug("CURVE client {} ({}) allowed from {}", key, user, address);
      return;
    }
    owner->refused_.fetch_add(1, std::memory_order_relaxed);
    // One warning a second at most: a client retrying must not flood the log.
    if (const uint64_t n = refusal_log_.Record(); n != 0) {
      log_->warn("refused a {} handshake from {}{} ({} refused since the last warning): not in {}",
                 mechanism.empty() ? "malformed" : mechanism, address,
                 key.empty() ? "" : " with client key " + key, n, file_);
    }
  }

  void Reply(const std::string& request_id, const char* code, const char* text, const std::string& user) {
    socket_.send(zmq::str_buffer("1.0"), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(request_id), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(std::string_view(code)), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(std::string_view(text)), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(user), zmq::send_flags::sndmore);
    socket_.send(zmq::message_t(), zmq::send_flags::none);
  }

  void Install(const std::vector<curve::AllowedKey>& keys) {
    allowed_.clear();
    for (const auto& k : keys) allowed_[k.public_key] = k.label;
  }

  std::pair<int64_t, int64_t> Stamp() const {
    struct stat st;
    if (::stat(file_.c_str(), &st) != 0) return {-1, -1};
    return {static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 +
                                                   st.st_mtim.tv_nsec};
  }

  void ReloadIfChanged() {
    const auto stamp = Stamp();
    if (stamp == stamp_) return;
    stamp_ = stamp;
    Result<std::vector<curve::AllowedKey>> keys = curve::LoadAllowList(file_);
    if (!keys.ok()) {
      log_->error("security.curve_clients_file changed but does not read ({}); the previous {} keys stay allowed",
                  keys.status().message(), allowed_.size());
      return;
    }
    Install(*keys);
    log_->info("security.curve_clients_file {} reloaded: {} client keys allowed", file_, allowed_.size());
  }

  zmq::socket_t socket_;
  const std::string file_;
  std::shared_ptr<spdlog::logger> log_;
  std::map<std::string, std::string> allowed_;  // Z85 public key -> label
  std::pair<int64_t, int64_t> stamp_;
  common::LogThrottle refusal_log_;
};

Result<std::unique_ptr<ZapHandler>> ZapHandler::Start(zmq::context_t* ctx, std::vector<curve::AllowedKey> allowed,
                                                      std::string allow_list_file) {
  std::unique_ptr<ZapHandler> h(new ZapHandler());
  h->loop_ = std::make_unique<Loop>(ctx, std::move(allowed), std::move(allow_list_file));
  try {
    h->loop_->Bind();
  } catch (const zmq::error_t& e) {
    return Status(Code::kUnavailable, std::string("cannot bind the ZAP handler: ") + e.what());
  }
  h->thread_ = common::NamedThread("st-zap", [raw = h.get()] { raw->loop_->Run(raw); });
  return h;
}

ZapHandler::~ZapHandler() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

}  // namespace sidetable::sidecar
