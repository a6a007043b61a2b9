#include "sidecar/config.h"

#include <yaml-cpp/yaml.h>

namespace sidetable::sidecar {
namespace {

template <typename T>
void Read(const YAML::Node& parent, const char* key, T* out) {
  if (parent && parent[key]) *out = parent[key].as<T>();
}

}  // namespace

Status LoadConfigFile(const std::string& path, ServerConfig* c) {
  try {
    YAML::Node root = YAML::LoadFile(path);
    static const char* kSections[] = {"sidecar", "storage", "changelog", "query", "log", "kafka"};
    for (auto it = root.begin(); it != root.end(); ++it) {
      std::string key = it->first.as<std::string>();
      bool known = false;
      for (const char* s : kSections) known |= key == s;
      if (!known) return Status(Code::kInvalidInput, path + ": unknown section '" + key + "'");
    }
    const YAML::Node s = root["sidecar"];
    Read(s, "id", &c->id);
    if (s && s["listen"]) {
      c->listen.clear();
      if (s["listen"].IsSequence()) {
        for (const auto& e : s["listen"]) c->listen.push_back(e.as<std::string>());
      } else {
        c->listen.push_back(s["listen"].as<std::string>());
      }
    }
    Read(s, "workers", &c->workers);
    Read(s, "queue_depth", &c->queue_depth);
    Read(s, "max_request_bytes", &c->max_request_bytes);
    Read(s, "http", &c->http);
    Read(s, "ready_file", &c->ready_file);
    Read(s, "shutdown_grace_ms", &c->shutdown_grace_ms);
    Read(s, "max_inflight_bytes", &c->max_inflight_bytes);
    Read(s, "max_inflight_per_connection", &c->max_inflight_per_connection);
    Read(s, "max_inflight_bytes_per_connection", &c->max_inflight_bytes_per_connection);

    const YAML::Node st = root["storage"];
    Read(st, "path", &c->data_dir);
    if (st && st["durability"]) {
      std::string d = st["durability"].as<std::string>();
      if (d == "fsync") c->engine.durability = Durability::kFsync;
      else if (d == "os") c->engine.durability = Durability::kOs;
      else return Status(Code::kInvalidInput, path + ": storage.durability must be fsync or os");
    }
    size_t mb;
    if (st && st["block_cache_mb"]) {
      Read(st, "block_cache_mb", &mb);
      c->engine.block_cache_bytes = mb << 20;
    }
    if (st && st["write_buffer_mb"]) {
      Read(st, "write_buffer_mb", &mb);
      c->engine.write_buffer_bytes = mb << 20;
    }
    if (st && st["reserve_mb"]) {
      Read(st, "reserve_mb", &mb);
      c->engine.storage_reserve_bytes = static_cast<uint64_t>(mb) << 20;
    }
    const YAML::Node cl = root["changelog"];
    Read(cl, "max_age_seconds", &c->engine.changelog_max_age_seconds);
    Read(cl, "max_bytes", &c->engine.changelog_max_bytes);
    Read(cl, "check_interval_seconds", &c->retention_interval_seconds);
    Read(root["query"], "max_examined", &c->query_max_examined);
    const YAML::Node k = root["kafka"];
    Read(k, "bootstrap", &c->kafka.bootstrap);
    Read(k, "topic", &c->kafka.topic);
    Read(k, "partitions", &c->kafka.partitions);
    Read(k, "replication_factor", &c->kafka.replication_factor);
    Read(k, "embedded_brokers", &c->kafka.embedded_brokers);
    Read(k, "bootstrap_file", &c->kafka.bootstrap_file);
    Read(k, "max_backlog_events", &c->kafka.max_backlog_events);
    Read(k, "watermark_flush_ms", &c->kafka.watermark_flush_ms);
    Read(k, "chunk_bytes", &c->kafka.chunk_bytes);
    if (k && k["properties"]) {
      for (auto it = k["properties"].begin(); it != k["properties"].end(); ++it) {
        c->kafka.properties[it->first.as<std::string>()] = it->second.as<std::string>();
      }
    }
    Read(root["log"], "level", &c->log_level);
    Read(root["log"], "format", &c->log_format);
  } catch (const YAML::Exception& e) {
    return Status(Code::kInvalidInput, path + ": " + e.what());
  }
  return Status::OK();
}

Status ValidateConfig(const ServerConfig& c) {
  auto bad = [](std::string m) { return Status(Code::kInvalidInput, std::move(m)); };
  if (c.listen.empty()) return bad("sidecar.listen: at least one endpoint is needed");
  for (const auto& e : c.listen) {
    if (e.rfind("tcp://", 0) != 0 && e.rfind("ipc://", 0) != 0) {
      return bad("sidecar.listen: '" + e + "' is neither tcp:// nor ipc://");
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
  if (c.max_inflight_bytes_per_connection < c.max_request_bytes ||
      c.max_inflight_bytes_per_connection > c.max_inflight_bytes) {
    return bad("sidecar.max_inflight_bytes_per_connection must be between sidecar.max_request_bytes "
               "and sidecar.max_inflight_bytes");
  }
  if (c.log_format != "text" && c.log_format != "json") return bad("log.format must be text or json");
  if (c.query_max_examined < 1) return bad("query.max_examined must be positive");
  if (c.data_dir.empty()) return bad("storage.path must not be empty");
  if (c.kafka.partitions < 1) return bad("kafka.partitions must be at least 1");
  if (c.kafka.replication_factor < 1) return bad("kafka.replication_factor must be at least 1");
  if (c.kafka.embedded_brokers < 1 || c.kafka.embedded_brokers > 9) return bad("kafka.embedded_brokers must be 1..9");
  if (c.kafka.max_backlog_events < 1) return bad("kafka.max_backlog_events must be at least 1");
  if (c.kafka.topic.empty()) return bad("kafka.topic must not be empty");
  // The upper bound leaves the key (up to 2 KiB of table and PartitionKey)
  // and the headers room under Kafka's default message.max.bytes.
  if (c.kafka.chunk_bytes < 1024 || c.kafka.chunk_bytes > 990'000) {
    return bad("kafka.chunk_bytes must be 1024..990000 (Kafka's default message.max.bytes is 1000000)");
  }
  return Status::OK();
}

}  // namespace sidetable::sidecar
