#include "apply/worker_config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace sidetable::apply {
namespace {

// librdkafka's max.poll.interval.ms when kafka.properties does not set it.
constexpr int64_t kDefaultMaxPollIntervalMs = 300000;

Status Bad(const std::string& origin, const std::string& message) {
  return Status(Code::kInvalidInput, origin + ": " + message);
}

// Every key of `node` must be in `allowed`; names the first one that is not.
Status CheckKeys(const YAML::Node& node, const std::string& section,
                 const std::set<std::string>& allowed, const std::string& origin) {
  if (!node) return Status::OK();
  if (!node.IsMap()) return Bad(origin, section + " must be a map");
  std::set<std::string> seen;
  for (auto it = node.begin(); it != node.end(); ++it) {
    std::string key = it->first.as<std::string>();
    if (!allowed.count(key)) return Bad(origin, "unknown key '" + section + "." + key + "'");
    // yaml-cpp would answer with the first of the two, without a word.
    if (!seen.insert(key).second)
      return Bad(origin, "key '" + section + "." + key + "' appears twice");
  }
  return Status::OK();
}

// Reads parent[key] into *out when present; a conversion error names the key.
template <typename T>
Status Read(const YAML::Node& parent, const std::string& section, const char* key, T* out,
            const std::string& origin) {
  if (!parent || !parent[key]) return Status::OK();
  try {
    *out = parent[key].as<T>();
  } catch (const YAML::Exception&) {
    return Bad(origin, section + "." + key + ": wrong type (" + YAML::Dump(parent[key]) + ")");
  }
  return Status::OK();
}

// A scalar or a sequence of scalars, as a list of strings.
Status ReadList(const YAML::Node& n, const std::string& key, std::vector<std::string>* out,
                const std::string& origin) {
  out->clear();
  if (n.IsScalar()) {
    out->push_back(n.as<std::string>());
  } else if (n.IsSequence()) {
    for (const auto& e : n) {
      if (!e.IsScalar()) return Bad(origin, key + ": list items must be scalars");
      out->push_back(e.as<std::string>());
    }
  } else if (!n.IsNull()) {
    return Bad(origin, key + ": must be a scalar or a list of scalars");
  }
  return Status::OK();
}

Status LoadRoot(const YAML::Node& root, const std::string& origin, WorkerConfig* c) {
  if (root.IsNull()) return Status::OK();
  if (!root.IsMap()) return Bad(origin, "the document must be a map");
  ST_RETURN_IF_ERROR(CheckKeys(root, "(top level)",
                               {"kafka", "sidecar", "retry", "lag", "dead_letter", "http", "ready_file",
                                "log", "patterns"},
                               origin));
  const YAML::Node k = root["kafka"];
  ST_RETURN_IF_ERROR(CheckKeys(k, "kafka",
                               {"bootstrap", "bootstrap_file", "bootstrap_wait_ms", "topic", "group",
                                "session_timeout_ms", "commit_batch", "commit_interval_ms",
                                "poll_batch", "properties"},
                               origin));
  ST_RETURN_IF_ERROR(Read(k, "kafka", "bootstrap", &c->bootstrap, origin));
  ST_RETURN_IF_ERROR(Read(k, "kafka", "bootstrap_file", &c->bootstrap_file, origin));
  ST_RETURN_IF_ERROR(Read(k, "kafka", "bootstrap_wait_ms", &c->bootstrap_wait_ms, origin));
  if (k && k["topic"]) ST_RETURN_IF_ERROR(ReadList(k["topic"], "kafka.topic", &c->topics, origin));
  ST_RETURN_IF_ERROR(Read(k, "kafka", "group", &c->group, origin));
  ST_RETURN_IF_ERROR(Read(k, "kafka", "session_timeout_ms", &c->session_timeout_ms, origin));
  ST_RETURN_IF_ERROR(Read(k, "kafka", "commit_batch", &c->commit_batch, origin));
  ST_RETURN_IF_ERROR(Read(k, "kafka", "commit_interval_ms", &c->commit_interval_ms, origin));
  ST_RETURN_IF_ERROR(Read(k, "kafka", "poll_batch", &c->poll_batch, origin));
  if (k && k["properties"]) {
    if (!k["properties"].IsMap()) return Bad(origin, "kafka.properties must be a map");
    for (auto it = k["properties"].begin(); it != k["properties"].end(); ++it) {
      if (!it->second.IsScalar()) {
        return Bad(origin, "kafka.properties." + it->first.as<std::string>() + " must be a scalar");
      }
      c->properties[it->first.as<std::string>()] = it->second.as<std::string>();
    }
  }

  const YAML::Node s = root["sidecar"];
  ST_RETURN_IF_ERROR(CheckKeys(s, "sidecar",
                               {"endpoint", "timeout_ms", "caller", "inflight", "token_file",
                                "curve_server_key_file", "curve_key_file"},
                               origin));
  ST_RETURN_IF_ERROR(Read(s, "sidecar", "curve_server_key_file", &c->curve_server_key_file, origin));
  ST_RETURN_IF_ERROR(Read(s, "sidecar", "curve_key_file", &c->curve_key_file, origin));
  ST_RETURN_IF_ERROR(Read(s, "sidecar", "inflight", &c->inflight, origin));
  ST_RETURN_IF_ERROR(Read(s, "sidecar", "endpoint", &c->endpoint, origin));
  ST_RETURN_IF_ERROR(Read(s, "sidecar", "timeout_ms", &c->timeout_ms, origin));
  ST_RETURN_IF_ERROR(Read(s, "sidecar", "caller", &c->caller, origin));
  ST_RETURN_IF_ERROR(Read(s, "sidecar", "token_file", &c->token_file, origin));
  if (!c->token_file.empty()) {
    std::ifstream in(c->token_file);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return Bad(origin, "sidecar.token_file: cannot read " + c->token_file);
    c->token = text.str();
    while (!c->token.empty() && std::isspace(static_cast<unsigned char>(c->token.back()))) c->token.pop_back();
    if (c->token.empty()) return Bad(origin, "sidecar.token_file: " + c->token_file + " is empty");
  }

  const YAML::Node r = root["retry"];
  ST_RETURN_IF_ERROR(CheckKeys(
      r, "retry",
      {"max_attempts", "max_wait_seconds", "backoff_ms", "backoff_max_ms", "fence_attempts"},
      origin));
  ST_RETURN_IF_ERROR(Read(r, "retry", "max_attempts", &c->max_attempts, origin));
  ST_RETURN_IF_ERROR(Read(r, "retry", "max_wait_seconds", &c->max_wait_seconds, origin));
  ST_RETURN_IF_ERROR(Read(r, "retry", "backoff_ms", &c->backoff_ms, origin));
  ST_RETURN_IF_ERROR(Read(r, "retry", "backoff_max_ms", &c->backoff_max_ms, origin));
  ST_RETURN_IF_ERROR(Read(r, "retry", "fence_attempts", &c->fence_attempts, origin));

  const YAML::Node lg = root["lag"];
  ST_RETURN_IF_ERROR(CheckKeys(lg, "lag", {"max_seconds"}, origin));
  ST_RETURN_IF_ERROR(Read(lg, "lag", "max_seconds", &c->lag_max_seconds, origin));

  const YAML::Node d = root["dead_letter"];
  ST_RETURN_IF_ERROR(CheckKeys(d, "dead_letter", {"topic"}, origin));
  ST_RETURN_IF_ERROR(Read(d, "dead_letter", "topic", &c->dead_letter_topic, origin));

  if (root["http"]) {
    if (root["http"].IsNull()) c->http.clear();
    else ST_RETURN_IF_ERROR(Read(root, "(top level)", "http", &c->http, origin));
  }
  ST_RETURN_IF_ERROR(Read(root, "(top level)", "ready_file", &c->ready_file, origin));
  const YAML::Node l = root["log"];
  ST_RETURN_IF_ERROR(CheckKeys(l, "log", {"level", "format"}, origin));
  ST_RETURN_IF_ERROR(Read(l, "log", "level", &c->log_level, origin));
  ST_RETURN_IF_ERROR(Read(l, "log", "format", &c->log_format, origin));

  const YAML::Node p = root["patterns"];
  if (p && !p.IsNull()) {
    if (!p.IsSequence()) return Bad(origin, "patterns must be a list of maps");
    c->patterns.clear();
    for (size_t i = 0; i < p.size(); i++) {
      const std::string where = "patterns[" + std::to_string(i) + "]";
      if (!p[i].IsMap()) return Bad(origin, where + " must be a map");
      patterns::PatternConfig pc;
      for (auto it = p[i].begin(); it != p[i].end(); ++it) {
        const std::string key = it->first.as<std::string>();
        if (key == "name") {
          if (!it->second.IsScalar()) return Bad(origin, where + ".name must be a string");
          pc.name = it->second.as<std::string>();
          continue;
        }
        ST_RETURN_IF_ERROR(ReadList(it->second, where + "." + key, &pc.settings[key], origin));
      }
      if (pc.name.empty()) return Bad(origin, where + ".name is required");
      c->patterns.push_back(std::move(pc));
    }
    if (Status shared = patterns::CheckPatternTargets(c->patterns); !shared.ok()) {
      return Bad(origin, shared.message());
    }
  }
  return Status::OK();
}

}  // namespace

