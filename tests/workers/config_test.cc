// The worker's YAML: every key, scalars as lists, fail-fast messages.
#include "apply/worker_config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "testing/temp_dir.h"
#include "workers/archive_rules.h"

namespace sidetable::workers {
namespace {

const char* kFull = R"(
kafka:
  bootstrap: 127.0.0.1:9092
  bootstrap_file: /tmp/x
  bootstrap_wait_ms: 5
  topic: [a.changes, b.changes]
  group: g1
  session_timeout_ms: 6000
  commit_batch: 10
  commit_interval_ms: 50
  poll_batch: 500
  properties:
    security.protocol: plaintext
sidecar:
  endpoint: tcp://127.0.0.1:7000
  timeout_ms: 900
  caller: w1
  inflight: 4
  curve_server_key_file: /etc/sidetable/sidecar.pub
  curve_key_file: /etc/sidetable/w1.key
retry:
  max_attempts: 3
  max_wait_seconds: 45
  backoff_ms: 20
  backoff_max_ms: 200
  fence_attempts: 5
lag:
  max_seconds: 12
dead_letter:
  topic: dlq
http: 127.0.0.1:0
ready_file: /tmp/ready
log:
  level: debug
  format: json
patterns:
  - name: index_table
    source: Employees
    target: EmployeesByName
    properties: [LastName, Email]
  - name: archive
    source: Orders
    target: OrdersArchive
    min_age_seconds: 3600
)";

TEST(WorkerConfigTest, ReadsEveryKey) {
  apply::WorkerConfig c;
  ASSERT_TRUE(apply::LoadWorkerConfigText(kFull, "t.yaml", &c).ok());
  EXPECT_EQ(c.bootstrap, "127.0.0.1:9092");
  EXPECT_EQ(c.bootstrap_file, "/tmp/x");
  EXPECT_EQ(c.bootstrap_wait_ms, 5);
  EXPECT_EQ(c.topics, (std::vector<std::string>{"a.changes", "b.changes"}));
  EXPECT_EQ(c.group, "g1");
  EXPECT_EQ(c.session_timeout_ms, 6000);
  EXPECT_EQ(c.commit_batch, 10);
  EXPECT_EQ(c.commit_interval_ms, 50);
  EXPECT_EQ(c.poll_batch, 500);
  EXPECT_EQ(c.inflight, 4);
  EXPECT_EQ(c.curve_server_key_file, "/etc/sidetable/sidecar.pub");
  EXPECT_EQ(c.curve_key_file, "/etc/sidetable/w1.key");
  EXPECT_EQ(c.lag_max_seconds, 12);
  EXPECT_EQ(c.properties.at("security.protocol"), "plaintext");
  EXPECT_EQ(c.endpoint, "tcp://127.0.0.1:7000");
  EXPECT_EQ(c.timeout_ms, 900);
  EXPECT_EQ(c.caller, "w1");
  EXPECT_EQ(c.max_attempts, 3);
  EXPECT_EQ(c.max_wait_seconds, 45);
  EXPECT_EQ(c.backoff_ms, 20);
  EXPECT_EQ(c.backoff_max_ms, 200);
  EXPECT_EQ(c.fence_attempts, 5);
  EXPECT_EQ(c.dead_letter_topic, "dlq");
  EXPECT_EQ(c.http, "127.0.0.1:0");
  EXPECT_EQ(c.ready_file, "/tmp/ready");
  EXPECT_EQ(c.log_level, "debug");
  EXPECT_EQ(c.log_format, "json");
  ASSERT_EQ(c.patterns.size(), 2u);
  EXPECT_EQ(c.patterns[0].name, "index_table");
  EXPECT_EQ(c.patterns[0].settings.at("source"), std::vector<std::string>{"Employees"}) << "scalar -> list of one";
  EXPECT_EQ(c.patterns[0].settings.at("properties"), (std::vector<std::string>{"LastName", "Email"}));
  EXPECT_EQ(c.patterns[1].settings.at("min_age_seconds"), std::vector<std::string>{"3600"});
  EXPECT_TRUE(apply::ValidateWorkerConfig(c).ok()) << apply::ValidateWorkerConfig(c).ToString();
  std::vector<ArchiveRule> rules;
  ASSERT_TRUE(ParseArchiveRules(c.patterns, &rules).ok());
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].min_age_seconds(), 3600);
}

