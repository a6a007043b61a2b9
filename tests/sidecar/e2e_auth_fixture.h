// A real sidetable process with auth.mode: tokens (two signing keys, k1
// and k2), and helpers to issue tokens and connect clients carrying them.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <memory>

#include "client/client.h"
#include "client/entity_builder.h"
#include "client/tokens.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"

namespace sidetable::testing {

namespace tok = client::tokens;

class AuthSidecarTest : public ::testing::Test {
 protected:
  static constexpr const char* kKey1 = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";  // 32 bytes
  static constexpr const char* kKey2 = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";
  static constexpr const char* kKey3 = "cXdlcnR5dWlvcGFzZGZnaGprbHp4Y3Zibm1xd2VydHk=";  // not configured

  // Lines appended under `auth:` (e.g. quotas).
  virtual std::string ExtraAuthConfig() { return ""; }

  void SetUp() override {
    WriteKey("k1.key", kKey1);
    WriteKey("k2.key", kKey2);
    const std::string config = dir_.Sub("sidetable.yaml");
    std::ofstream(config) << "auth:\n  mode: tokens\n  keys:\n"
                          << "    - {id: k1, file: " << dir_.Sub("k1.key") << "}\n"
                          << "    - {id: k2, file: " << dir_.Sub("k2.key") << "}\n"
                          << ExtraAuthConfig();
    server_ = std::make_unique<SidecarProcess>(SIDETABLE_BIN, dir_.Sub("db"),
                                               std::vector<std::string>{"--durability", "os", "--config", config});
    ASSERT_TRUE(server_->Start()) << server_->Log();
    admin_ = Connect(Issue(Spec("", true, "raudmc")));
    ASSERT_NE(admin_, nullptr);
  }

  void TearDown() override {
    admin_.reset();
    if (server_) {
      EXPECT_EQ(server_->Stop(), 0) << server_->Log();
    }
  }

  void WriteKey(const std::string& name, const char* base64) {
    const std::string path = dir_.Sub(name);
    std::ofstream(path) << base64 << "\n";
    ::chmod(path.c_str(), 0600);
  }

  static tok::TokenSpec Spec(const std::string& table, bool prefix, const std::string& perms,
                             const std::string& identity = "alice", const std::string& tenant = "acme") {
    tok::TokenSpec s;
    s.table = table;
    s.table_is_prefix = prefix;
    if (!perms.empty()) s.permissions = *tok::ParsePermissions(perms);
    s.expiry = Now() + std::chrono::hours(1);
    s.identity = identity;
    s.tenant = tenant;
    return s;
  }

  static tok::TimePoint Now() {
    return std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now());
  }

  static std::string Issue(const tok::TokenSpec& spec, const std::string& kid = "k1", const char* key = kKey1) {
    auto raw = tok::DecodeKey(key);
    EXPECT_TRUE(raw.ok());
    auto t = tok::IssueToken(spec, kid, *raw);
    EXPECT_TRUE(t.ok()) << t.status().ToString();
    return t.ok() ? *t : std::string();
  }

  std::unique_ptr<client::Client> Connect(const std::string& token, const std::string& caller = "") {
    client::ClientOptions o;
    o.endpoint = server_->endpoint();
    o.timeout = std::chrono::milliseconds(10000);
    o.max_attempts = 1;
    o.token = token;
    o.caller = caller;
    auto c = client::Client::Connect(o);
    return c.ok() ? std::move(c).value() : nullptr;
  }

  static Entity Row(const std::string& pk, const std::string& rk, int v = 1) {
    return client::EntityBuilder(pk, rk).Int32("V", v).Build();
  }

  TempDir dir_;
  std::unique_ptr<SidecarProcess> server_;
  std::unique_ptr<client::Client> admin_;
};

}  // namespace sidetable::testing
