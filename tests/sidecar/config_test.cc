#include "sidecar/config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "testing/temp_dir.h"
#include "tests/sidecar/config_text.h"

namespace sidetable::sidecar {
namespace {

// compose/ mounts its own sidecar config: it must load as strictly as the examples.
TEST(Config, ComposeConfigLoadsAndValidates) {
  ServerConfig c;
  Status s = LoadConfigFile(std::string(ST_CONFIG_DIR) + "/../compose/config/sidetable.yaml", &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(ValidateConfig(c).ok());
  EXPECT_EQ(c.kafka.replication_factor, 1) << "compose runs one broker";
}

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
  EXPECT_EQ(prod.engine.row_cache_bytes, size_t{256} << 20);
  EXPECT_EQ(prod.log_format, "json");
}

TEST(Config, ErrorsNameTheKey) {
  ServerConfig c;
  Status s = LoadConfigText("storage:\n  durability: maybe\n", &c);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("storage.durability"), std::string::npos);
  s = LoadConfigText("bogus:\n  a: 1\n", &c);
  EXPECT_NE(s.message().find("bogus"), std::string::npos);
  s = LoadConfigText("sidecar:\n  workers: lots\n", &c);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  s = LoadConfigText("sidecar: [unclosed\n", &c);
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
  ASSERT_TRUE(LoadConfigText("sidecar:\n  max_inflight_bytes: 8388608\n  max_inflight_per_connection: 4\n"
                       "  max_inflight_bytes_per_connection: 7340032\n", &c).ok());
  EXPECT_EQ(c.max_inflight_bytes, 8388608u);
  EXPECT_EQ(c.max_inflight_per_connection, 4u);
  EXPECT_EQ(c.max_inflight_bytes_per_connection, 7340032u);
  EXPECT_TRUE(ValidateConfig(c).ok());
}

// sidecar.max_connections (connection_limit.h): read, and refused with the
// key named outside 1..1,000,000 or negative; the default is 1024.
TEST(Config, MaxConnectionsLoadsAndIsBounded) {
  ServerConfig c;
  EXPECT_EQ(c.max_connections, 1024u);
  ASSERT_TRUE(LoadConfigText("sidecar:\n  max_connections: 50\n", &c).ok());
  EXPECT_EQ(c.max_connections, 50u);
  EXPECT_TRUE(ValidateConfig(c).ok());
  for (const char* bad : {"0", "1000001"}) {
    ServerConfig b;
    ASSERT_TRUE(LoadConfigText(std::string("sidecar:\n  max_connections: ") + bad + "\n", &b).ok())
        << bad;
    const Status st = ValidateConfig(b);
    EXPECT_EQ(st.code(), Code::kInvalidInput) << bad;
    EXPECT_NE(st.message().find("sidecar.max_connections"), std::string::npos) << st.message();
  }
  ServerConfig n;
  const Status st = LoadConfigText("sidecar:\n  max_connections: -5\n", &n);
  EXPECT_EQ(st.code(), Code::kInvalidInput);
  EXPECT_NE(st.message().find("sidecar.max_connections"), std::string::npos) << st.message();
  EXPECT_EQ(n.max_connections, 1024u);  // unchanged
}

TEST(Config, InlineAloneMaxBytesLoads) {
  ServerConfig c;
  EXPECT_EQ(c.inline_alone_max_bytes, size_t{256} << 10);
  ASSERT_TRUE(LoadConfigText("sidecar:\n  inline_alone_max_bytes: 0\n", &c).ok());
  EXPECT_EQ(c.inline_alone_max_bytes, 0u);  // off
  ASSERT_TRUE(LoadConfigText("sidecar:\n  inline_alone_max_bytes: 1048576\n", &c).ok());
  EXPECT_EQ(c.inline_alone_max_bytes, size_t{1} << 20);
  ServerConfig bad;
  Status s = LoadConfigText("sidecar:\n  inline_alone_max_bytes: -1\n", &bad);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("sidecar.inline_alone_max_bytes"), std::string::npos) << s.message();
  EXPECT_EQ(bad.inline_alone_max_bytes, ServerConfig().inline_alone_max_bytes);
  // The shipped files say it, and say the default.
  for (const char* name : {"sidetable.dev.yaml", "sidetable.prod.yaml", "../compose/config/sidetable.yaml",
                           "../compose/config/sidetable.scale-out.yaml"}) {
    ServerConfig f;
    ASSERT_TRUE(LoadConfigFile(std::string(ST_CONFIG_DIR) + "/" + name, &f).ok()) << name;
    EXPECT_EQ(f.inline_alone_max_bytes, size_t{256} << 10) << name;
  }
}

