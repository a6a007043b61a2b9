// The auth: section (sidecar/auth/auth_config.h): strict like the rest of
// the configuration, quotas inherit the default.
#include <gtest/gtest.h>

#include <filesystem>
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

// A key file as docs/security.md says to make one: base64, owner-only.
std::string WriteKeyFile(const testing::TempDir& dir, const std::string& name) {
  const std::string path = dir.Sub(name);
  std::ofstream(path) << "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n";
  std::filesystem::permissions(
      path, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
      std::filesystem::perm_options::replace);
  return path;
}

TEST(AuthConfig, KeysAndQuotasLoad) {
  testing::TempDir dir;
  const std::string a = WriteKeyFile(dir, "a.key"), b = WriteKeyFile(dir, "b.key");
  ServerConfig c;
  Status s = LoadConfigText(
      "auth:\n  mode: tokens\n  keys:\n    - {id: k1, file: " + a + "}\n    - {id: k2, file: " + b +
          "}\n  token_cache: 7\n"
          "  quotas:\n    default: {requests_per_second: 100, max_inflight: 4}\n"
          "    tenants:\n      big: {requests_per_second: 1000}\n",
      &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(ValidateConfig(c).ok());
  ASSERT_EQ(c.auth.keys.size(), 2u);
  EXPECT_EQ(c.auth.keys[1].file, b);
  EXPECT_EQ(c.auth.token_cache, 7u);
  EXPECT_EQ(c.auth.QuotaFor("small").requests_per_second, 100u);
  EXPECT_EQ(c.auth.QuotaFor("big").requests_per_second, 1000u);
  EXPECT_EQ(c.auth.QuotaFor("big").max_inflight, 4u) << "unset fields inherit the default";
}

// With tokens on, the key files are read with the configuration: a bad one
// stops the start naming the file and the key, before the data directory is
// opened (session 39: it was found only after, with exit code 1).
TEST(AuthConfig, KeyFilesAreReadWithTheConfiguration) {
  testing::TempDir dir;
  const std::string wide = WriteKeyFile(dir, "wide.key");
  std::filesystem::permissions(wide, std::filesystem::perms::group_read,
                               std::filesystem::perm_options::add);
  for (const auto& [file, expected] :
       {std::pair<std::string, std::string>{dir.Sub("missing.key"),
                                            "auth.keys[0].file: cannot open key file"},
        {wide, "auth.keys[0].file: key file " + wide + " is accessible by group or others"}}) {
    ServerConfig c;
    Status s =
        LoadConfigText("auth:\n  mode: tokens\n  keys:\n    - {id: k1, file: " + file + "}\n", &c);
    EXPECT_NE(s.message().find(expected), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("c.yaml"), std::string::npos) << s.ToString();
  }
  ServerConfig off;  // not read while tokens are off (the installed unit starts without one)
  EXPECT_TRUE(LoadConfigText("auth:\n  mode: off\n  keys:\n    - {id: k1, file: " +
                                 dir.Sub("missing.key") + "}\n",
                             &off)
                  .ok());
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
