#include "sidecar/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <type_traits>

#include "common/http_endpoint.h"
#include "common/yaml_keys.h"
#include "sidecar/backup.h"
#include "sidecar/listener_policy.h"

namespace sidetable::sidecar {
namespace {

// Every message names the file and the key, as `sidetable --config` prints it
// ("configs/x.yaml: storage.durabilty: unknown key").
class FileReader {
 public:
  explicit FileReader(std::string path) : path_(std::move(path)) {}

  Status Bad(const std::string& key, const std::string& message) const {
    return Status(Code::kInvalidInput, path_ + ": " + key + ": " + message);
  }

  // A section must be a map whose keys are all in `allowed`: a typo such as
  // `durabilty` used to be ignored and leave the default in force.
  Status Section(const YAML::Node& root, const std::string& name, const std::set<std::string>& allowed,
                 YAML::Node* out) const {
    const YAML::Node node = root[name];
    if (!node || node.IsNull()) return Status::OK();  // absent or empty: the defaults
    out->reset(node);  // rebinds (operator= would assign into the node)
    if (!out->IsMap()) return Bad(name, "must be a map of settings");
    if (auto bad = common::FindBadKey(*out, allowed))
      return Bad(name + "." + bad->key, bad->message);
    return Status::OK();
  }

  template <typename T>
  Status Read(const YAML::Node& section, const std::string& name, const char* key, T* out) const {
    if (!section || !section[key]) return Status::OK();
    const YAML::Node v = section[key];
    // yaml-cpp reads "-1" into an unsigned as a huge number: refuse the sign.
    if constexpr (std::is_unsigned_v<T>) {
      if (v.IsScalar() && !v.Scalar().empty() && v.Scalar()[0] == '-') {
        return Bad(name + "." + key, "must not be negative, got " + v.Scalar());
      }
    }
    if (!v.IsScalar()) return Bad(name + "." + key, "must be a single value");
    try {
      *out = v.as<T>();
    } catch (const YAML::Exception&) {
      return Bad(name + "." + key, "not a valid " + TypeName<T>() + ": '" + v.Scalar() + "'");
    }
    return Status::OK();
  }

  // Megabytes into bytes, refusing values whose byte count would overflow.
  Status ReadMb(const YAML::Node& section, const std::string& name, const char* key, uint64_t* bytes) const {
    if (!section || !section[key]) return Status::OK();
    uint64_t mb = 0;
    ST_RETURN_IF_ERROR(Read(section, name, key, &mb));
    if (mb > (uint64_t{1} << 30)) return Bad(name + "." + key, "too large: " + std::to_string(mb) + " MiB");
    *bytes = mb << 20;
    return Status::OK();
  }

