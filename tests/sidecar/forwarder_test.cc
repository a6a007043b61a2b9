// Forwarder (sidecar/forwarder.h): one request to another sidecar and its
// reply, against a FakePeer on loopback. The error paths: an owner nobody
// listens for, an owner that answers after the deadline, and the order of
// one thread's requests.
//
// A Forwarder's sockets belong to the thread that called it, and the
// Forwarder's context waits for them when it is destroyed: every call here
// runs on a thread of its own (OnThread) that ends before the Forwarder
// does. OnThread waits a bounded time; a call stuck past it is a failure,
// and the stuck thread and its Forwarder are left to the process's exit.
#include "sidecar/forwarder.h"

#include <gtest/gtest.h>

#include <future>
#include <map>
#include <set>

#include "tests/sidecar/fake_peer.h"

namespace sidetable::sidecar {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using fake::Answer;
using fake::FakePeer;
using fake::Received;

// A whole request frame whose body is `tag` (the Forwarder never decodes
// the body; it only rewrites the header's request id).
std::string Frame(std::string_view tag) {
  std::string f;
  wire::AppendHeader(&f, wire::Header{wire::kVersion, static_cast<uint8_t>(wire::Op::kGet), 0, 0});
  f.append(tag);
  return f;
}

// The peer's usual answer: "reply:" and the request's body.
Answer Echo(const Received& r) { return Answer{Answer::When::kNow, fake::ReplyFrame(r, "reply:" + r.Body())}; }

std::string BodyOf(const std::string& reply) { return reply.substr(std::min(reply.size(), wire::kHeaderBytes)); }

std::string DeadEndpoint() {
  // A port that was just free: bound by the system, then closed.
  zmq::context_t ctx(1);
  zmq::socket_t s(ctx, zmq::socket_type::router);
  s.set(zmq::sockopt::linger, 0);
  s.bind("tcp://127.0.0.1:*");
  return s.get(zmq::sockopt::last_endpoint);
}

class ForwarderTest : public ::testing::Test {
 protected:
  // Runs `body` on a new thread and waits at most `bound` for it.
  void OnThread(std::function<void()> body, std::chrono::seconds bound = 20s) {
    auto done = std::make_shared<std::promise<void>>();
    auto finished = done->get_future();
    std::thread t([body = std::move(body), done] {
      body();
      done->set_value();
    });
    if (finished.wait_for(bound) != std::future_status::ready) {
      ADD_FAILURE() << "a Forwarder call did not return within " << bound.count() << " s";
      // Left behind, with the Forwarder it uses: the process ends with it.
      (void)forwarder_.release();
      t.detach();
      return;
    }
    t.join();
  }

  std::unique_ptr<Forwarder> forwarder_ = std::make_unique<Forwarder>("m-test");
};

// An owner that was killed and not yet replaced: nothing listens on its
// endpoint. The call is refused ServerBusy within its deadline, without
// sending (unreachable, not a time-out: the outcome is known), and the
// same thread's next call to a live peer is answered.
TEST_F(ForwarderTest, NobodyListeningIsServerBusyInTimeAndTheThreadKeepsWorking) {
  FakePeer live([](const Received& r, size_t) { return Echo(r); });
  const std::string dead = DeadEndpoint();
  OnThread([&] {
    const auto deadline_wait = 3s;
    const auto start = Clock::now();
    auto refused = forwarder_->Call(dead, Frame("to-the-dead"), start + deadline_wait);
    const auto took = Clock::now() - start;
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.status().code(), Code::kServerBusy);
    EXPECT_LT(took, deadline_wait + 2s);
    EXPECT_EQ(forwarder_->unreachable(), 1u);
    EXPECT_EQ(forwarder_->timeouts(), 0u) << "refused before sending: its outcome is known";

    auto answered = forwarder_->Call(live.endpoint(), Frame("to-the-living"), Clock::now() + 5s);
    ASSERT_TRUE(answered.ok()) << answered.status().ToString();
    EXPECT_EQ(BodyOf(*answered), "reply:to-the-living");

    // And the dead one stays refused, again in time.
    const auto again = Clock::now();
    auto still = forwarder_->Call(dead, Frame("to-the-dead-again"), again + deadline_wait);
    EXPECT_EQ(still.status().code(), Code::kServerBusy);
    EXPECT_LT(Clock::now() - again, deadline_wait + 2s);
  });
  EXPECT_EQ(live.count(), 1u);
}