Status LoadWorkerConfigText(const std::string& yaml, const std::string& origin, WorkerConfig* c) {
  try {
    return LoadRoot(YAML::Load(yaml), origin, c);
  } catch (const YAML::Exception& e) {
    return Bad(origin, e.what());
  }
}

Status LoadWorkerConfigFile(const std::string& path, WorkerConfig* c) {
  try {
    return LoadRoot(YAML::LoadFile(path), path, c);
  } catch (const YAML::Exception& e) {
    return Bad(path, e.what());
  }
}

Status ValidateWorkerConfig(const WorkerConfig& c) {
  auto bad = [](std::string m) { return Status(Code::kInvalidInput, std::move(m)); };
  if (c.bootstrap.empty() && c.bootstrap_file.empty()) {
    return bad("kafka.bootstrap: set it, or kafka.bootstrap_file to read it from a file");
  }
  if (c.bootstrap_wait_ms < 0) return bad("kafka.bootstrap_wait_ms must not be negative");
  if (c.topics.empty()) return bad("kafka.topic: at least one topic is needed");
  for (const auto& t : c.topics) if (t.empty()) return bad("kafka.topic: a topic name is empty");
  if (c.group.empty()) return bad("kafka.group must not be empty");
  if (c.session_timeout_ms < 1000) return bad("kafka.session_timeout_ms must be at least 1000");
  if (c.commit_batch < 1) return bad("kafka.commit_batch must be at least 1");
  if (c.commit_interval_ms < 1) return bad("kafka.commit_interval_ms must be at least 1");
  if (c.poll_batch < 1 || c.poll_batch > 100000) return bad("kafka.poll_batch must be 1..100000");
  if (c.inflight < 1 || c.inflight > 10000) return bad("sidecar.inflight must be 1..10000");
  if (c.lag_max_seconds < 1) return bad("lag.max_seconds must be at least 1");
  if (c.endpoint.rfind("tcp://", 0) != 0 && c.endpoint.rfind("ipc://", 0) != 0) {
    return bad("sidecar.endpoint: '" + c.endpoint + "' is neither tcp:// nor ipc://");
  }
  if (c.timeout_ms < 1) return bad("sidecar.timeout_ms must be positive");
  if (c.curve_server_key_file.empty() != c.curve_key_file.empty()) {
    return bad("sidecar.curve_server_key_file and sidecar.curve_key_file: give both (CURVE) or neither");
  }
  if (c.max_attempts < 1 || c.max_attempts > 1000) return bad("retry.max_attempts must be 1..1000");
  if (c.max_wait_seconds < 0 || c.max_wait_seconds > 86400)
    return bad("retry.max_wait_seconds must be 0..86400");
  // The consumer does not poll while an event waits: a wait as long as
  // max.poll.interval.ms takes the worker out of its group mid-event.
  {
    int64_t poll_ms = kDefaultMaxPollIntervalMs;
    auto it = c.properties.find("max.poll.interval.ms");
    const bool set = it != c.properties.end();
    if (set) {
      try {
        poll_ms = std::stoll(it->second);
      } catch (const std::exception&) {
        poll_ms = -1;  // librdkafka names a bad value itself
      }
    }
    if (poll_ms >= 0 && static_cast<int64_t>(c.max_wait_seconds) * 1000 >= poll_ms) {
      return bad("retry.max_wait_seconds (" + std::to_string(c.max_wait_seconds) +
                 " s) must be below the consumer's max.poll.interval.ms (" +
                 std::to_string(poll_ms) + " ms" +
                 (set ? ", kafka.properties" : ", librdkafka's default") +
                 "): the worker does not poll while an event waits, and Kafka would take its "
                 "partitions away");
    }
  }
  if (c.backoff_ms < 0) return bad("retry.backoff_ms must not be negative");
  if (c.backoff_max_ms < c.backoff_ms) return bad("retry.backoff_max_ms must be >= retry.backoff_ms");
  if (c.fence_attempts < 1) return bad("retry.fence_attempts must be at least 1");
  if (c.dead_letter_topic.empty()) return bad("dead_letter.topic must not be empty");
  for (const auto& t : c.topics) {
    if (t == c.dead_letter_topic) return bad("dead_letter.topic must differ from kafka.topic");
  }
  if (!c.http.empty() && c.http.rfind(':') == std::string::npos) {
    return bad("http must be host:port, got '" + c.http + "'");
  }
  if (c.log_format != "text" && c.log_format != "json") return bad("log.format must be text or json");
  static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn", "error", "critical", "off"};
  if (!kLevels.count(c.log_level)) return bad("log.level: unknown level '" + c.log_level + "'");
  if (c.patterns.empty()) return bad("patterns: at least one pattern is needed");
  return Status::OK();
}

Status ResolveBootstrap(WorkerConfig* c, const std::atomic<bool>* stop) {
  if (!c->bootstrap.empty()) return Status::OK();
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(c->bootstrap_wait_ms);
  do {
    if (stop != nullptr && stop->load()) {
      return Status(Code::kUnavailable,
                    "stopped while waiting for kafka.bootstrap_file '" + c->bootstrap_file + "'");
    }
    std::ifstream in(c->bootstrap_file);
    std::string line;
    if (in && std::getline(in, line)) {
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
      if (!line.empty()) {
        c->bootstrap = line;
        return Status::OK();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < until);
  // Not bad configuration: the sidecar that writes the file is not up (or
  // has no change stream). kUnavailable: the worker exits 1, not 2.
  std::ifstream exists(c->bootstrap_file);
  return Status(Code::kUnavailable,
                "kafka.bootstrap_file: waited " + std::to_string(c->bootstrap_wait_ms) +
                    " ms for the sidecar to " +
                    (exists ? "write a bootstrap address into '" : "create '") + c->bootstrap_file +
                    "' (is it running, with kafka.bootstrap set?)");
}

}  // namespace sidetable::apply
