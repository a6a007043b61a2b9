// Admission (sidecar/admission.h): requests in flight, and the large replies
// libzmq still holds for a connection (session 35: a client that did not
// read its query pages grew the server by a gigabyte, none of it counted).
#include "sidecar/admission.h"

#include <gtest/gtest.h>

namespace sidetable::sidecar {
namespace {

constexpr uint64_t kMiB = 1 << 20;

class AdmissionTest : public ::testing::Test {
 protected:
  Admission admission_{AdmissionLimits{
      .max_bytes = 32 * kMiB, .max_connection_requests = 8, .max_connection_bytes = 8 * kMiB}};
  BusyReason why_ = BusyReason::kQueueFull;
};

TEST_F(AdmissionTest, AReplyIsChargedUntilReleased) {
  ASSERT_TRUE(admission_.TryChargeReply("c", 5 * kMiB, /*refusable=*/true, &why_));
  EXPECT_EQ(admission_.bytes_in_flight(), 5 * kMiB);
  EXPECT_EQ(admission_.reply_bytes(), 5 * kMiB);
  EXPECT_EQ(admission_.connections_in_flight(), 1u);
  admission_.ReleaseReply("c", 5 * kMiB);
  EXPECT_EQ(admission_.bytes_in_flight(), 0u);
  EXPECT_EQ(admission_.reply_bytes(), 0u);
  EXPECT_EQ(admission_.connections_in_flight(), 0u);  // forgotten once it holds nothing
  EXPECT_EQ(admission_.peak_bytes_in_flight(), 5 * kMiB);
}

TEST_F(AdmissionTest, AConnectionNotReadingIsRefusedRequestsAndLargeReadReplies) {
  // Its first reply is always taken, even past the bound.
  ASSERT_TRUE(admission_.TryChargeReply("slow", 9 * kMiB, true, &why_));
  // Its next request does not fit beside it.
  EXPECT_FALSE(admission_.TryAdmit("slow", 1000, &why_));
  EXPECT_EQ(why_, BusyReason::kConnectionBytes);
  // A read's reply admitted before is refused rather than queued too...
  why_ = BusyReason::kQueueFull;
  EXPECT_FALSE(admission_.TryChargeReply("slow", 1 * kMiB, true, &why_));
  EXPECT_EQ(why_, BusyReason::kConnectionBytes);
  // ...but one that must reach it (a write's) is charged anyway.
  EXPECT_TRUE(admission_.TryChargeReply("slow", 1 * kMiB, false, &why_));
  EXPECT_EQ(admission_.bytes_in_flight(), 10 * kMiB);
  // Other connections are served meanwhile.
  EXPECT_TRUE(admission_.TryAdmit("other", 1000, &why_));
  EXPECT_TRUE(admission_.TryChargeReply("other", 5 * kMiB, true, &why_));
  // Read, it is served again.
  admission_.ReleaseReply("slow", 9 * kMiB);
  admission_.ReleaseReply("slow", 1 * kMiB);
  EXPECT_TRUE(admission_.TryAdmit("slow", 1000, &why_));
}

TEST_F(AdmissionTest, UnsentRepliesCountAgainstTheServersBound) {
  // Six connections, each under its own bound; the first reply of each is
  // taken even past the server's bound: 36 MiB in all.
  for (const char* c : {"a", "b", "c", "d", "e", "f"}) {
    ASSERT_TRUE(admission_.TryChargeReply(c, 6 * kMiB, true, &why_));
  }
  // No request is admitted past 32 MiB, as for requests in flight.
  EXPECT_FALSE(admission_.TryAdmit("g", 1000, &why_));
  EXPECT_EQ(why_, BusyReason::kInflightBytes);
  // A second reply of a connection under its own bound is refused too.
  EXPECT_FALSE(admission_.TryChargeReply("a", 1 * kMiB, true, &why_));
  EXPECT_EQ(why_, BusyReason::kInflightBytes);
}

TEST_F(AdmissionTest, ARequestAndAReplyOfOneConnectionAreReleasedApart) {
  ASSERT_TRUE(admission_.TryAdmit("c", 1000, &why_));
  ASSERT_TRUE(admission_.TryChargeReply("c", 1 * kMiB, true, &why_));
  admission_.Release("c", 1000);
  // The reply still holds the connection's place (and bytes).
  EXPECT_EQ(admission_.connections_in_flight(), 1u);
  EXPECT_EQ(admission_.bytes_in_flight(), 1 * kMiB);
  admission_.ReleaseReply("c", 1 * kMiB);
  EXPECT_EQ(admission_.connections_in_flight(), 0u);
  EXPECT_EQ(admission_.bytes_in_flight(), 0u);
}

// The workers a connection's unanswered requests are queued on: what a
// query of several partitions waits for (frontend.cc). Each request counts
// until its Release, per connection, and a WriteMany split counts on each
// of its parts' workers.
TEST_F(AdmissionTest, QueuedOnNamesTheWorkersHoldingAConnectionsRequests) {
  auto on = [](std::initializer_list<size_t> ws) {
    WorkerSet s;
    for (size_t w : ws) s.set(w);
    return s;
  };
  EXPECT_TRUE(admission_.QueuedOn("a").none());
  ASSERT_TRUE(admission_.TryAdmit("a", 100, &why_));
  admission_.NoteQueued("a", on({2}));
  ASSERT_TRUE(admission_.TryAdmit("a", 100, &why_));
  admission_.NoteQueued("a", on({2}));
  ASSERT_TRUE(admission_.TryAdmit("a", 100, &why_));
  admission_.NoteQueued("a", on({0, 255}));  // a split WriteMany
  ASSERT_TRUE(admission_.TryAdmit("b", 100, &why_));
  admission_.NoteQueued("b", on({1}));
  EXPECT_EQ(admission_.QueuedOn("a"), on({0, 2, 255}));
  EXPECT_EQ(admission_.QueuedOn("b"), on({1}));
  admission_.Release("a", 100, on({2}));
  EXPECT_EQ(admission_.QueuedOn("a"), on({0, 2, 255}))
      << "one of two requests on worker 2 is still there";
  admission_.Release("a", 100, on({0, 255}));
  EXPECT_EQ(admission_.QueuedOn("a"), on({2}));
  admission_.Release("a", 100, on({2}));
  EXPECT_TRUE(admission_.QueuedOn("a").none());
  admission_.Release("b", 100, on({1}));
  EXPECT_TRUE(admission_.QueuedOn("b").none());
  EXPECT_EQ(admission_.connections_in_flight(), 0u);
  // A connection with nothing charged is not tracked.
  admission_.NoteQueued("c", on({3}));
  EXPECT_TRUE(admission_.QueuedOn("c").none());
  EXPECT_EQ(admission_.connections_in_flight(), 0u);
}

}  // namespace
}  // namespace sidetable::sidecar