 private:
  template <typename T>
  static std::string TypeName() {
    if constexpr (std::is_same_v<T, std::string>) return "string";
    else if constexpr (std::is_same_v<T, bool>) return "boolean (true or false)";
    else if constexpr (std::is_unsigned_v<T>) return "non-negative integer";
    else return "integer";
  }
  const std::string path_;
};

Status LoadSidecar(const FileReader& f, const YAML::Node& root, ServerConfig* c) {
  YAML::Node s;
  ST_RETURN_IF_ERROR(f.Section(
      root, "sidecar",
      {"id", "listen", "workers", "queue_depth", "inline_max_bytes", "inline_alone_max_bytes",
       "max_request_bytes", "http", "ready_file", "shutdown_grace_ms", "max_inflight_bytes",
       "max_inflight_per_connection", "max_inflight_bytes_per_connection", "max_connections"},
      &s));
  if (!s) return Status::OK();
  ST_RETURN_IF_ERROR(f.Read(s, "sidecar", "id", &c->id));
  if (const YAML::Node l = s["listen"]) {
    c->listen.clear();
    if (l.IsScalar()) {
      c->listen.push_back(l.Scalar());
    } else if (l.IsSequence()) {
      for (const auto& e : l) {
        if (!e.IsScalar()) return f.Bad("sidecar.listen", "list items must be endpoints (strings)");
        c->listen.push_back(e.Scalar());
      }
    } else {
      return f.Bad("sidecar.listen", "must be an endpoint or a list of endpoints");
    }
  }
  ST_RETURN_IF_ERROR(f.Read(s, "sidecar", "workers", &c->workers));
  ST_RETURN_IF_ERROR(f.Read(s, "sidecar", "queue_depth", &c->queue_depth));
  ST_RETURN_IF_ERROR(f.Read(s, "sidecar", "inline_max_bytes", &c->inline_max_bytes));
  ST_RETURN_IF_ERROR(f.Read(s, "sidecar", "inline_alone_max_bytes", &c->inline_alone_max_bytes));
  ST_RETURN_IF_ERROR(f.Read(s, "sidecar", "max_request_bytes", &c->max_request_bytes));
  ST_RETURN_IF_ERROR(f.Read(s, "sidecar", "http", &c->http));
  ST_RETURN_IF_ERROR(f.Read(s, "sidecar", "ready_file", &c->ready_file));
  ST_RETURN_IF_ERROR(f.Read(s, "sidecar", "shutdown_grace_ms", &c->shutdown_grace_ms));
  ST_RETURN_IF_ERROR(f.Read(s, "sidecar", "max_inflight_bytes", &c->max_inflight_bytes));
  ST_RETURN_IF_ERROR(f.Read(s, "sidecar", "max_inflight_per_connection", &c->max_inflight_per_connection));
  ST_RETURN_IF_ERROR(f.Read(s, "sidecar", "max_connections", &c->max_connections));
  return f.Read(s, "sidecar", "max_inflight_bytes_per_connection", &c->max_inflight_bytes_per_connection);
}

Status LoadStorage(const FileReader& f, const YAML::Node& root, ServerConfig* c) {
  YAML::Node st, cl, q;
  ST_RETURN_IF_ERROR(f.Section(root, "storage",
                               {"path", "durability", "block_cache_mb", "row_cache_mb",
                                "write_buffer_mb", "reserve_mb", "backup_dir", "backup_keep"},
                               &st));
  ST_RETURN_IF_ERROR(f.Read(st, "storage", "path", &c->data_dir));
  std::string durability;
  ST_RETURN_IF_ERROR(f.Read(st, "storage", "durability", &durability));
  if (durability == "fsync") c->engine.durability = Durability::kFsync;
  else if (durability == "os") c->engine.durability = Durability::kOs;
  else if (!durability.empty() || (st && st["durability"])) {
    return f.Bad("storage.durability", "must be fsync or os, got '" + durability + "'");
  }
  uint64_t bytes = c->engine.block_cache_bytes;
  ST_RETURN_IF_ERROR(f.ReadMb(st, "storage", "block_cache_mb", &bytes));
  c->engine.block_cache_bytes = static_cast<size_t>(bytes);
  bytes = c->engine.row_cache_bytes;
  ST_RETURN_IF_ERROR(f.ReadMb(st, "storage", "row_cache_mb", &bytes));
  c->engine.row_cache_bytes = static_cast<size_t>(bytes);
  bytes = c->engine.write_buffer_bytes;
  ST_RETURN_IF_ERROR(f.ReadMb(st, "storage", "write_buffer_mb", &bytes));
  c->engine.write_buffer_bytes = static_cast<size_t>(bytes);
  ST_RETURN_IF_ERROR(f.ReadMb(st, "storage", "reserve_mb", &c->engine.storage_reserve_bytes));
  ST_RETURN_IF_ERROR(f.Read(st, "storage", "backup_dir", &c->backup_dir));
  ST_RETURN_IF_ERROR(f.Read(st, "storage", "backup_keep", &c->backup_keep));

  ST_RETURN_IF_ERROR(
      f.Section(root, "changelog", {"max_age_seconds", "max_bytes", "check_interval_seconds", "write_images_once"},
                &cl));
  ST_RETURN_IF_ERROR(f.Read(cl, "changelog", "max_age_seconds", &c->engine.changelog_max_age_seconds));
  ST_RETURN_IF_ERROR(f.Read(cl, "changelog", "max_bytes", &c->engine.changelog_max_bytes));
  ST_RETURN_IF_ERROR(f.Read(cl, "changelog", "check_interval_seconds", &c->retention_interval_seconds));
  ST_RETURN_IF_ERROR(f.Read(cl, "changelog", "write_images_once", &c->engine.write_images_once));
  // Exactly-once write retries (docs/protocol.md): how long and for how
  // many newer writes a client request id is remembered.
  YAML::Node rt;
  ST_RETURN_IF_ERROR(f.Section(root, "retries", {"window_seconds", "window_count"}, &rt));
  ST_RETURN_IF_ERROR(f.Read(rt, "retries", "window_seconds", &c->engine.request_id_window_seconds));
  ST_RETURN_IF_ERROR(f.Read(rt, "retries", "window_count", &c->engine.request_id_window_count));
  ST_RETURN_IF_ERROR(f.Section(root, "query", {"max_examined", "prefetch_mb"}, &q));
  ST_RETURN_IF_ERROR(f.ReadMb(q, "query", "prefetch_mb", &c->query_prefetch_bytes));
  return f.Read(q, "query", "max_examined", &c->query_max_examined);
}

Status LoadKafkaAndLog(const FileReader& f, const YAML::Node& root, ServerConfig* c) {
  YAML::Node k, l;
  ST_RETURN_IF_ERROR(f.Section(root, "kafka",
                               {"bootstrap", "topic", "partitions", "replication_factor", "embedded_brokers",
                                "bootstrap_file", "max_backlog_events", "watermark_flush_ms", "chunk_bytes",
                                "properties"},
                               &k));
  ST_RETURN_IF_ERROR(f.Read(k, "kafka", "bootstrap", &c->kafka.bootstrap));
  // As the --kafka flag: "none" is no change stream, not a broker named none.
  if (c->kafka.bootstrap == "none") c->kafka.bootstrap.clear();
  ST_RETURN_IF_ERROR(f.Read(k, "kafka", "topic", &c->kafka.topic));
  ST_RETURN_IF_ERROR(f.Read(k, "kafka", "partitions", &c->kafka.partitions));
  ST_RETURN_IF_ERROR(f.Read(k, "kafka", "replication_factor", &c->kafka.replication_factor));
  ST_RETURN_IF_ERROR(f.Read(k, "kafka", "embedded_brokers", &c->kafka.embedded_brokers));
  ST_RETURN_IF_ERROR(f.Read(k, "kafka", "bootstrap_file", &c->kafka.bootstrap_file));
  ST_RETURN_IF_ERROR(f.Read(k, "kafka", "max_backlog_events", &c->kafka.max_backlog_events));
  ST_RETURN_IF_ERROR(f.Read(k, "kafka", "watermark_flush_ms", &c->kafka.watermark_flush_ms));
  ST_RETURN_IF_ERROR(f.Read(k, "kafka", "chunk_bytes", &c->kafka.chunk_bytes));
  if (k && k["properties"] && !k["properties"].IsNull()) {
    const YAML::Node p = k["properties"];
    if (!p.IsMap()) return f.Bad("kafka.properties", "must be a map of librdkafka settings");
    for (auto it = p.begin(); it != p.end(); ++it) {
      const std::string key = it->first.as<std::string>();
      if (!it->second.IsScalar()) return f.Bad("kafka.properties." + key, "must be a single value");
      c->kafka.properties[key] = it->second.Scalar();
    }
  }
  ST_RETURN_IF_ERROR(f.Section(root, "log", {"level", "format"}, &l));
  ST_RETURN_IF_ERROR(f.Read(l, "log", "level", &c->log_level));
  return f.Read(l, "log", "format", &c->log_format);
}

// cluster.* (docs/scale-out.md, "Configuration").
Status LoadCluster(const FileReader& f, const YAML::Node& root, ServerConfig* c) {
  YAML::Node s;
  ST_RETURN_IF_ERROR(f.Section(root, "cluster",
                               {"service", "member_id", "advertise", "acks", "standby_replicas",
                                "rebalance_wait_ms", "session_timeout_ms", "topic", "state_topic",
                                "state_mark_interval_ms"},
                               &s));
  if (!s) return Status::OK();
  cluster::ClusterOptions& o = c->cluster;
  ST_RETURN_IF_ERROR(f.Read(s, "cluster", "service", &o.service));
  ST_RETURN_IF_ERROR(f.Read(s, "cluster", "member_id", &o.member_id));
  ST_RETURN_IF_ERROR(f.Read(s, "cluster", "advertise", &o.advertise));
  std::string acks;
  ST_RETURN_IF_ERROR(f.Read(s, "cluster", "acks", &acks));
  if (acks == "replicated") o.acks = cluster::AckMode::kReplicated;
  else if (acks == "local") o.acks = cluster::AckMode::kLocal;
  else if (s["acks"]) return f.Bad("cluster.acks", "must be replicated or local, got '" + acks + "'");
  ST_RETURN_IF_ERROR(f.Read(s, "cluster", "standby_replicas", &o.standby_replicas));
  ST_RETURN_IF_ERROR(f.Read(s, "cluster", "rebalance_wait_ms", &o.rebalance_wait_ms));
  ST_RETURN_IF_ERROR(f.Read(s, "cluster", "session_timeout_ms", &o.session_timeout_ms));
  ST_RETURN_IF_ERROR(f.Read(s, "cluster", "state_topic", &o.state_topic));
  ST_RETURN_IF_ERROR(f.Read(s, "cluster", "state_mark_interval_ms", &o.state_mark_interval_ms));
  return f.Read(s, "cluster", "topic", &o.topic);
}

Status ValidateCluster(const ServerConfig& c) {
  auto bad = [](std::string m) { return Status(Code::kInvalidInput, std::move(m)); };
  const cluster::ClusterOptions& o = c.cluster;
  if (!o.enabled()) {
    if (c.kafka.topic.find("{service}") != std::string::npos) {
      return bad("kafka.topic: '{service}' needs cluster.service (scale-out is off)");
    }
    return Status::OK();
  }
  // The service names Kafka topics and a consumer group.
  if (!std::all_of(o.service.begin(), o.service.end(),
                   [](unsigned char ch) { return std::isalnum(ch) || ch == '.' || ch == '_' || ch == '-'; }) ||
      o.service.size() > 100) {
    return bad("cluster.service must be 1..100 of [A-Za-z0-9._-], got '" + o.service + "'");
  }
  if (c.kafka.bootstrap.empty()) {
    return bad("kafka.bootstrap must name the service's Kafka cluster when cluster.service is set");
  }
  // Each sidecar's embedded mock is its own Kafka: two members with it were
  // two services of the same name, each serving every shard with its own
  // tables, both healthy (found trying a cluster on one machine, session 45).
  if (c.kafka.bootstrap == "embedded") {
    return bad(
        "kafka.bootstrap: embedded cannot hold a cluster (cluster.service '" + o.service +
        "'): it is a mock Kafka inside this one sidecar, so no other member shares it (each member "
        "with its own would be a service of its own, with its own tables) and it stops with this "
        "member. Give the members one Kafka: on one machine, sidetable-kafka-mock "
        "(docs/scale-out.md, "
        "\"Try a cluster on one machine\"); anywhere else, a real cluster");
  }
  if (c.kafka.topic.find("{sidecar}") != std::string::npos || c.kafka.topic.find("{table}") != std::string::npos) {
    return bad("kafka.topic must not contain {sidecar} or {table} when cluster.service is set: the service's "
               "sidecars share one change topic (e.g. sidetable.{service}.changes)");
  }
  if (o.topic.empty()) return bad("cluster.topic must not be empty");
  if (o.topic.find("{sidecar}") != std::string::npos || o.topic.find("{table}") != std::string::npos) {
    return bad("cluster.topic may contain {service}, not {sidecar} or {table}");
  }
  if (cluster::ExpandService(o.topic, o.service) == cluster::ExpandService(c.kafka.topic, o.service)) {
    return bad("cluster.topic must differ from kafka.topic");
  }
  if (!o.state_topic.empty()) {
    if (o.state_topic.find("{sidecar}") != std::string::npos || o.state_topic.find("{table}") != std::string::npos) {
      return bad("cluster.state_topic may contain {service}, not {sidecar} or {table}");
    }
    const std::string state = cluster::ExpandService(o.state_topic, o.service);
    if (state == cluster::ExpandService(c.kafka.topic, o.service) || state == cluster::ExpandService(o.topic, o.service)) {
      return bad("cluster.state_topic must differ from kafka.topic and cluster.topic");
    }
  }
  if (o.state_mark_interval_ms < 1) return bad("cluster.state_mark_interval_ms must be at least 1");
  if (o.standby_replicas < 0) return bad("cluster.standby_replicas must be 0 or more");
  if (o.rebalance_wait_ms < 1) return bad("cluster.rebalance_wait_ms must be at least 1");
  if (o.session_timeout_ms < 1) return bad("cluster.session_timeout_ms must be at least 1");
  return Status::OK();
}

// security.* (docs/security.md, "Transport"). The two switches are spelled
// true or false, nothing else: `insecure: yes` must not open a listener.
Status LoadSecurity(const FileReader& f, const YAML::Node& root, ServerConfig* c) {
  YAML::Node s;
  ST_RETURN_IF_ERROR(
      f.Section(root, "security", {"curve_secret_key_file", "curve_clients_file", "insecure", "http_public"}, &s));
  if (!s) return Status::OK();
  ST_RETURN_IF_ERROR(f.Read(s, "security", "curve_secret_key_file", &c->security.curve_secret_key_file));
  ST_RETURN_IF_ERROR(f.Read(s, "security", "curve_clients_file", &c->security.curve_clients_file));
  for (auto [key, out] : {std::pair{"insecure", &c->security.insecure}, {"http_public", &c->security.http_public}}) {
    if (!s[key]) continue;
    const YAML::Node v = s[key];
    if (!v.IsScalar() || (v.Scalar() != "true" && v.Scalar() != "false")) {
      return f.Bad(std::string("security.") + key, "must be true or false, got '" + (v.IsScalar() ? v.Scalar() : "") + "'");
    }
    *out = v.Scalar() == "true";
  }
  Status loaded = LoadSecurityKeys(&c->security);
  if (!loaded.ok()) {
    // "security.curve_secret_key_file: key file ...": split off the key.
    const std::string& m = loaded.message();
    const size_t colon = m.find(": ");
    return f.Bad(m.substr(0, colon), m.substr(colon + 2));
  }
  return Status::OK();
}

}  // namespace

Status LoadConfigFile(const std::string& path, ServerConfig* config) {
  const FileReader f(path);
  // Read into a copy: a file that fails leaves *config as it was.
  ServerConfig c = *config;
  // yaml-cpp says only "bad file" for a file it cannot open.
  if (std::ifstream probe(path); !probe) {
    return Status(Code::kInvalidInput, path + ": cannot read the file: " + std::strerror(errno));
  }
  try {
    YAML::Node root = YAML::LoadFile(path);
    if (root.IsNull()) return Status::OK();  // an empty file: all defaults
    if (!root.IsMap()) return Status(Code::kInvalidInput, path + ": the document must be a map of sections");
    static const std::set<std::string> kSections = {"sidecar", "storage", "changelog", "retries", "query",
                                                     "log", "kafka", "auth", "security", "rest", "cluster"};
    if (auto bad = common::FindBadKey(root, kSections)) {
      return f.Bad(bad->key, kSections.count(bad->key) ? bad->message : "unknown section");
    }
    ST_RETURN_IF_ERROR(LoadSidecar(f, root, &c));
    ST_RETURN_IF_ERROR(LoadStorage(f, root, &c));
    ST_RETURN_IF_ERROR(LoadKafkaAndLog(f, root, &c));
    ST_RETURN_IF_ERROR(auth::LoadAuthConfig(path, root, &c.auth));
    ST_RETURN_IF_ERROR(LoadSecurity(f, root, &c));
    ST_RETURN_IF_ERROR(LoadCluster(f, root, &c));
    ST_RETURN_IF_ERROR(rest::LoadRestConfig(path, root, &c.rest));
  } catch (const YAML::Exception& e) {
    return Status(Code::kInvalidInput, path + ": " + e.what());
  }
  *config = std::move(c);
  return Status::OK();
}

Status ValidateConfig(const ServerConfig& c) {
  auto bad = [](std::string m) { return Status(Code::kInvalidInput, std::move(m)); };
  if (c.listen.empty()) return bad("sidecar.listen: at least one endpoint is needed");
  for (const auto& e : c.listen) {
    if (e.rfind("tcp://", 0) != 0 && e.rfind("ipc://", 0) != 0) {
      return bad("sidecar.listen: '" + e + "' is neither tcp:// nor ipc://");
    }
    // ZeroMQ's own wildcard port is "*"; any other port must fit 16 bits
    // (libzmq would bind port % 65536).
    if (e.rfind("tcp://", 0) == 0 && !e.ends_with(":*")) {
      ST_RETURN_IF_ERROR(common::CheckHostPort(e.substr(6), "sidecar.listen"));
    }
  }
  if (c.workers < 1 || c.workers > 256) return bad("sidecar.workers must be 1..256");
  if (c.queue_depth < 1) return bad("sidecar.queue_depth must be at least 1");
  if (c.max_request_bytes < 1024) return bad("sidecar.max_request_bytes must be at least 1024");
  // The frontend sizes ZeroMQ's maxmsgsize at twice max_request_bytes, an int.
  if (c.max_request_bytes > (512u << 20)) return bad("sidecar.max_request_bytes must be at most 512 MiB");
  if (c.shutdown_grace_ms < 0 || c.shutdown_grace_ms > 3'600'000) {
    return bad("sidecar.shutdown_grace_ms must be 0..3600000");
  }
  // A bound below one request would refuse every request but the first.
  if (c.max_inflight_bytes < c.max_request_bytes) {
    return bad("sidecar.max_inflight_bytes must be at least sidecar.max_request_bytes");
  }
  if (c.max_inflight_per_connection < 1) return bad("sidecar.max_inflight_per_connection must be at least 1");
  if (c.max_connections < 1 || c.max_connections > 1'000'000) {
    return bad("sidecar.max_connections must be between 1 and 1000000");
  }
  if (c.max_inflight_bytes_per_connection < c.max_request_bytes ||
      c.max_inflight_bytes_per_connection > c.max_inflight_bytes) {
    return bad("sidecar.max_inflight_bytes_per_connection must be between sidecar.max_request_bytes "
               "and sidecar.max_inflight_bytes");
  }
  if (c.log_format != "text" && c.log_format != "json") return bad("log.format must be text or json");
  if (c.query_max_examined < 1) return bad("query.max_examined must be positive");
  if (c.data_dir.empty()) return bad("storage.path must not be empty");
  ST_RETURN_IF_ERROR(CheckBackupDir(c.backup_dir, c.data_dir));
  if (c.backup_keep > 10000) return bad("storage.backup_keep must be 0 (keep all) to 10000");
  // 0 would leave RocksDB at 64 KiB memtables (a flush every few writes and
  // stalls); memtables are per column family and held in memory.
  if (c.engine.write_buffer_bytes < (size_t{1} << 20) ||
      c.engine.write_buffer_bytes > (size_t{4096} << 20)) {
    return bad("storage.write_buffer_mb must be 1..4096, got " +
               std::to_string(c.engine.write_buffer_bytes >> 20));
  }
  if (c.engine.changelog_max_age_seconds < 0) return bad("changelog.max_age_seconds must be 0 or more");
  if (c.retention_interval_seconds < 1) return bad("changelog.check_interval_seconds must be at least 1");
  if (c.engine.request_id_window_seconds < 1) return bad("retries.window_seconds must be at least 1");
  if (c.engine.request_id_window_count < 1) return bad("retries.window_count must be at least 1");
  static const char* kLevels[] = {"trace", "debug", "info", "warn", "warning", "error", "err", "critical", "off"};
  if (std::find(std::begin(kLevels), std::end(kLevels), c.log_level) == std::end(kLevels)) {
    return bad("log.level must be trace, debug, info, warn, error, critical or off, got '" + c.log_level + "'");
  }
  if (c.kafka.partitions < 1) return bad("kafka.partitions must be at least 1");
  if (c.kafka.replication_factor < 1) return bad("kafka.replication_factor must be at least 1");
  if (c.kafka.embedded_brokers < 1 || c.kafka.embedded_brokers > 9) return bad("kafka.embedded_brokers must be 1..9");
  if (c.kafka.max_backlog_events < 1) return bad("kafka.max_backlog_events must be at least 1");
  if (c.kafka.topic.empty()) return bad("kafka.topic must not be empty");
  if (c.kafka.watermark_flush_ms < 1) return bad("kafka.watermark_flush_ms must be at least 1");
  // The upper bound leaves the key (up to 2 KiB of table and PartitionKey)
  // and the headers room under Kafka's default message.max.bytes.
  if (c.kafka.chunk_bytes < 1024 || c.kafka.chunk_bytes > 990'000) {
    return bad("kafka.chunk_bytes must be 1024..990000 (Kafka's default message.max.bytes is 1000000)");
  }
  ST_RETURN_IF_ERROR(ValidateCluster(c));
  ST_RETURN_IF_ERROR(auth::ValidateAuthConfig(c.auth));
  if (!c.rest.address.empty())
    ST_RETURN_IF_ERROR(common::CheckHostPort(c.rest.address, "rest.address"));
  if (!c.http.empty()) ST_RETURN_IF_ERROR(common::CheckHostPort(c.http, "sidecar.http"));
  return CheckListenerPolicy(c);
}

}  // namespace sidetable::sidecar
