// The auth: section (sidecar/auth/auth_config.h): strict like the rest of
// the configuration, quotas inherit the default.
#include <gtest/gtest.h>

#include <fstream>

#include "sidecar/config.h"
#include "testing/temp_dir.h"
#include "tests/sidecar/config_text.h"

namespace sidetable::sidecar {
namespace {

TEST(AuthConfig, OffByDefaultAndTokensNeedAKey) {
  ServerConfig c;
  ASSERT_TRUE(LoadConfigText("", &c).ok());
  EXPECT_FALSE(c.auth.tokens);
  ASSERT_TRUE(LoadConfigText("auth:\n  mode: off\n", &c).ok());
  EXPECT_FALSE(c.auth.tokens);
  ASSERT_TRUE(LoadConfigText("auth:\n  mode: tokens\n", &c).ok());
  EXPECT_TRUE(c.auth.tokens);
  Status s = ValidateConfig(c);
  EXPECT_NE(s.message().find("auth.keys"), std::string::npos) << s.ToString();
}

TEST(AuthConfig, KeysAndQuotasLoad) {
  ServerConfig c;
  Status s = LoadConfigText(
      "auth:\n  mode: tokens\n  keys:\n    - {id: k1, file: /a}\n    - {id: k2, file: /b}\n  token_cache: 7\n"
      "  quotas:\n    default: {requests_per_second: 100, max_inflight: 4}\n"
      "    tenants:\n      big: {requests_per_second: 1000}\n",
      &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(ValidateConfig(c).ok());
  ASSERT_EQ(c.auth.keys.size(), 2u);
  EXPECT_EQ(c.auth.keys[1].file, "/b");
  EXPECT_EQ(c.auth.token_cache, 7u);
  EXPECT_EQ(c.auth.QuotaFor("small").requests_per_second, 100u);
  EXPECT_EQ(c.auth.QuotaFor("big").requests_per_second, 1000u);
  EXPECT_EQ(c.auth.QuotaFor("big").max_inflight, 4u) << "unset fields inherit the default";
}

TEST(AuthConfig, StrictKeysNameTheFileAndKey) {
  ServerConfig c;
  Status s = LoadConfigText("auth:\n  mdoe: tokens\n", &c);
  EXPECT_NE(s.message().find("auth.mdoe: unknown key"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("c.yaml"), std::string::npos) << s.ToString();
  s = LoadConfigText("auth:\n  mode: maybe\n", &c);
  EXPECT_NE(s.message().find("auth.mode"), std::string::npos) << s.ToString();
  s = LoadConfigText("auth:\n  keys:\n    - {id: k1, path: /a}\n", &c);
  EXPECT_NE(s.message().find("auth.keys[0].path"), std::string::npos) << s.ToString();
  s = LoadConfigText("auth:\n  quotas:\n    tenants:\n      t: {rps: 1}\n", &c);
  EXPECT_NE(s.message().find("auth.quotas.tenants.t.rps"), std::string::npos) << s.ToString();
  s = LoadConfigText("auth:\n  quotas:\n    default: {max_inflight: -1}\n", &c);
  EXPECT_NE(s.message().find("must not be negative"), std::string::npos) << s.ToString();
  ServerConfig three;
  ASSERT_TRUE(LoadConfigText("auth:\n  keys:\n    - {id: a, file: /a}\n    - {id: b, file: /b}\n    - {id: c, file: /c}\n",
                       &three).ok());
  EXPECT_NE(ValidateConfig(three).message().find("at most two"), std::string::npos);
}

}  // namespace
}  // namespace sidetable::sidecar
