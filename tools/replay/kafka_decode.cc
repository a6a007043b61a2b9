#include "tools/replay/kafka_decode.h"

namespace sidetable::replay::kafka {
namespace {

// How long the reader spins on a slot the worker is parsing before it
// sleeps: a parse takes microseconds, a sleep and wake-up about as long.
constexpr int kSpins = 2000;

}  // namespace

DecodedBatch::DecodedBatch(size_t n)
    : json_(n), state_(new std::atomic<uint32_t>[n]), events_(n), status_(n) {
  for (size_t i = 0; i < n; i++) state_[i].store(kSelf, std::memory_order_relaxed);
}

void DecodedBatch::SetEvent(size_t i, std::string_view json) {
  json_[i] = json.data() != nullptr ? json : std::string_view("", 0);
  state_[i].store(kPending, std::memory_order_relaxed);  // published by Post()'s lock
}

void DecodedBatch::WaitDone(size_t i) {
  for (int spin = 0; spin < kSpins; spin++) {
    if (state_[i].load(std::memory_order_acquire) == kDone) return;
  }
  uint32_t s;
  while ((s = state_[i].load(std::memory_order_acquire)) != kDone) state_[i].wait(s, std::memory_order_acquire);
}

Status DecodedBatch::Get(size_t i, events::EventDecoder* decoder, events::Event* out) {
  uint32_t expected = kPending;
  if (state_[i].compare_exchange_strong(expected, kSelf, std::memory_order_acq_rel)) {
    return decoder->Decode(json_[i], out);  // the worker has not reached it
  }
  WaitDone(i);
  *out = std::move(events_[i]);
  return std::move(status_[i]);
}

void DecodedBatch::Settle(size_t i) {
  uint32_t expected = kPending;
  if (state_[i].compare_exchange_strong(expected, kSelf, std::memory_order_acq_rel)) return;
  if (expected == kClaimed) WaitDone(i);
}

void DecodedBatch::DecodeAll(events::EventDecoder* decoder) {
  for (size_t i = 0; i < json_.size(); i++) {
    uint32_t expected = kPending;
    if (!state_[i].compare_exchange_strong(expected, kClaimed, std::memory_order_acq_rel)) continue;
    status_[i] = decoder->Decode(json_[i], &events_[i]);
    state_[i].store(kDone, std::memory_order_release);
    state_[i].notify_one();
  }
}

DecodeAhead::DecodeAhead() : thread_([this] { Run(); }) {}

DecodeAhead::~DecodeAhead() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void DecodeAhead::Post(std::shared_ptr<DecodedBatch> batch) {
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(batch));
  }
  cv_.notify_one();
}

void DecodeAhead::Run() {
  events::EventDecoder decoder;
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    std::shared_ptr<DecodedBatch> batch = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    batch->DecodeAll(&decoder);
    batch.reset();
    lock.lock();
  }
}

}  // namespace sidetable::replay::kafka