TEST(Config, QueryPrefetchLoadsInMiB) {
  ServerConfig c;
  EXPECT_EQ(c.query_prefetch_bytes, uint64_t{64} << 20);
  ASSERT_TRUE(LoadConfigText("query:\n  prefetch_mb: 8\n", &c).ok());
  EXPECT_EQ(c.query_prefetch_bytes, uint64_t{8} << 20);
  ASSERT_TRUE(LoadConfigText("query:\n  prefetch_mb: 0\n", &c).ok());
  EXPECT_EQ(c.query_prefetch_bytes, 0u);  // off
  EXPECT_TRUE(ValidateConfig(c).ok());
  ServerConfig bad;
  Status s = LoadConfigText("query:\n  prefetch_mb: -1\n", &bad);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("query.prefetch_mb"), std::string::npos) << s.message();
  EXPECT_EQ(bad.query_prefetch_bytes, ServerConfig().query_prefetch_bytes);
  // The shipped files say it, and say the default.
  for (const char* name : {"sidetable.dev.yaml", "sidetable.prod.yaml", "../compose/config/sidetable.yaml"}) {
    ServerConfig f;
    ASSERT_TRUE(LoadConfigFile(std::string(ST_CONFIG_DIR) + "/" + name, &f).ok()) << name;
    EXPECT_EQ(f.query_prefetch_bytes, uint64_t{64} << 20) << name;
  }
}

TEST(Config, WriteImagesOnceLoadsAsABoolean) {
  ServerConfig c;
  EXPECT_TRUE(c.engine.write_images_once);
  ASSERT_TRUE(LoadConfigText("changelog:\n  write_images_once: false\n", &c).ok());
  EXPECT_FALSE(c.engine.write_images_once);
  ServerConfig d;
  Status bad = LoadConfigText("changelog:\n  write_images_once: sometimes\n", &d);
  EXPECT_EQ(bad.code(), Code::kInvalidInput);
  EXPECT_NE(bad.message().find("changelog.write_images_once"), std::string::npos) << bad.ToString();
  EXPECT_TRUE(d.engine.write_images_once) << "a refused file changed the setting";
  ServerConfig dev;
  ASSERT_TRUE(LoadConfigFile(std::string(ST_CONFIG_DIR) + "/sidetable.dev.yaml", &dev).ok());
  EXPECT_TRUE(dev.engine.write_images_once);
}

// kafka.bootstrap: none is no change stream, as --kafka none is (it was
// taken for a host called "none", retried forever).
TEST(Config, KafkaBootstrapNoneIsNoChangeStream) {
  ServerConfig c;
  ASSERT_TRUE(LoadConfigText("kafka:\n  bootstrap: embedded\n", &c).ok());
  EXPECT_EQ(c.kafka.bootstrap, "embedded");
  ASSERT_TRUE(LoadConfigText("kafka:\n  bootstrap: none\n", &c).ok());
  EXPECT_EQ(c.kafka.bootstrap, "");
  ASSERT_TRUE(LoadConfigText("kafka:\n  bootstrap: nonesuch:9092\n", &c).ok());
  EXPECT_EQ(c.kafka.bootstrap, "nonesuch:9092");
}

// A value written twice would be ignored by yaml-cpp (the first wins).
TEST(Config, KeysWrittenTwiceAreRefusedAndChangeNothing) {
  ServerConfig c;
  Status twice = LoadConfigText("storage:\n  durability: os\n  durability: fsync\n", &c);
  EXPECT_EQ(twice.code(), Code::kInvalidInput);
  EXPECT_NE(twice.message().find("storage.durability: appears twice"), std::string::npos)
      << twice.ToString();
  EXPECT_EQ(c.engine.durability, ServerConfig().engine.durability);
  // The same rule in the sections other loaders read (auth, rest).
  for (const auto& [yaml, key] :
       {std::pair<std::string, std::string>{"auth:\n  mode: off\n  mode: tokens\n", "auth.mode"},
        {"rest:\n  max_body_mb: 4\n  max_body_mb: 8\n", "rest.max_body_mb"}}) {
    ServerConfig d;
    Status s = LoadConfigText(yaml, &d);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << yaml;
    EXPECT_NE(s.message().find(key + ": appears twice"), std::string::npos) << s.ToString();
  }
}

TEST(Config, RowCacheLoadsInMiB) {
  ServerConfig c;
  EXPECT_EQ(c.engine.row_cache_bytes, size_t{64} << 20);
  ASSERT_TRUE(LoadConfigText("storage:\n  row_cache_mb: 8\n", &c).ok());
  EXPECT_EQ(c.engine.row_cache_bytes, size_t{8} << 20);
  ASSERT_TRUE(LoadConfigText("storage:\n  row_cache_mb: 0\n", &c).ok());
  EXPECT_EQ(c.engine.row_cache_bytes, 0u);  // off
  EXPECT_TRUE(ValidateConfig(c).ok());
  // Every shipped file says it: the RSS ceiling (docs/operations.md) counts it.
  for (const char* name : {"sidetable.dev.yaml", "../compose/config/sidetable.yaml",
                           "../compose/config/sidetable.scale-out.yaml"}) {
    ServerConfig f;
    ASSERT_TRUE(LoadConfigFile(std::string(ST_CONFIG_DIR) + "/" + name, &f).ok()) << name;
    EXPECT_EQ(f.engine.row_cache_bytes, size_t{64} << 20) << name;
  }
}

