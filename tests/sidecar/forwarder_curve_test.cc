// Forwarder over CURVE (sidecar/forwarder.h; docs/security.md, "CURVE in a
// cluster") against an owner played by the test on loopback: a ROUTER that
// is a CURVE server with the sidecar's own ZAP handler (ZapHandler) and an
// allow-list, answering each request with "reply:" and its body.
//
// What is checked:
// - a forward with the owner's published key, from a key on its allow-list,
//   is answered;
// - a forwarding key not on the owner's allow-list is refused at the
//   handshake: ServerBusy, not executed, nothing reaches the owner;
// - an owner that publishes no key gets nothing at all, not even a plain
//   connection, when CURVE is on (a plain peer would have received it);
// - a new key for an endpoint (the member restarted with a new key pair)
//   gets a new socket: the old one, set up for the old key, is not reused.
//
// As in forwarder_test.cc, every call runs on a thread of its own that ends
// before the Forwarder does (its sockets are the calling thread's).
#include <gtest/gtest.h>

#include <fstream>
#include <future>

#include "sidecar/forwarder.h"
#include "sidecar/zap_handler.h"
#include "testing/temp_dir.h"
#include "tests/sidecar/fake_peer.h"

namespace sidetable::sidecar {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fake::FakePeer;
using fake::Received;

std::string Frame(std::string_view tag) {
  std::string f;
  wire::AppendHeader(&f, wire::Header{wire::kVersion, static_cast<uint8_t>(wire::Op::kGet), 0, 0});
  f.append(tag);
  return f;
}

std::string BodyOf(const std::string& reply) { return reply.substr(std::min(reply.size(), wire::kHeaderBytes)); }

curve::KeyPair NewPair() { return curve::GenerateKeyPair().value(); }

// An owner whose listener requires CURVE, as transport.cc sets one up.
class CurvePeer {
 public:
  CurvePeer(const curve::KeyPair& keys, const std::vector<std::string>& allowed, const std::string& list_file,
            const std::string& bind = "tcp://127.0.0.1:*") {
    std::vector<curve::AllowedKey> list;
    std::ofstream out(list_file, std::ios::trunc);
    for (const auto& k : allowed) {
      list.push_back(curve::AllowedKey{k, ""});
      out << k << "\n";
    }
    out.close();
    zap_ = ZapHandler::Start(&ctx_, list, list_file).value();
    socket_ = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::router);
    socket_->set(zmq::sockopt::linger, 0);
    socket_->set(zmq::sockopt::zap_domain, "sidetable");
    socket_->set(zmq::sockopt::curve_server, true);
    socket_->set(zmq::sockopt::curve_secretkey, keys.secret_key);
    socket_->bind(bind);
    endpoint_ = socket_->get(zmq::sockopt::last_endpoint);
    thread_ = std::thread([this] { Loop(); });
  }
  ~CurvePeer() {
    stop_.store(true);
    thread_.join();
    socket_.reset();
    zap_.reset();  // before ctx_ (declared first) is terminated
  }

  const std::string& endpoint() const { return endpoint_; }
  size_t count() const { return count_.load(); }
  uint64_t refused() const { return zap_->refused(); }
  uint64_t allowed() const { return zap_->allowed(); }

 private:
  void Loop() {
    while (!stop_.load()) {
      zmq::pollitem_t item{static_cast<void*>(*socket_), 0, ZMQ_POLLIN, 0};
      if (zmq::poll(&item, 1, std::chrono::milliseconds(20)) <= 0) continue;
      std::vector<zmq::message_t> frames;
      for (;;) {
        zmq::message_t m;
        if (!socket_->recv(m, zmq::recv_flags::dontwait)) break;
        const bool more = m.more();
        frames.push_back(std::move(m));
        if (!more) break;
      }
      if (frames.size() < 3) continue;
      Received r;
      r.frame = frames.back().to_string();
      if (!wire::ParseHeader(r.frame, &r.header)) continue;
      count_++;
      socket_->send(frames.front(), zmq::send_flags::sndmore);
      socket_->send(zmq::message_t(), zmq::send_flags::sndmore);
      socket_->send(zmq::buffer(fake::ReplyFrame(r, "reply:" + r.Body())), zmq::send_flags::none);
    }
  }

  zmq::context_t ctx_{1};
  std::unique_ptr<ZapHandler> zap_;
  std::unique_ptr<zmq::socket_t> socket_;
  std::string endpoint_;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> count_{0};
  std::thread thread_;
};

class ForwarderCurveTest : public ::testing::Test {
 protected:
  void OnThread(std::function<void()> body, std::chrono::seconds bound = 20s) {
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    std::thread t([body = std::move(body), done] {
      body();
      done->set_value();
    });
    if (finished.wait_for(bound) != std::future_status::ready) {
      ADD_FAILURE() << "a Forwarder call did not return within " << bound.count() << " s";
      (void)forwarder_.release();  // left to the process's exit with its thread
      t.detach();
      return;
    }
    t.join();
  }

  testing::TempDir dir_;
  curve::KeyPair mine_ = NewPair();  // this sidecar's key pair
  std::unique_ptr<Forwarder> forwarder_ = std::make_unique<Forwarder>("m-curve", mine_);
};

