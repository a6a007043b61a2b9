#include "sidecar/config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "testing/temp_dir.h"

namespace sidetable::sidecar {
namespace {

TEST(Config, ExampleFilesLoadAndValidate) {
  for (const char* name : {"sidetable.dev.yaml", "sidetable.prod.yaml"}) {
    ServerConfig c;
    Status s = LoadConfigFile(std::string(ST_CONFIG_DIR) + "/" + name, &c);
    ASSERT_TRUE(s.ok()) << name << ": " << s.ToString();
    EXPECT_TRUE(ValidateConfig(c).ok()) << name;
    EXPECT_FALSE(c.listen.empty());
  }
  ServerConfig prod;
  ASSERT_TRUE(LoadConfigFile(std::string(ST_CONFIG_DIR) + "/sidetable.prod.yaml", &prod).ok());
  EXPECT_EQ(prod.engine.durability, Durability::kFsync);
  EXPECT_EQ(prod.listen.size(), 2u);
  EXPECT_EQ(prod.engine.block_cache_bytes, size_t{1024} << 20);
  EXPECT_EQ(prod.log_format, "json");
}

Status LoadText(const std::string& text, ServerConfig* c) {
  testing::TempDir dir;
  std::string path = dir.Sub("c.yaml");
  std::ofstream(path) << text;
  return LoadConfigFile(path, c);
}

TEST(Config, ErrorsNameTheKey) {
  ServerConfig c;
  Status s = LoadText("storage:\n  durability: maybe\n", &c);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("storage.durability"), std::string::npos);
  s = LoadText("bogus:\n  a: 1\n", &c);
  EXPECT_NE(s.message().find("bogus"), std::string::npos);
  s = LoadText("sidecar:\n  workers: lots\n", &c);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  s = LoadText("sidecar: [unclosed\n", &c);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_EQ(LoadConfigFile("/nonexistent/x.yaml", &c).code(), Code::kInvalidInput);
}

TEST(Config, ValidationRanges) {
  ServerConfig c;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.listen = {"http://x"};
  EXPECT_EQ(ValidateConfig(c).code(), Code::kInvalidInput);
  c = ServerConfig();
  c.listen.clear();
  EXPECT_EQ(ValidateConfig(c).code(), Code::kInvalidInput);
  c = ServerConfig();
  c.workers = 0;
  EXPECT_EQ(ValidateConfig(c).code(), Code::kInvalidInput);
  c = ServerConfig();
  c.log_format = "xml";
  EXPECT_EQ(ValidateConfig(c).code(), Code::kInvalidInput);
  c = ServerConfig();
  c.max_request_bytes = 10;
  EXPECT_EQ(ValidateConfig(c).code(), Code::kInvalidInput);
  // Admission bounds (issue 12): below one request, or per connection above the total.
  c = ServerConfig();
  c.max_inflight_bytes = c.max_request_bytes - 1;
  EXPECT_EQ(ValidateConfig(c).code(), Code::kInvalidInput);
  c = ServerConfig();
  c.max_inflight_per_connection = 0;
  EXPECT_EQ(ValidateConfig(c).code(), Code::kInvalidInput);
  c = ServerConfig();
  c.max_inflight_bytes_per_connection = c.max_inflight_bytes + 1;
  EXPECT_EQ(ValidateConfig(c).code(), Code::kInvalidInput);
  c = ServerConfig();
  c.shutdown_grace_ms = -1;
  EXPECT_EQ(ValidateConfig(c).code(), Code::kInvalidInput);
}

TEST(Config, AdmissionKeysLoad) {
  ServerConfig c;
  ASSERT_TRUE(LoadText("sidecar:\n  max_inflight_bytes: 8388608\n  max_inflight_per_connection: 4\n"
                       "  max_inflight_bytes_per_connection: 7340032\n", &c).ok());
  EXPECT_EQ(c.max_inflight_bytes, 8388608u);
  EXPECT_EQ(c.max_inflight_per_connection, 4u);
  EXPECT_EQ(c.max_inflight_bytes_per_connection, 7340032u);
  EXPECT_TRUE(ValidateConfig(c).ok());
}

}  // namespace
}  // namespace sidetable::sidecar