// Issue 16: a typo inside a section used to be ignored, so `durabilty: os`
// silently meant fsync. Each must fail naming the file and the key, and
// leave the configuration as it was.
TEST(Config, UnknownKeysInsideSectionsNameTheKeyAndTheFile) {
  testing::TempDir dir;
  const std::string path = dir.Sub("typo.yaml");
  const std::pair<const char*, const char*> cases[] = {
      {"sidecar:\n  id: changed\n  listn: tcp://127.0.0.1:1\n", "sidecar.listn"},
      {"sidecar:\n  id: changed\n  wrkers: 8\n", "sidecar.wrkers"},
      {"sidecar:\n  id: changed\nstorage:\n  durabilty: os\n", "storage.durabilty"},
      {"sidecar:\n  id: changed\nkafka:\n  partition: 3\n", "kafka.partition"},
      {"sidecar:\n  id: changed\nlog:\n  lvl: debug\n", "log.lvl"},
      {"sidecar:\n  id: changed\nchangelog:\n  max_age: 1\n", "changelog.max_age"},
      {"sidecar:\n  id: changed\nquery:\n  max_examine: 1\n", "query.max_examine"},
  };
  for (const auto& [text, key] : cases) {
    std::ofstream(path) << text;
    ServerConfig c;
    c.id = "before";
    Status s = LoadConfigFile(path, &c);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << text;
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
    EXPECT_NE(s.message().find(key), std::string::npos) << s.message();
    EXPECT_EQ(c.id, "before") << "a file that fails changes nothing: " << text;
    EXPECT_EQ(c.engine.durability, Durability::kFsync);
  }
}

TEST(Config, BadValuesNameTheKeyAndTheFile) {
  testing::TempDir dir;
  const std::string path = dir.Sub("bad.yaml");
  const std::pair<const char*, const char*> cases[] = {
      {"sidecar:\n  workers: lots\n", "sidecar.workers"},
      {"sidecar:\n  queue_depth: -5\n", "sidecar.queue_depth"},
      {"sidecar:\n  listen: {a: b}\n", "sidecar.listen"},
      {"storage:\n  block_cache_mb: -1\n", "storage.block_cache_mb"},
      {"storage:\n  row_cache_mb: -1\n", "storage.row_cache_mb"},
      {"storage:\n  row_cache_mb: lots\n", "storage.row_cache_mb"},
      {"storage:\n  durability: [os]\n", "storage.durability"},
      {"storage:\n  durability: sometimes\n", "storage.durability"},
      {"kafka:\n  partitions: twelve\n", "kafka.partitions"},
      {"kafka:\n  properties: [acks]\n", "kafka.properties"},
      {"kafka:\n  properties:\n    acks: [all]\n", "kafka.properties.acks"},
      {"log: verbose\n", "log"},
  };
  for (const auto& [text, key] : cases) {
    std::ofstream(path) << text;
    ServerConfig c;
    Status s = LoadConfigFile(path, &c);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << text;
    EXPECT_NE(s.message().find(path + ": " + key), std::string::npos) << s.message();
    EXPECT_EQ(c.workers, ServerConfig().workers);
    EXPECT_EQ(c.engine.block_cache_bytes, ServerConfig().engine.block_cache_bytes);
    EXPECT_EQ(c.engine.row_cache_bytes, ServerConfig().engine.row_cache_bytes);
  }
}

TEST(Config, RangeErrorsNameTheKey) {
  ServerConfig c;
  c.log_level = "loud";
  EXPECT_NE(ValidateConfig(c).message().find("log.level"), std::string::npos);
  c = ServerConfig();
  c.retention_interval_seconds = 0;
  EXPECT_NE(ValidateConfig(c).message().find("changelog.check_interval_seconds"), std::string::npos);
  c = ServerConfig();
  c.kafka.watermark_flush_ms = 0;
  EXPECT_NE(ValidateConfig(c).message().find("kafka.watermark_flush_ms"), std::string::npos);
  c = ServerConfig();
  c.engine.changelog_max_age_seconds = -1;
  EXPECT_NE(ValidateConfig(c).message().find("changelog.max_age_seconds"), std::string::npos);
}

TEST(Config, EmptyFileAndEmptySectionsKeepTheDefaults) {
  ServerConfig c;
  ASSERT_TRUE(LoadConfigText("", &c).ok());
  ASSERT_TRUE(LoadConfigText("sidecar:\nstorage:\nkafka:\n  properties:\n", &c).ok());
  EXPECT_EQ(c.workers, ServerConfig().workers);
  EXPECT_TRUE(ValidateConfig(c).ok());
}

}  // namespace
}  // namespace sidetable::sidecar
