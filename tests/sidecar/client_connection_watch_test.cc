// ConnectionWatch's reading of libzmq's event sequences (the ones a DEALER
// reports, seen with a socket monitor against each kind of sidecar), and
// the phrase each state gives.
#include "client/connection_watch.h"

#include <gtest/gtest.h>
#include <zmq.hpp>

#include <initializer_list>
#include <utility>

namespace sidetable::client {
namespace {

using Events = std::initializer_list<std::pair<uint16_t, int32_t>>;

ConnectionWatch::Seen Feed(Events events) {
  // Through a real watch on a real socket that never connects.
  zmq::context_t ctx(1);
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  auto w = ConnectionWatch::Start(ctx, s);
  EXPECT_NE(w, nullptr);
  if (!w) return {};
  for (auto [e, v] : events) w->OnEvent(e, v);
  ConnectionWatch::Seen seen = w->seen();
  s.close();
  w.reset();
  return seen;
}

// Nothing listens: each try is CONNECT_DELAYED, CLOSED, CONNECT_RETRIED.
TEST(ConnectionWatchTest, RefusedConnectsAreCountedOnce) {
  auto s = Feed({{ZMQ_EVENT_CONNECT_DELAYED, 0},
                 {ZMQ_EVENT_CLOSED, 12},
                 {ZMQ_EVENT_CONNECT_RETRIED, 100},
                 {ZMQ_EVENT_CONNECT_DELAYED, 0},
                 {ZMQ_EVENT_CLOSED, 12},
                 {ZMQ_EVENT_CONNECT_RETRIED, 200}});
  EXPECT_EQ(s.refused_connects, 2);
  EXPECT_EQ(s.closed_in_handshake, 0);
  EXPECT_EQ(ConnectionWatch::Explain(s, "tcp://h:1", false),
            "the connect failed (2 times): nothing listens at tcp://h:1");
}

// A full sidecar (or a CURVE one, to a plain client): CONNECTED, the
// handshake fails without detail, DISCONNECTED, then libzmq reconnects.
TEST(ConnectionWatchTest, AConnectionClosedInTheHandshakeCountsOnceAndItsReconnectIsNotARefusal) {
  auto s = Feed({{ZMQ_EVENT_CONNECTED, 12},
                 {ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL, 32},
                 {ZMQ_EVENT_DISCONNECTED, 12},
                 {ZMQ_EVENT_CONNECT_RETRIED, 100},
                 {ZMQ_EVENT_CONNECTED, 12},
                 {ZMQ_EVENT_DISCONNECTED, 12}});
  EXPECT_EQ(s.closed_in_handshake, 2);  // the second closed without a handshake event
  EXPECT_EQ(s.refused_connects, 0);
  EXPECT_EQ(
      ConnectionWatch::Explain(s, "e", false),
      "the sidecar closed the connection during the handshake (2 times): it is at its connection "
      "bound (sidecar.max_connections), or it requires CURVE (docs/security.md)");
  EXPECT_NE(
      ConnectionWatch::Explain(s, "e", true).find("this client's server key is not the sidecar's"),
      std::string::npos);
}

TEST(ConnectionWatchTest, ARefusedCurveKeyAndABrokenHandshakeAreNamed) {
  auto auth = Feed({{ZMQ_EVENT_CONNECTED, 12},
                    {ZMQ_EVENT_HANDSHAKE_FAILED_AUTH, 400},
                    {ZMQ_EVENT_DISCONNECTED, 12}});
  EXPECT_EQ(auth.auth_refused, 1);
  EXPECT_EQ(auth.closed_in_handshake, 0);
  EXPECT_EQ(ConnectionWatch::Explain(auth, "e", true),
            "the sidecar refused this client's CURVE key at the handshake (once): it is not in the "
            "sidecar's security.curve_clients_file");
  auto proto = Feed({{ZMQ_EVENT_CONNECTED, 12}, {ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL, 0x11000001}});
  EXPECT_EQ(ConnectionWatch::Explain(proto, "e", true),
            "the ZeroMQ handshake failed (once, protocol error 0x11000001): the sidecar does not "
            "use CURVE, "
            "or uses another key than this client's server key");
  EXPECT_EQ(ConnectionWatch::Explain(proto, "e", false),
            "the ZeroMQ handshake failed (once, protocol error 0x11000001): the sidecar may "
            "require CURVE "
            "(docs/security.md)");
}

TEST(ConnectionWatchTest, AHandshakeForgetsWhatCameBeforeAndALostConnectionIsSaid) {
  auto s = Feed({{ZMQ_EVENT_CONNECT_RETRIED, 100},
                 {ZMQ_EVENT_CONNECTED, 12},
                 {ZMQ_EVENT_HANDSHAKE_SUCCEEDED, 0}});
  EXPECT_TRUE(s.up);
  EXPECT_EQ(s.refused_connects, 0);
  EXPECT_EQ(ConnectionWatch::Explain(s, "e", false),
            "the connection is up: the sidecar did not answer in time (busy or stopped)");
  auto lost = Feed({{ZMQ_EVENT_CONNECTED, 12},
                    {ZMQ_EVENT_HANDSHAKE_SUCCEEDED, 0},
                    {ZMQ_EVENT_DISCONNECTED, 12},
                    {ZMQ_EVENT_CONNECT_RETRIED, 100},
                    {ZMQ_EVENT_CONNECT_RETRIED, 200}});
  EXPECT_FALSE(lost.up);
  EXPECT_EQ(lost.refused_connects, 1);  // the first retry is the reconnect after the loss
  EXPECT_EQ(ConnectionWatch::Explain(lost, "tcp://h:2", false),
            "the connection was lost, and the connect failed (once): nothing listens at tcp://h:2");
  EXPECT_EQ(ConnectionWatch::Explain(ConnectionWatch::Seen{}, "e", false), "");
}

}  // namespace
}  // namespace sidetable::client
