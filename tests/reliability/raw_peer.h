// Helpers for the flood and shutdown tests: a raw DEALER connection that
// timestamps every request and reply, request frames built with
// protocol/wire.h, and the sidecar's memory read from /proc.
#pragma once

#include <chrono>
#include <fstream>
#include <algorithm>
#include <map>
#include <set>
#include <vector>
#include <string>
#include <zmq.hpp>

#include "protocol/wire.h"
#include "testing/proc_stats.h"

namespace sidetable::testing {

using Clock = std::chrono::steady_clock;

// An EGT of `entities` inserts into one partition, each with `props`
// String properties of `value_bytes` ASCII characters.
inline std::string WriteFrame(uint64_t id, const std::string& table, const std::string& pk,
                              const std::string& rk_prefix, int entities, int props,
                              size_t value_bytes, OpKind kind = OpKind::kInsert) {
  wire::Request r;
  r.id = id;
  r.op = wire::Op::kWrite;
  r.table = table;
  for (int e = 0; e < entities; e++) {
    Operation op;
    op.kind = kind;
    op.entity.partition_key = pk;
    op.entity.row_key = rk_prefix + "-" + std::to_string(e);
    for (int p = 0; p < props; p++) {
      op.entity.properties.push_back({"P" + std::to_string(p), Value::String(std::string(value_bytes, 'x'))});
    }
    r.ops.push_back(std::move(op));
  }
  std::string out;
  wire::EncodeRequest(r, &out);
  return out;
}

inline std::string SimpleFrame(wire::Op op, uint64_t id, const std::string& table,
                               const std::string& pk = "", const std::string& rk = "") {
  wire::Request r;
  r.id = id;
  r.op = op;
  r.table = table;
  r.pk = pk;
  r.rk = rk;
  std::string out;
  wire::EncodeRequest(r, &out);
  return out;
}

struct Reply {
  uint16_t status = 0;
  Code code = Code::kOk;
  std::string message;
  Clock::time_point sent, answered;
  double ms() const { return std::chrono::duration<double, std::milli>(answered - sent).count(); }
};

// One connection. By default sends block when the socket's (small) send
// queue is full, so a request's send time is close to when it left for the
// server; `sndhwm` 0 queues without bound in the client instead (to put a
// burst on the server at once).
class RawPeer {
 public:
  RawPeer(zmq::context_t& ctx, const std::string& endpoint, int sndhwm = 2) : s_(ctx, zmq::socket_type::dealer) {
    s_.set(zmq::sockopt::linger, 0);
    s_.set(zmq::sockopt::sndhwm, sndhwm);
    s_.connect(endpoint);
  }

  // Sends `frame` (whose header carries `id`), collecting replies while it
  // waits, for at most `wait_ms`. False when it could not be sent (the server
  // went away): that request is not counted as sent.
  bool Send(uint64_t id, const std::string& frame, int wait_ms = 10000) {
    const auto until = Clock::now() + std::chrono::milliseconds(wait_ms);
    while (!s_.send(zmq::buffer(frame), zmq::send_flags::dontwait)) {
      if (Clock::now() >= until) return false;
      Collect(1);
    }
    replies_[id].sent = Clock::now();
    sent_++;
    return true;
  }

  // Reads replies for up to `ms` milliseconds (returns early once every
  // request sent is answered).
  void Collect(int ms) {
    const auto until = Clock::now() + std::chrono::milliseconds(ms);
    do {
      zmq::pollitem_t item{s_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, std::chrono::milliseconds(1));
      zmq::message_t m;
      while (s_.recv(m, zmq::recv_flags::dontwait)) {
        std::string_view frame(static_cast<const char*>(m.data()), m.size());
        wire::Header h;
        std::string_view body;
        Status s = wire::DecodeReply(frame, &h, &body);
        Reply& r = replies_[h.request_id];
        r.status = h.status;
        r.code = s.code();
        r.message = s.message();
        r.answered = Clock::now();
        answered_++;
      }
    } while (answered_ < sent_ && Clock::now() < until);
  }

  bool all_answered() const { return answered_ == sent_; }
  size_t sent() const { return sent_; }
  size_t answered() const { return answered_; }
  const std::map<uint64_t, Reply>& replies() const { return replies_; }

 private:
  zmq::socket_t s_;
  std::map<uint64_t, Reply> replies_;
  size_t sent_ = 0, answered_ = 0;
};

inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * static_cast<double>(v.size() - 1))];
}

}  // namespace sidetable::testing
