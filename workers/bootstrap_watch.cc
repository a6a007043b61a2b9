#include "workers/bootstrap_watch.h"

#include <fstream>

#include "common/process.h"

namespace sidetable::workers {

BootstrapWatch::BootstrapWatch(std::string path, std::string current, std::chrono::milliseconds interval,
                               std::function<void(const std::string&)> on_change)
    : path_(std::move(path)), current_(std::move(current)), interval_(interval), on_change_(std::move(on_change)) {
  thread_ = common::NamedThread("st-bootstrap", [this] { Run(); });
}

BootstrapWatch::~BootstrapWatch() { Stop(); }

void BootstrapWatch::Stop() {
  {
    std::lock_guard l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string BootstrapWatch::ReadAddress(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

void BootstrapWatch::Run() {
  std::unique_lock l(mu_);
  while (!cv_.wait_for(l, interval_, [this] { return stop_; })) {
    // An empty or missing file is a sidecar between stop and start: wait on.
    const std::string now = ReadAddress(path_);
    if (!now.empty() && now != current_) {
      l.unlock();
      on_change_(now);
      return;
    }
  }
}

}  // namespace sidetable::workers