TEST(WorkerConfigTest, ScalarTopicAndShippedConfigsLoad) {
  apply::WorkerConfig c;
  ASSERT_TRUE(apply::LoadWorkerConfigText("kafka:\n  topic: one\n", "t", &c).ok());
  EXPECT_EQ(c.topics, std::vector<std::string>{"one"});
  for (const char* f : {"configs/worker.dev.yaml", "configs/worker.prod.yaml", "compose/config/worker.yaml"}) {
    apply::WorkerConfig shipped;
    Status s = apply::LoadWorkerConfigFile(std::string(SIDETABLE_SOURCE_DIR) + "/" + f, &shipped);
    ASSERT_TRUE(s.ok()) << f << ": " << s.ToString();
    EXPECT_TRUE(apply::ValidateWorkerConfig(shipped).ok()) << f << ": " << apply::ValidateWorkerConfig(shipped).ToString();
    std::vector<ArchiveRule> rules;
    EXPECT_TRUE(ParseArchiveRules(shipped.patterns, &rules).ok()) << f;
    EXPECT_EQ(rules.size(), 1u) << f;
    patterns::RegisterBuiltinPatterns();
    for (const auto& pc : shipped.patterns) {
      auto p = patterns::CreatePattern(pc);
      EXPECT_TRUE(p.ok()) << f << ": " << p.status().ToString();
    }
  }
}

struct BadCase {
  const char* yaml;
  const char* names;  // the message must contain this
};

TEST(WorkerConfigTest, BadConfigNamesTheKey) {
  const BadCase cases[] = {
      {"kafka:\n  bootstrp: x\n", "kafka.bootstrp"},
      {"kafak:\n  bootstrap: x\n", "kafak"},
      {"retry:\n  max_attempts: many\n", "retry.max_attempts"},
      {"retry:\n  max_wait_seconds: 2m\n", "retry.max_wait_seconds"},
      {"kafka:\n  properties: [a]\n", "kafka.properties"},
      {"patterns:\n  - source: x\n", "patterns[0].name"},
      {"patterns:\n  - name: index_table\n    source: {a: b}\n", "patterns[0].source"},
      {"patterns: 3\n", "patterns"},
      {"kafka: [\n", "t.yaml"},
  };
  for (const auto& bc : cases) {
    apply::WorkerConfig c;
    Status s = apply::LoadWorkerConfigText(bc.yaml, "t.yaml", &c);
    ASSERT_FALSE(s.ok()) << bc.yaml;
    EXPECT_EQ(s.code(), Code::kInvalidInput);
    EXPECT_NE(s.message().find(bc.names), std::string::npos) << s.message();
  }
}

TEST(WorkerConfigTest, ValidationNamesTheKey) {
  auto valid = [] {
    apply::WorkerConfig c;
    c.bootstrap = "x:1";
    c.patterns.push_back({"index_table", {}});
    return c;
  };
  ASSERT_TRUE(apply::ValidateWorkerConfig(valid()).ok());
  struct {
    std::function<void(apply::WorkerConfig*)> mutate;
    const char* key;
  } cases[] = {
      {[](apply::WorkerConfig* c) { c->bootstrap.clear(); }, "kafka.bootstrap"},
      {[](apply::WorkerConfig* c) { c->group.clear(); }, "kafka.group"},
      {[](apply::WorkerConfig* c) { c->topics.clear(); }, "kafka.topic"},
      {[](apply::WorkerConfig* c) { c->endpoint = "http://x"; }, "sidecar.endpoint"},
      {[](apply::WorkerConfig* c) { c->max_attempts = 0; }, "retry.max_attempts"},
      {[](apply::WorkerConfig* c) { c->backoff_max_ms = 1; }, "retry.backoff_max_ms"},
      {[](apply::WorkerConfig* c) { c->dead_letter_topic = c->topics[0]; }, "dead_letter.topic"},
      {[](apply::WorkerConfig* c) { c->http = "nohost"; }, "http"},
      {[](apply::WorkerConfig* c) { c->log_format = "xml"; }, "log.format"},
      {[](apply::WorkerConfig* c) { c->log_level = "loud"; }, "log.level"},
      {[](apply::WorkerConfig* c) { c->patterns.clear(); }, "patterns"},
      {[](apply::WorkerConfig* c) { c->poll_batch = 0; }, "kafka.poll_batch"},
      {[](apply::WorkerConfig* c) { c->poll_batch = 100001; }, "kafka.poll_batch"},
      {[](apply::WorkerConfig* c) { c->inflight = 0; }, "sidecar.inflight"},
      {[](apply::WorkerConfig* c) { c->curve_key_file = "w.key"; },
       "sidecar.curve_server_key_file"},
      {[](apply::WorkerConfig* c) { c->curve_server_key_file = "s.pub"; },
       "sidecar.curve_key_file"},
      {[](apply::WorkerConfig* c) { c->lag_max_seconds = 0; }, "lag.max_seconds"},
      {[](apply::WorkerConfig* c) { c->max_wait_seconds = -1; },
       "retry.max_wait_seconds must be 0..86400"},
      // The worker does not poll while it waits: a wait as long as
      // librdkafka's max.poll.interval.ms (300 s) would cost it its partitions.
      {[](apply::WorkerConfig* c) { c->max_wait_seconds = 300; },
       "retry.max_wait_seconds (300 s) must be below the consumer's max.poll.interval.ms (300000 "
       "ms, librdkafka's"},
      {[](apply::WorkerConfig* c) { c->properties["max.poll.interval.ms"] = "60000"; },
       "max.poll.interval.ms (60000 ms, kafka.properties)"},
  };
  for (const auto& bc : cases) {
    apply::WorkerConfig c = valid();
    bc.mutate(&c);
    Status s = apply::ValidateWorkerConfig(c);
    ASSERT_FALSE(s.ok()) << bc.key;
    EXPECT_NE(s.message().find(bc.key), std::string::npos) << s.message();
  }
}