// An owner that answers after the deadline: the call is ServerBusy (outcome
// unknown), and the late reply, which the peer sends just before it answers
// the next request, never reaches the next call: that call gets its own.
TEST_F(ForwarderTest, ALateReplyIsNeverTheNextCallsReply) {
  FakePeer slow([](const Received& r, size_t index) {
    if (index == 0) return Answer{Answer::When::kBeforeNextReply, fake::ReplyFrame(r, "reply:first")};
    return Echo(r);
  });
  OnThread([&] {
    const auto start = Clock::now();
    auto late = forwarder_->Call(slow.endpoint(), Frame("first"), start + 300ms);
    ASSERT_FALSE(late.ok());
    EXPECT_EQ(late.status().code(), Code::kServerBusy);
    EXPECT_LT(Clock::now() - start, 300ms + 2s);
    EXPECT_EQ(forwarder_->timeouts(), 1u);

    auto next = forwarder_->Call(slow.endpoint(), Frame("second"), Clock::now() + 5s);
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    EXPECT_EQ(BodyOf(*next), "reply:second");
    wire::Header h;
    ASSERT_TRUE(wire::ParseHeader(*next, &h));
    EXPECT_EQ(h.request_id, 0u) << "the caller puts its own request id back";
  });
  auto got = slow.received();
  ASSERT_EQ(got.size(), 2u);
  // The timed-out socket was closed (forwarder.h): the next request came
  // over a new connection, so the late reply had nowhere to go.
  EXPECT_NE(got[0].identity, got[1].identity);
  EXPECT_NE(got[0].header.request_id, got[1].header.request_id);
}

// Several threads forwarding to one peer at once: each thread's requests
// arrive in the order it sent them, over one connection per thread (one
// routing id, starting kForwardedIdPrefix), and each call gets its own reply.
TEST_F(ForwarderTest, OneThreadsRequestsArriveInOrderOverOneConnection) {
  FakePeer peer([](const Received& r, size_t) { return Echo(r); });
  constexpr int kThreads = 4, kCalls = 40;
  OnThread([&] {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; t++) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kCalls; i++) {
          const std::string tag = std::to_string(t) + "/" + std::to_string(i);
          auto reply = forwarder_->Call(peer.endpoint(), Frame(tag), Clock::now() + 5s);
          ASSERT_TRUE(reply.ok()) << reply.status().ToString();
          EXPECT_EQ(BodyOf(*reply), "reply:" + tag);
        }
      });
    }
    for (auto& th : threads) th.join();
  });
  std::map<std::string, std::vector<std::string>> by_thread;  // "t" -> tags in arrival order
  std::map<std::string, std::set<std::string>> identities;    // "t" -> routing ids seen
  for (const Received& r : peer.received()) {
    const std::string tag = r.Body();
    const std::string thread = tag.substr(0, tag.find('/'));
    by_thread[thread].push_back(tag);
    identities[thread].insert(r.identity);
    EXPECT_TRUE(r.identity.starts_with(kForwardedIdPrefix)) << r.identity;
  }
  ASSERT_EQ(by_thread.size(), static_cast<size_t>(kThreads));
  for (const auto& [thread, tags] : by_thread) {
    std::vector<std::string> sent;
    for (int i = 0; i < kCalls; i++) sent.push_back(thread + "/" + std::to_string(i));
    EXPECT_EQ(tags, sent) << "thread " << thread;
    EXPECT_EQ(identities[thread].size(), 1u) << "thread " << thread << " used more than one connection";
  }
}

}  // namespace
}  // namespace sidetable::sidecar