TEST_F(ForwarderCurveTest, TheOwnersPublishedKeyAndAnAllowedKeyAreAnswered) {
  const curve::KeyPair owner_keys = NewPair();
  CurvePeer owner(owner_keys, {NewPair().public_key, mine_.public_key}, dir_.Sub("clients"));
  ASSERT_TRUE(forwarder_->curve());
  OnThread([&] {
    auto reply = forwarder_->Call(owner.endpoint(), owner_keys.public_key, Frame("hello"), Clock::now() + 5s);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_EQ(BodyOf(*reply), "reply:hello");
    // The same socket serves the next call (no new handshake).
    reply = forwarder_->Call(owner.endpoint(), owner_keys.public_key, Frame("again"), Clock::now() + 5s);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_EQ(BodyOf(*reply), "reply:again");
  });
  EXPECT_EQ(owner.count(), 2u);
  EXPECT_EQ(owner.allowed(), 1u) << "one handshake, admitted by the owner's ZAP handler";
  EXPECT_EQ(owner.refused(), 0u);
}

TEST_F(ForwarderCurveTest, AKeyNotOnTheOwnersAllowListIsRefusedAndNothingArrives) {
  const curve::KeyPair owner_keys = NewPair();
  CurvePeer owner(owner_keys, {NewPair().public_key}, dir_.Sub("clients"));
  OnThread([&] {
    const auto start = Clock::now();
    auto refused = forwarder_->Call(owner.endpoint(), owner_keys.public_key, Frame("not-allowed"), start + 3s);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), Code::kServerBusy);
    EXPECT_NE(refused.status().message().find("not executed"), std::string::npos) << refused.status().ToString();
    EXPECT_NE(refused.status().message().find("security.curve_clients_file"), std::string::npos)
        << "the message names the likely cause: " << refused.status().ToString();
    EXPECT_LT(Clock::now() - start, 3s) << "refused at the handshake, not after the whole wait";
    EXPECT_EQ(forwarder_->unreachable(), 1u);
    EXPECT_EQ(forwarder_->forwarded(), 0u);
  });
  EXPECT_EQ(owner.count(), 0u);
  EXPECT_GE(owner.refused(), 1u) << "the owner's ZAP handler refused the key";
  EXPECT_EQ(owner.allowed(), 0u);
}

TEST_F(ForwarderCurveTest, AnOwnerWithoutAPublishedKeyGetsNothingNotEvenPlainText) {
  // A plain peer: had the forwarder sent in plain text, it would have arrived.
  FakePeer plain([](const Received& r, size_t) {
    return fake::Answer{fake::Answer::When::kNow, fake::ReplyFrame(r, "reply:" + r.Body())};
  });
  OnThread([&] {
    auto refused = forwarder_->Call(plain.endpoint(), "", Frame("in-the-clear"), Clock::now() + 3s);
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), Code::kServerBusy);
    EXPECT_NE(refused.status().message().find("publishes no CURVE key"), std::string::npos)
        << refused.status().ToString();
    // The overload without a key is the same refusal.
    EXPECT_EQ(forwarder_->Call(plain.endpoint(), Frame("in-the-clear-2"), Clock::now() + 3s).status().code(),
              Code::kServerBusy);
    EXPECT_EQ(forwarder_->no_peer_key(), 2u);
    EXPECT_EQ(forwarder_->forwarded(), 0u);
    EXPECT_EQ(forwarder_->unreachable(), 0u) << "refused before any connection attempt";
  });
  EXPECT_FALSE(plain.WaitForCount(1, 300ms)) << "a request reached the plain peer";

  // Without CURVE the same peer is forwarded to (the key is ignored).
  forwarder_ = std::make_unique<Forwarder>("m-plain");
  EXPECT_FALSE(forwarder_->curve());
  OnThread([&] {
    auto reply = forwarder_->Call(plain.endpoint(), "", Frame("plain"), Clock::now() + 5s);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_EQ(BodyOf(*reply), "reply:plain");
  });
}

// A member restarted at the same endpoint with a new key pair: its new
// member record carries the new key. A socket set up for the old key would
// fail every handshake with the new owner; the forwarder replaces it. One
// thread for the whole story, so that the old socket is the one it would reuse.
TEST_F(ForwarderCurveTest, ANewKeyForAnEndpointGetsANewSocket) {
  const curve::KeyPair first_keys = NewPair(), second_keys = NewPair();
  auto first = std::make_unique<CurvePeer>(first_keys, std::vector<std::string>{mine_.public_key},
                                           dir_.Sub("clients-1"));
  const std::string endpoint = first->endpoint();
  std::unique_ptr<CurvePeer> second;
  OnThread([&] {
    auto reply = forwarder_->Call(endpoint, first_keys.public_key, Frame("first"), Clock::now() + 5s);
    ASSERT_TRUE(reply.ok()) << reply.status().ToString();
    EXPECT_EQ(BodyOf(*reply), "reply:first");

    first.reset();  // the member stops; it comes back with a new key pair
    second = std::make_unique<CurvePeer>(second_keys, std::vector<std::string>{mine_.public_key},
                                         dir_.Sub("clients-2"), endpoint);
    ASSERT_EQ(second->endpoint(), endpoint);
    // A few tries at most, each bounded; with the old socket reused every
    // one of them fails its handshake.
    Result<std::string> again = Status(Code::kServerBusy, "not tried");
    for (int i = 0; i < 5 && !again.ok(); i++) {
      again = forwarder_->Call(endpoint, second_keys.public_key, Frame("second"), Clock::now() + 2s);
    }
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ(BodyOf(*again), "reply:second");
  });
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(second->count(), 1u);
}

}  // namespace
}  // namespace sidetable::sidecar
