#include "sidecar/rest/rest_config.h"

#include <sys/stat.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <set>

#include "common/yaml_keys.h"
#include "events/base64.h"
#include "protocol/key_file.h"

namespace sidetable::sidecar::rest {
namespace {

Status Bad(const std::string& path, const std::string& key, const std::string& message) {
  return Status(Code::kInvalidInput, path + ": " + key + ": " + message);
}

Status Strings(const std::string& path, const std::string& key, const YAML::Node& n, std::vector<std::string>* out,
               bool upper, bool lower) {
  if (!n) return Status::OK();
  if (!n.IsSequence()) return Bad(path, key, "must be a list of strings");
  for (const auto& e : n) {
    if (!e.IsScalar()) return Bad(path, key, "must be a list of strings");
    std::string s = e.Scalar();
    if (upper) std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
    if (lower) std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    out->push_back(std::move(s));
  }
  return Status::OK();
}

Status CheckKeys(const std::string& path, const std::string& where, const YAML::Node& n,
                 const std::set<std::string>& allowed) {
  if (!n.IsMap()) return Bad(path, where, "must be a map");
  if (auto bad = common::FindBadKey(n, allowed))
    return Bad(path, where + "." + bad->key, bad->message);
  return Status::OK();
}

// An account's key: inline (`key`) or from an owner-only file (`key_file`),
// base64 of at least 16 bytes either way.
Result<std::string> AccountKey(const std::string& path, const std::string& where,
                               const YAML::Node& a) {
  std::optional<std::string> key;
  std::string field = ".key";
  if (a["key_file"]) {
    field = ".key_file";
    auto read = keyfile::Read(a["key_file"].as<std::string>(), /*owner_only=*/true, 4096);
    if (!read.ok()) return Bad(path, where + field, read.status().message());
    // The file's text is the key in base64: decoded from a trimmed view and
    // wiped, as keyfile::Read wipes its own buffers (the key itself lives on
    // in the configuration, as long as the gateway).
    std::string text = std::move(read).value();
    const auto not_space = [](unsigned char c) { return !std::isspace(c); };
    const auto first = std::find_if(text.begin(), text.end(), not_space);
    const auto last = std::find_if(text.rbegin(), text.rend(), not_space).base();
    key = json::Base64Decode(first < last ? std::string_view(&*first, last - first)
                                          : std::string_view());
    keyfile::Wipe(&text);
  } else {
    key = json::Base64Decode(a["key"].as<std::string>());
  }
  if (!key || key->size() < 16)
    return Bad(path, where + field, "must be base64 of at least 16 bytes");
  return std::move(*key);
}

// Whether group or others may read the configuration file (not a file,
// e.g. a test's text: no).
bool ReadableByOthers(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
         (st.st_mode & (S_IRGRP | S_IROTH)) != 0;
}

}  // namespace

Status LoadRestConfig(const std::string& path, const YAML::Node& root, RestConfig* out) {
  const YAML::Node r = root["rest"];
  if (!r || r.IsNull()) return Status::OK();
  ST_RETURN_IF_ERROR(CheckKeys(path, "rest", r, {"address", "accounts", "cors", "max_body_mb", "threads", "dev_account",
                                               "max_connections", "max_buffered_mb", "idle_timeout_ms", "io_threads",
                                               "request_timeout_ms"}));
  try {
    if (r["address"]) out->address = r["address"].as<std::string>();
    if (r["max_body_mb"]) {
      const int64_t mb = r["max_body_mb"].as<int64_t>();
      if (mb < 1 || mb > 64) return Bad(path, "rest.max_body_mb", "must be between 1 and 64");
      out->max_body_bytes = static_cast<size_t>(mb) << 20;
    }
    if (r["threads"]) {
      out->threads = r["threads"].as<int>();
      if (out->threads < 1 || out->threads > 256) return Bad(path, "rest.threads", "must be between 1 and 256");
    }
    if (r["io_threads"]) {
      out->io_threads = r["io_threads"].as<int>();
      if (out->io_threads < 1 || out->io_threads > 64) return Bad(path, "rest.io_threads", "must be between 1 and 64");
    }
    if (r["max_connections"]) {
      const int64_t n = r["max_connections"].as<int64_t>();
      if (n < 1 || n > 100000) return Bad(path, "rest.max_connections", "must be between 1 and 100000");
      out->max_connections = static_cast<size_t>(n);
    }
    if (r["max_buffered_mb"]) {
      const int64_t mb = r["max_buffered_mb"].as<int64_t>();
      if (mb < 1 || mb > 65536) return Bad(path, "rest.max_buffered_mb", "must be between 1 and 65536");
      out->max_buffered_bytes = static_cast<uint64_t>(mb) << 20;
    }
    for (const char* key : {"idle_timeout_ms", "request_timeout_ms"}) {
      if (!r[key]) continue;
      const int64_t ms = r[key].as<int64_t>();
      if (ms < 100 || ms > 3600000) return Bad(path, std::string("rest.") + key, "must be between 100 and 3600000");
      (std::string_view(key) == "idle_timeout_ms" ? out->idle_timeout_ms : out->request_timeout_ms) = static_cast<int>(ms);
    }
    if (r["dev_account"]) {
      const std::string v = r["dev_account"].Scalar();
      if (v != "true" && v != "false") return Bad(path, "rest.dev_account", "must be true or false");
      out->dev_account = v == "true";
    }
    if (const YAML::Node a = r["accounts"]; a && !a.IsNull()) {
      if (!a.IsSequence())
        return Bad(path, "rest.accounts", "must be a list of {name, key or key_file}");
      for (size_t i = 0; i < a.size(); i++) {
        const std::string where = "rest.accounts[" + std::to_string(i) + "]";
        ST_RETURN_IF_ERROR(CheckKeys(path, where, a[i], {"name", "key", "key_file"}));
        RestAccount acct;
        if (!a[i]["name"] || !a[i]["key"] == !a[i]["key_file"]) {
          return Bad(path, where, "needs name and one of key and key_file");
        }
        acct.name = a[i]["name"].as<std::string>();
        if (acct.name.size() < 3 || acct.name.size() > 24 ||
            !std::all_of(acct.name.begin(), acct.name.end(), [](unsigned char c) { return std::isalnum(c); })) {
          return Bad(path, where + ".name", "3-24 letters and digits, as Azure account names");
        }
        auto key = AccountKey(path, where, a[i]);
        if (!key.ok()) return key.status();
        acct.key = std::move(key).value();
        if (a[i]["key"] && ReadableByOthers(path)) out->exposed_keys_file = path;
        out->accounts.push_back(std::move(acct));
      }
    }
    if (const YAML::Node c = r["cors"]; c && !c.IsNull()) {
      if (!c.IsSequence()) return Bad(path, "rest.cors", "must be a list of rules");
      for (size_t i = 0; i < c.size(); i++) {
        const std::string where = "rest.cors[" + std::to_string(i) + "]";
        ST_RETURN_IF_ERROR(CheckKeys(path, where, c[i],
                                     {"allowed_origins", "allowed_methods", "allowed_headers", "exposed_headers",
                                      "max_age_seconds"}));
        CorsRule rule;
        ST_RETURN_IF_ERROR(Strings(path, where + ".allowed_origins", c[i]["allowed_origins"], &rule.allowed_origins, false, false));
        ST_RETURN_IF_ERROR(Strings(path, where + ".allowed_methods", c[i]["allowed_methods"], &rule.allowed_methods, true, false));
        ST_RETURN_IF_ERROR(Strings(path, where + ".allowed_headers", c[i]["allowed_headers"], &rule.allowed_headers, false, true));
        ST_RETURN_IF_ERROR(Strings(path, where + ".exposed_headers", c[i]["exposed_headers"], &rule.exposed_headers, false, false));
        if (c[i]["max_age_seconds"]) rule.max_age_seconds = c[i]["max_age_seconds"].as<int>();
        if (rule.allowed_origins.empty() || rule.allowed_methods.empty()) {
          return Bad(path, where, "needs allowed_origins and allowed_methods");
        }
        out->cors.push_back(std::move(rule));
      }
    }
  } catch (const YAML::Exception& e) {
    return Bad(path, "rest", std::string("bad value: ") + e.what());
  }
  return Status::OK();
}

std::vector<RestAccount> EffectiveAccounts(const RestConfig& config, bool loopback, bool tokens_required) {
  std::vector<RestAccount> out = config.accounts;
  const bool named = std::any_of(out.begin(), out.end(), [](const RestAccount& a) { return a.name == kDevAccount; });
  if (config.dev_account.value_or(!tokens_required) && loopback && !named) {
    out.push_back(RestAccount{kDevAccount, *json::Base64Decode(kDevAccountKeyBase64)});
  }
  return out;
}

}  // namespace sidetable::sidecar::rest
