// The ports of the mock's brokers (sidetable-kafka-mock --port).
//
// librdkafka 2.0's mock cluster binds each broker's listener to 127.0.0.1
// with port 0, so the kernel picks a port, and rdkafka_mock.h has no setting
// for it. A user trying a cluster needs a bootstrap address that stays the
// same across restarts of the mock (it is in every member's configuration),
// and a firewall or a port range needs all of them known. So:
//
// - ArmBrokerPorts binds one listening-to-be socket per broker to
//   127.0.0.1:first, first+1, ... itself, before the mock starts, and says
//   which port it could not bind (in use). The check cannot be left to the
//   mock: librdkafka 2.0.2 aborts the process (an assertion in
//   rd_kafka_mock_cluster_destroy) when a broker's bind fails.
// - This executable defines bind() (broker_ports.cc): while armed, the mock's
//   bind of a stream socket to 127.0.0.1 port 0 is answered by putting the
//   next pre-bound socket in its place (dup3 onto the mock's descriptor);
//   every other bind goes to libc's unchanged. The mock creates its
//   brokers' listeners in rd_kafka_mock_cluster_new, on the calling thread,
//   one bind each, in broker order, then listens on them.
//
// As with common/pid_cache.cc, only this executable defines the function
// (exported with -Wl,--export-dynamic-symbol=bind so that librdkafka binds
// to it); no library replaces a libc function for its users.
//
// Thread safety: ArmBrokerPorts/DisarmBrokerPorts from main() only, around
// the mock's start; bind() from any thread.
#pragma once

#include "engine/status.h"

namespace sidetable::kafka_mock {

// Binds 127.0.0.1:first .. first+count-1 for the next `count` loopback binds
// to port 0. An error names the first port that could not be bound (and
// binds none).
Status ArmBrokerPorts(int first, int count);

// Stops substituting sockets, closes those not handed out, and returns how
// many were.
int DisarmBrokerPorts();

}  // namespace sidetable::kafka_mock
