// The pipelining machinery: ids, sending, receiving, time-outs and retries.
#include <zmq.hpp>

#include <algorithm>
#include <cctype>
#include <string>
#include <thread>

#include "client/client.h"
#include "client/connection_watch.h"
#include "protocol/wire.h"

namespace sidetable::client {

using Clock = std::chrono::steady_clock;

// How often a client with ClientOptions::abandon looks at it while waiting.
constexpr std::chrono::milliseconds kAbandonCheck{20};

Client::Client(const ClientOptions& options) : options_(options) {
  std::random_device os;
  id_prefix_ = (uint64_t{os()} << 32) | os();
}

// 32 hex digits: the client's random 64 bits, then a counter, both most
// significant digit first. Unique as random ids are: the counter never
// repeats within a client, and two clients share a prefix with odds of
// 2^-64 per pair. Unlike wholly random ids, a client's ids grow in byte
// order, so the sidecar's request log (a RocksDB skiplist keyed by caller
// and id) inserts each next to the one before instead of searching the
// whole list from the top: that search was 7% of the sidecar's samples on
// single inserts (docs/performance.md, session 21). A forked child must
// make its own client (a ZeroMQ socket does not survive fork either), so
// it never repeats its parent's ids.
std::string Client::NewClientRequestId() {
  if (!options_.client_request_ids) return {};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id(32, '0');
  const uint64_t halves[2] = {id_prefix_, id_count_++};
  for (int half = 0; half < 2; half++) {
    uint64_t v = halves[half];
    for (int i = 15; i >= 0; i--, v >>= 4) id[half * 16 + i] = kHex[v & 15];
  }
  return id;
}

Client::~Client() {
  if (socket_) socket_->close();
  watch_.reset();  // its pair, before the context ends
}

namespace {

// libzmq connects to port % 65536: tcp://127.0.0.1:73837 reached the sidecar
// on 8301 without a word (session 39; the sidecar's own sidecar.listen was
// checked since session 34, its clients were not).
Status CheckTcpPort(const std::string& endpoint) {
  if (!endpoint.starts_with("tcp://")) return Status::OK();
  const size_t colon = endpoint.rfind(':');
  if (colon == std::string::npos || colon < 6) return Status::OK();  // libzmq refuses it itself
  const std::string port = endpoint.substr(colon + 1);
  const bool digits =
      !port.empty() && port.size() <= 5 &&
      std::all_of(port.begin(), port.end(), [](unsigned char ch) { return std::isdigit(ch); });
  if (digits && std::stoi(port) <= 65535) return Status::OK();
  return Status(Code::kInvalidInput, "cannot connect to " + endpoint +
                                         ": the port must be a number of 0..65535, got '" + port +
                                         "'");
}

}  // namespace

Result<std::unique_ptr<Client>> Client::Connect(const ClientOptions& options) {
  if (options.max_attempts < 1) return Status(Code::kInvalidInput, "max_attempts must be >= 1");
  ST_RETURN_IF_ERROR(CheckTcpPort(options.endpoint));
  std::unique_ptr<Client> c(new Client(options));
  c->ctx_ = std::make_unique<zmq::context_t>(1);
  c->socket_ = std::make_unique<zmq::socket_t>(*c->ctx_, zmq::socket_type::dealer);
  c->socket_->set(zmq::sockopt::linger, 0);
  c->socket_->set(zmq::sockopt::sndhwm, 0);
  c->socket_->set(zmq::sockopt::rcvhwm, 0);
  ST_RETURN_IF_ERROR(c->SetCurve());
  c->watch_ = ConnectionWatch::Start(*c->ctx_, *c->socket_);  // before it connects
  try {
    c->socket_->connect(options.endpoint);
  } catch (const zmq::error_t& e) {
    return Status(Code::kInvalidInput, "cannot connect to " + options.endpoint + ": " + e.what());
  }
  return c;
}

void Client::Transmit(Pending& p) {
  p.attempts++;
  p.waiting_to_resend = false;
  p.sent = Clock::now();
  // The extra wait is granted in steps, while the connection holds
  // (KeepWaiting); without a watch, at once, as before.
  p.deadline = p.sent + options_.timeout + (watch_ ? std::chrono::milliseconds(0) : p.wait);
  p.drops = watch_ ? watch_->drops() : 0;
  if (Abandoning()) return;  // the next Poll abandons it; nothing reaches the sidecar
  // Never blocks: with no connection to queue on (none yet, or its CURVE
  // handshake was refused) the attempt is lost and its deadline retries or
  // gives up (kNoReply), instead of the call hanging.
  (void)socket_->send(zmq::buffer(p.frame), zmq::send_flags::dontwait);
}

void Client::SendFrame(std::string frame, ReplyCallback done, std::chrono::milliseconds wait) {
  const uint64_t id = next_id_++;
  wire::SetRequestId(&frame, id);
  Pending& p = pending_[id];
  p.frame = std::move(frame);
  p.done = std::move(done);
  p.wait = wait;
  Status too_large = CheckFrameSize(p.frame.size());
  if (!too_large.ok()) {
    // Reported from Poll(), as every outcome is (a pipelined call's callback
    // never runs inside the call that sent it): due now.
    p.refused = std::move(too_large);
    p.attempts = options_.max_attempts;
    p.deadline = Clock::now();
    return;
  }
  Transmit(p);
}

Status Client::CheckFrameSize(size_t bytes) const {
  const size_t max = options_.max_request_bytes;
  if (max == 0 || bytes <= 2 * max) return Status::OK();
  return Status(Code::kRequestBodyTooLarge,
                "request of " + std::to_string(bytes) +
                    " bytes not sent: over twice max_request_bytes (" + std::to_string(max) +
                    "), the sidecar's ZeroMQ would drop it with the connection " +
                    "(ClientOptions::max_request_bytes should match sidecar.max_request_bytes)");
}

void Client::Finish(uint64_t id, const Status& s, std::string_view body) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  ReplyCallback done = std::move(it->second.done);
  pending_.erase(it);
  completed_++;
  if (done) done(s, body);
}

