// Client::Connect's endpoint: libzmq connects to port % 65536, so
// tcp://127.0.0.1:73837 reached whatever listened on 8301 (the CLI, the demo
// and the workers all connect through this client; session 39).
#include <gtest/gtest.h>

#include <string>

#include "client/client.h"

namespace sidetable::client {
namespace {

TEST(ClientEndpoint, APortBeyondSixteenBitsIsRefused) {
  for (const std::string endpoint :
       {"tcp://127.0.0.1:73837", "tcp://127.0.0.1:99999", "tcp://127.0.0.1:-1", "tcp://[::1]:65536",
        "tcp://localhost:123456"}) {
    ClientOptions o;
    o.endpoint = endpoint;
    auto c = Client::Connect(o);
    ASSERT_FALSE(c.ok()) << endpoint << " was accepted";
    EXPECT_EQ(c.status().code(), Code::kInvalidInput);
    EXPECT_NE(c.status().message().find("the port must be a number of 0..65535"), std::string::npos)
        << c.status().ToString();
  }
  for (const std::string endpoint : {"tcp://127.0.0.1:65535", "tcp://127.0.0.1:8301",
                                     "ipc:///tmp/sidetable-client-endpoint-test.sock"}) {
    ClientOptions o;
    o.endpoint = endpoint;
    auto c = Client::Connect(o);  // connecting sends nothing yet
    EXPECT_TRUE(c.ok()) << endpoint << ": " << c.status().ToString();
  }
}

}  // namespace
}  // namespace sidetable::client