TEST(WorkerConfigTest, AWaitLongerThanTheDefaultPollIntervalNeedsItRaised) {
  apply::WorkerConfig c;
  c.bootstrap = "x:1";
  c.patterns.push_back({"index_table", {}});
  EXPECT_EQ(c.max_wait_seconds, 120) << "the default covers a scale-out hand-over (19-30 s)";
  c.max_wait_seconds = 600;
  c.properties["max.poll.interval.ms"] = "900000";
  EXPECT_TRUE(apply::ValidateWorkerConfig(c).ok()) << apply::ValidateWorkerConfig(c).ToString();
  c.max_wait_seconds = 0;  // off: a busy sidecar counts attempts
  EXPECT_TRUE(apply::ValidateWorkerConfig(c).ok());
}

TEST(WorkerConfigTest, BootstrapFromFile) {
  testing::TempDir dir;
  apply::WorkerConfig c;
  c.bootstrap_file = dir.Sub("kafka.bootstrap");
  c.bootstrap_wait_ms = 0;
  // No file: the sidecar is not up. Not bad configuration (exit 1, not 2),
  // and the message says what was waited for.
  Status missing = apply::ResolveBootstrap(&c);
  EXPECT_EQ(missing.code(), Code::kUnavailable);
  EXPECT_NE(missing.message().find("waited 0 ms for the sidecar to create '" + c.bootstrap_file),
            std::string::npos)
      << missing.message();
  std::ofstream(c.bootstrap_file) << "\n";
  EXPECT_NE(apply::ResolveBootstrap(&c).message().find("to write a bootstrap address into"),
            std::string::npos);
  std::ofstream(c.bootstrap_file) << "127.0.0.1:39092\n";
  ASSERT_TRUE(apply::ResolveBootstrap(&c).ok());
  EXPECT_EQ(c.bootstrap, "127.0.0.1:39092");
}

// yaml-cpp keeps a repeated key and answers with the first one.
TEST(WorkerConfigTest, AKeyWrittenTwiceIsRefused) {
  testing::TempDir dir;
  const std::string path = dir.Sub("twice.yaml");
  std::ofstream(path) << "kafka:\n  group: a\n  group: b\npatterns:\n  - name: index_table\n";
  apply::WorkerConfig c;
  Status s = apply::LoadWorkerConfigFile(path, &c);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("key 'kafka.group' appears twice"), std::string::npos) << s.message();
}

// The worker and sidetable-cli verify both load through here: two patterns
// on one index table stop either with a message naming them (worker exit 2).
TEST(WorkerConfigTest, TwoPatternsWritingOneIndexTableAreRefused) {
  apply::WorkerConfig c;
  Status s = apply::LoadWorkerConfigText(
      "patterns:\n"
      "  - {name: index_table, source: SrcA, target: SharedIdx, properties: Email}\n"
      "  - {name: index_table, source: SrcB, target: SharedIdx, properties: Email}\n",
      "t.yaml", &c);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find(
                "t.yaml: patterns[0] (index_table) and patterns[1] (index_table) both write table"),
            std::string::npos)
      << s.message();
}

// An archive whose source is an index table moved its entries out of it (the
// index emptied, seen from outside in session 39).
TEST(WorkerConfigTest, AnArchiveOfAnIndexTableIsRefused) {
  apply::WorkerConfig c;
  Status s = apply::LoadWorkerConfigText(
      "patterns:\n"
      "  - {name: index_table, source: Emp, target: EmpIdx, properties: Email}\n"
      "  - {name: archive, source: empidx, target: EmpIdxOld, min_age_seconds: 1}\n",
      "t.yaml", &c);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("patterns[1] (archive) moves entities out of table 'EmpIdx'"),
            std::string::npos)
      << s.message();
}

TEST(WorkerConfigTest, ArchiveFilterAddsTheAge) {
  std::vector<ArchiveRule> rules;
  patterns::PatternConfig pc{"archive", {{"source", {"Orders"}}, {"target", {"OrdersArchive"}},
                                         {"filter", {"Status eq 'done'"}}, {"min_age_seconds", {"60"}}}};
  ASSERT_TRUE(ParseArchiveRules({pc}, &rules).ok());
  ASSERT_EQ(rules.size(), 1u);
  const int64_t now = *ParseDateTime("2026-01-01T00:01:00Z");
  EXPECT_EQ(ArchiveFilter(rules[0], now),
            "(Status eq 'done') and Timestamp lt datetime'2026-01-01T00:00:00.0000000Z'");
  pc.settings["min_age_seconds"] = {"soon"};
  EXPECT_FALSE(ParseArchiveRules({pc}, &rules).ok());
}

}  // namespace
}  // namespace sidetable::workers