void Client::ScheduleRetry(uint64_t id, Pending& p) {
  // Exponential back-off with full jitter: uniform in [0, min(max, initial * 2^n)].
  const int64_t cap = std::min<int64_t>(options_.backoff_max.count(),
                                        options_.backoff_initial.count() << std::min(p.attempts, 20));
  std::uniform_int_distribution<int64_t> dist(0, std::max<int64_t>(cap, 1));
  p.resend_at = Clock::now() + std::chrono::milliseconds(dist(rng_));
  p.waiting_to_resend = true;
  // A fresh id for the new attempt: a late reply to the old one is ignored.
  Pending moved = std::move(p);
  pending_.erase(id);
  const uint64_t new_id = next_id_++;
  wire::SetRequestId(&moved.frame, new_id);
  pending_.emplace(new_id, std::move(moved));
}

void Client::OnFrame(std::string_view frame) {
  wire::Header h;
  std::string_view body;
  Status s = wire::DecodeReply(frame, &h, &body);
  auto it = pending_.find(h.request_id);
  if (it == pending_.end()) return;  // a reply to an attempt we gave up on
  if (s.code() == Code::kServerBusy && it->second.attempts < options_.max_attempts) {
    ScheduleRetry(h.request_id, it->second);
    return;
  }
  Finish(h.request_id, s, body);
}

bool Client::Abandoning() const {
  return options_.abandon != nullptr && options_.abandon->load(std::memory_order_relaxed);
}

void Client::AbandonPending() {
  // A callback may send another request (a query's next page): it is
  // abandoned in the same loop.
  while (!pending_.empty()) {
    const uint64_t id = pending_.begin()->first;
    const int attempts = pending_.begin()->second.attempts;
    Finish(id,
           Status(Code::kNoReply, "abandoned after " + std::to_string(attempts) +
                                      " attempt(s) to " + options_.endpoint + ": stopping"),
           {});
  }
}

std::string Client::WhyUnanswered() {
  return watch_ ? watch_->Explain(options_.endpoint, options_.curve.enabled()) : "";
}

std::string Client::NoReplyMessage(int attempts) {
  std::string m =
      "no reply from " + options_.endpoint + " after " + std::to_string(attempts) + " attempt(s)";
  const std::string why = WhyUnanswered();
  return why.empty() ? m : m + ": " + why;
}

