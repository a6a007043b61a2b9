#include "sidecar/parked_reads.h"

#include "common/process.h"

namespace sidetable::sidecar {

ParkedReads::ParkedReads(zmq::context_t* ctx, std::string replies_endpoint,
                         const Watermarks* watermarks, Expire expire)
    : ctx_(ctx), endpoint_(std::move(replies_endpoint)), watermarks_(watermarks),
      expire_(std::move(expire)) {}

ParkedReads::~ParkedReads() {
  std::vector<Job> left;
  Close(&left);  // nothing should be left: the server answers parked reads in Drain()
}

void ParkedReads::Start() {
  timer_ = common::NamedThread("st-parked-reads", [this] { TimerLoop(); });
}

ParkedReads::Outcome ParkedReads::Park(Job* job, std::vector<Requirement> reqs,
                                       Clock::time_point deadline) {
  std::lock_guard lock(mu_);
  if (closed_) return Outcome::kClosed;
  if (watermarks_->CoversAll(reqs)) return Outcome::kCovered;
  const uint64_t id = next_id_++;
  auto d = deadlines_.emplace(deadline, id);
  entries_.emplace(id, Entry{std::move(*job), std::move(reqs), d});
  // Wake the timer only when this deadline comes first.
  if (d == deadlines_.begin()) cv_.notify_one();
  return Outcome::kParked;
}

void ParkedReads::TakeCovered(std::vector<Job>* out) {
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (watermarks_->CoversAll(it->second.reqs)) {
      deadlines_.erase(it->second.deadline);
      out->push_back(std::move(it->second.job));
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

void ParkedReads::Close(std::vector<Job>* out) {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    for (auto& [id, e] : entries_) out->push_back(std::move(e.job));
    entries_.clear();
    deadlines_.clear();
    cv_.notify_all();
  }
  if (timer_.joinable()) timer_.join();
}

void ParkedReads::TimerLoop() {
  zmq::socket_t out(*ctx_, zmq::socket_type::push);
  out.set(zmq::sockopt::sndhwm, 0);  // bounded by admission, never drop a reply
  out.connect(endpoint_);
  std::unique_lock lock(mu_);
  while (!closed_) {
    if (deadlines_.empty()) {
      cv_.wait(lock);
      continue;
    }
    const auto first = deadlines_.begin()->first;
    if (Clock::now() < first) {
      cv_.wait_until(lock, first);
      continue;
    }
    std::vector<Job> expired;
    const auto now = Clock::now();
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      auto e = entries_.find(deadlines_.begin()->second);
      expired.push_back(std::move(e->second.job));
      entries_.erase(e);
      deadlines_.erase(deadlines_.begin());
    }
    lock.unlock();
    for (Job& job : expired) expire_(job, out);
    lock.lock();
  }
  lock.unlock();
  out.set(zmq::sockopt::linger, -1);
  out.close();
}

}  // namespace sidetable::sidecar
