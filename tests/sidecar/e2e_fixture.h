// A real sidetable process and a C++ client connected to it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "client/client.h"
#include "client/entity_builder.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"

namespace sidetable::testing {

class SidecarTest : public ::testing::Test {
 protected:
  // Extra server flags for this fixture (e.g. a tiny queue).
  virtual std::vector<std::string> ServerArgs() { return {"--durability", "os"}; }
  // The program started (a wrapper script may exec the sidecar).
  virtual std::string Binary() { return SIDETABLE_BIN; }

  void SetUp() override {
    server_ = std::make_unique<SidecarProcess>(Binary(), dir_.Sub("db"), ServerArgs());
    ASSERT_TRUE(server_->Start()) << server_->Log();
    client_ = Connect();
    ASSERT_NE(client_, nullptr);
  }

  void TearDown() override {
    client_.reset();
    if (server_) {
      EXPECT_EQ(server_->Stop(), 0) << server_->Log();
    }
  }

  std::unique_ptr<client::Client> Connect(int max_attempts = 5) {
    client::ClientOptions o;
    o.endpoint = server_->endpoint();
    o.timeout = std::chrono::milliseconds(10000);
    o.max_attempts = max_attempts;
    auto c = client::Client::Connect(o);
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static Entity Person(const std::string& pk, const std::string& rk, int age) {
    return client::EntityBuilder(pk, rk).String("Name", "n" + rk).Int32("Age", age).Build();
  }

  // Table "People": partitions p0..p2, RowKeys r100..r149 in each, Age 0..49.
  void CreatePeople() {
    ASSERT_TRUE(client_->CreateTable("People").ok());
    for (int p = 0; p < 3; p++) {
      Batch b("People");
      for (int i = 0; i < 50; i++) b.Insert(Person("p" + std::to_string(p), "r" + std::to_string(100 + i), i));
      ASSERT_TRUE(client_->Execute(b).ok());
    }
  }

  TempDir dir_;
  std::unique_ptr<SidecarProcess> server_;
  std::unique_ptr<client::Client> client_;
};

}  // namespace sidetable::testing