void Client::CheckTimers() {
  if (Abandoning()) {
    AbandonPending();
    return;
  }
  const auto now = Clock::now();
  std::vector<uint64_t> expired, resend;
  for (auto& [id, p] : pending_) {
    if (p.waiting_to_resend) {
      if (now >= p.resend_at) resend.push_back(id);
    } else if (now >= p.deadline && !KeepWaiting(p, now)) {
      expired.push_back(id);
    }
  }
  for (uint64_t id : resend) Transmit(pending_[id]);
  for (uint64_t id : expired) {
    Pending& p = pending_[id];
    if (!p.refused.ok()) {
      const Status refused = p.refused;
      Finish(id, refused, {});
    } else if (p.attempts < options_.max_attempts) {
      ScheduleRetry(id, p);
    } else {
      Finish(id, Status(Code::kNoReply, NoReplyMessage(p.attempts)), {});
    }
  }
}

// A request the sidecar may hold (Backup: up to 10 minutes; a session
// read) gets another `timeout` at a time while the connection it was sent
// on is up, until its wait is spent. A sidecar that went away times out
// like any request: a backup whose sidecar was killed used to wait the
// whole 10 minutes (and as long again per retry), found by session 41.
bool Client::KeepWaiting(Pending& p, Clock::time_point now) {
  if (p.wait.count() == 0 || !watch_) return false;
  const auto limit = p.sent + options_.timeout + p.wait;
  if (now >= limit || !watch_->StillUp(p.drops)) return false;
  p.deadline = std::min(now + options_.timeout, limit);
  return true;
}

void Client::Poll(std::chrono::milliseconds wait) {
  const size_t done_before = completed_;
  const auto until = Clock::now() + wait;
  for (;;) {
    // Sleep no longer than the nearest timer, nor than kAbandonCheck when
    // the caller may abandon the requests.
    auto next = options_.abandon ? std::min(until, Clock::now() + kAbandonCheck) : until;
    for (const auto& [id, p] : pending_) next = std::min(next, p.waiting_to_resend ? p.resend_at : p.deadline);
    // Round up: rounding down would spin with zero timeouts below 1 ms.
    auto us = std::chrono::duration_cast<std::chrono::microseconds>(next - Clock::now()).count();
    auto ms = (us + 999) / 1000;
    zmq::pollitem_t item = {socket_->handle(), 0, ZMQ_POLLIN, 0};
    int rc = zmq_poll(&item, 1, static_cast<long>(std::max<int64_t>(ms, 0)));
    if (rc > 0 && (item.revents & ZMQ_POLLIN)) {
      zmq::message_t m;
      while (socket_->recv(m, zmq::recv_flags::dontwait)) {
        OnFrame(std::string_view(static_cast<const char*>(m.data()), m.size()));
      }
    } else if (rc == 0 && watch_) {
      watch_->Drain();  // idle: keep the monitor's queue short, off the reply path
    }
    CheckTimers();
    if (completed_ != done_before || pending_.empty() || Clock::now() >= until) return;
  }
}

void Client::Drain() {
  while (!pending_.empty()) Poll(std::chrono::milliseconds(100));
}

Status Client::Call(std::string frame, std::string* body, std::chrono::milliseconds wait) {
  Status result(Code::kInternal, "no reply");
  bool done = false;
  SendFrame(
      std::move(frame),
      [&](const Status& s, std::string_view b) {
        result = s;
        body->assign(b);
        done = true;
      },
      wait);
  while (!done) Poll(std::chrono::milliseconds(100));
  return result;
}

Result<std::string> Client::RawRoundTrip(const std::string& frame) {
  socket_->send(zmq::buffer(frame), zmq::send_flags::none);
  zmq::pollitem_t item = {socket_->handle(), 0, ZMQ_POLLIN, 0};
  if (zmq_poll(&item, 1, static_cast<long>(options_.timeout.count())) <= 0) {
    return Status(Code::kNoReply, "no reply");
  }
  zmq::message_t m;
  if (!socket_->recv(m, zmq::recv_flags::none)) return Status(Code::kNoReply, "no reply");
  return m.to_string();
}

}  // namespace sidetable::client
