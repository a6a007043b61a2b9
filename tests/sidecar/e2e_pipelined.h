// A raw DEALER connection for tests that pipeline requests on one
// connection and check the order they ran in (e2e_table_order_test.cc,
// e2e_write_many_order_test.cc): the client library would hide which
// request was sent when.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <zmq.hpp>

#include "protocol/wire.h"

namespace sidetable::testing {

// Server flags under which every write larger than kInlineMaxBytes waits
// on its partition's queue, one of four worker threads: nothing of that
// size runs on the frontend, alone or not. The ordering tests pipeline
// such writes so that the order they ran in is the queues' doing.
inline constexpr int kInlineMaxBytes = 2000;
inline std::vector<std::string> FourQueuedWorkersArgs(const std::string& durability) {
  return {"--durability",
          durability,
          "--workers",
          "4",
          "--inline-max-bytes",
          std::to_string(kInlineMaxBytes),
          "--inline-alone-max-bytes",
          "0"};
}

// Pads `e` past kInlineMaxBytes, so that a write of it is queued.
inline Entity& PadPastInline(Entity& e, char fill = 'x') {
  e.Set("Pad", Value::String(std::string(kInlineMaxBytes + 1000, fill)));
  return e;
}

// `Tag`: what the test remembers of each request (its name, what it
// expects), handed back with its reply.
template <typename Tag = std::string>
class PipelinedConnection {
 public:
  explicit PipelinedConnection(const std::string& endpoint)
      : socket_(ctx_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.connect(endpoint);
  }

  // Sends `r` with the next request id; `tag` comes back with its reply.
  void Send(wire::Request r, Tag tag) {
    r.id = next_id_++;
    std::string frame;
    wire::EncodeRequest(r, &frame);
    socket_.send(zmq::buffer(frame), zmq::send_flags::none);
    sent_[r.id] = std::move(tag);
  }

  struct Reply {
    wire::Header header;
    std::string frame;
    Status decoded;  // an error reply decodes as its error
    // The reply's body (a view into `frame`: taken after any move).
    std::string_view body() const { return std::string_view(frame).substr(wire::kHeaderBytes); }
    Tag tag;  // what it was sent with
  };
  // The next reply, or nothing within `timeout` (or one to no request sent
  // since the last Forget).
  std::optional<Reply> Receive(
      std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
    zmq::pollitem_t item{socket_.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq::poll(&item, 1, timeout) != 1) return std::nullopt;
    zmq::message_t message;
    if (!socket_.recv(message)) return std::nullopt;
    Reply r;
    r.frame = message.to_string();
    std::string_view body;
    r.decoded = wire::DecodeReply(r.frame, &r.header, &body);
    auto it = sent_.find(r.header.request_id);
    if (it == sent_.end()) return std::nullopt;
    r.tag = it->second;
    return r;
  }

  // Requests sent since the last Forget.
  size_t sent() const { return sent_.size(); }
  void Forget() { sent_.clear(); }

 private:
  zmq::context_t ctx_;
  zmq::socket_t socket_;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Tag> sent_;
};

}  // namespace sidetable::testing
