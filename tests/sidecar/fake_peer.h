// FakePeer: another sidecar's frontend as a forwarded request meets it,
// played by the test (sidecar/forwarder.h, docs/scale-out.md "Routing").
//
// A ROUTER bound to 127.0.0.1 on a port the system picks, served by a
// thread of its own. Each request is recorded (the sender's routing id, its
// header, the whole frame) and answered as `respond` decides: a reply frame
// now, none, or one held back until the next request arrives (a late reply,
// sent just before the next one's). The thread polls in 20 ms steps and
// stops when the FakePeer is destroyed.
//
// Thread safety: received(), count() and WaitForCount() from any thread.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "engine/status.h"
#include "protocol/wire.h"

namespace sidetable::sidecar::fake {

struct Received {
  std::string identity;  // the sender's routing id
  wire::Header header;
  std::string frame;     // the whole request frame
  std::string Body() const { return frame.substr(std::min(frame.size(), wire::kHeaderBytes)); }
};

// What the peer does with one request.
struct Answer {
  enum class When { kNow, kNever, kBeforeNextReply };
  When when = When::kNow;
  std::string reply;  // the whole reply frame
};

// A reply frame to `r`: its op and request id, status 200, then `body`.
inline std::string ReplyFrame(const Received& r, std::string_view body) {
  std::string out;
  wire::AppendHeader(&out, wire::Header{wire::kVersion, r.header.op, 200, r.header.request_id});
  out.append(body);
  return out;
}

// An error reply to `r`, as a sidecar encodes a refusal.
inline std::string ErrorFrame(const Received& r, const Status& s) {
  std::string out;
  wire::EncodeError(r.header, s, &out);
  return out;
}

class FakePeer {
 public:
  // `respond` runs on the peer's thread; `index` counts requests from 0.
  using Respond = std::function<Answer(const Received& r, size_t index)>;

  explicit FakePeer(Respond respond) : respond_(std::move(respond)), socket_(ctx_, zmq::socket_type::router) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.bind("tcp://127.0.0.1:*");
    endpoint_ = socket_.get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { Loop(); });
  }
  ~FakePeer() {
    stop_.store(true);
    thread_.join();
  }
  FakePeer(const FakePeer&) = delete;
  FakePeer& operator=(const FakePeer&) = delete;

  const std::string& endpoint() const { return endpoint_; }

  std::vector<Received> received() const {
    std::lock_guard lock(mu_);
    return received_;
  }
  size_t count() const {
    std::lock_guard lock(mu_);
    return received_.size();
  }
  // Waits until at least `n` requests arrived, at most `limit`.
  bool WaitForCount(size_t n, std::chrono::milliseconds limit) const {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, limit, [&] { return received_.size() >= n; });
  }

 private:
  struct Held {
    std::string identity;
    bool delimiter;
    std::string reply;
  };

  void Send(const std::string& identity, bool delimiter, const std::string& reply) {
    // A ROUTER drops a message for a routing id it has no connection for:
    // that is how a reply to a closed DEALER vanishes.
    socket_.send(zmq::buffer(identity), zmq::send_flags::sndmore);
    if (delimiter) socket_.send(zmq::message_t(), zmq::send_flags::sndmore);
    socket_.send(zmq::buffer(reply), zmq::send_flags::none);
  }

  void Loop() {
    std::vector<Held> held;
    while (!stop_.load()) {
      zmq::pollitem_t item{static_cast<void*>(socket_), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(20)) <= 0) continue;
      std::vector<zmq::message_t> frames;
      for (;;) {
        zmq::message_t m;
        if (!socket_.recv(m, zmq::recv_flags::dontwait)) break;
        const bool more = m.more();
        frames.push_back(std::move(m));
        if (!more) break;
      }
      if (frames.size() < 2) continue;
      Received r;
      r.identity = frames.front().to_string();
      const bool delimiter = frames.size() >= 3 && frames[1].size() == 0;
      r.frame = frames.back().to_string();
      if (!wire::ParseHeader(r.frame, &r.header)) {
        ADD_FAILURE() << "FakePeer: a frame without a header";
        continue;
      }
      size_t index;
      {
        std::lock_guard lock(mu_);
        index = received_.size();
        received_.push_back(r);
      }
      cv_.notify_all();
      Answer a = respond_(r, index);
      // Late replies go out first: they must never reach the next caller.
      for (const Held& h : held) Send(h.identity, h.delimiter, h.reply);
      held.clear();
      switch (a.when) {
        case Answer::When::kNow:
          Send(r.identity, delimiter, a.reply);
          break;
        case Answer::When::kBeforeNextReply:
          held.push_back(Held{r.identity, delimiter, std::move(a.reply)});
          break;
        case Answer::When::kNever:
          break;
      }
    }
  }

  Respond respond_;
  zmq::context_t ctx_{1};
  zmq::socket_t socket_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<Received> received_;
};

}  // namespace sidetable::sidecar::fake
