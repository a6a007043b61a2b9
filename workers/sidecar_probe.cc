#include "workers/sidecar_probe.h"

#include "common/process.h"

namespace sidetable::workers {

Result<std::unique_ptr<SidecarProbe>> SidecarProbe::Start(client::ClientOptions options,
                                                          std::chrono::milliseconds interval) {
  std::unique_ptr<SidecarProbe> p(new SidecarProbe());
  options.max_attempts = 1;  // a probe that retries hides the silence it is for
  options.abandon = &p->abandon_;
  auto c = client::Client::Connect(options);
  if (!c.ok()) return c.status();
  p->client_ = std::move(c).value();
  p->interval_ = interval;
  p->thread_ = common::NamedThread("st-sidecar-probe", [raw = p.get()] { raw->Loop(); });
  return p;
}

SidecarProbe::~SidecarProbe() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  abandon_.store(true);
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

SidecarProbe::State SidecarProbe::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

void SidecarProbe::Loop() {
  std::unique_lock lock(mu_);
  while (!stop_) {
    lock.unlock();
    auto info = client_->Ping();
    lock.lock();
    if (info.ok()) last_lsn_.store(info->last_lsn, std::memory_order_relaxed);
    state_ = {info.ok(), info.ok() ? std::string() : info.status().ToString()};
    cv_.wait_for(lock, interval_, [this] { return stop_; });
  }
}

}  // namespace sidetable::workers
