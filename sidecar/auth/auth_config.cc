#include "sidecar/auth/auth_config.h"

#include <yaml-cpp/yaml.h>

#include <set>

#include "common/yaml_keys.h"
#include "protocol/token.h"

namespace sidetable::sidecar::auth {
namespace {

class Reader {
 public:
  explicit Reader(const std::string& path) : path_(path) {}

  Status Bad(const std::string& key, const std::string& message) const {
    return Status(Code::kInvalidInput, path_ + ": " + key + ": " + message);
  }

  // A map whose keys are all in `allowed` (or absent / null).
  Status Map(const YAML::Node& node, const std::string& name, const std::set<std::string>& allowed) const {
    if (!node.IsMap()) return Bad(name, "must be a map of settings");
    if (auto bad = common::FindBadKey(node, allowed))
      return Bad(name + "." + bad->key, bad->message);
    return Status::OK();
  }

  template <typename T>
  Status Read(const YAML::Node& section, const std::string& name, const char* key, T* out) const {
    if (!section[key]) return Status::OK();
    const YAML::Node v = section[key];
    if (!v.IsScalar()) return Bad(name + "." + key, "must be a single value");
    if constexpr (std::is_unsigned_v<T>) {
      if (!v.Scalar().empty() && v.Scalar()[0] == '-') {
        return Bad(name + "." + key, "must not be negative, got " + v.Scalar());
      }
    }
    try {
      *out = v.as<T>();
    } catch (const YAML::Exception&) {
      return Bad(name + "." + key, "not a valid value: '" + v.Scalar() + "'");
    }
    return Status::OK();
  }

  Status Quota(const YAML::Node& node, const std::string& name, TenantQuota* q) const {
    if (!node || node.IsNull()) return Status::OK();
    ST_RETURN_IF_ERROR(Map(node, name, {"requests_per_second", "bytes_per_second", "max_inflight"}));
    ST_RETURN_IF_ERROR(Read(node, name, "requests_per_second", &q->requests_per_second));
    ST_RETURN_IF_ERROR(Read(node, name, "bytes_per_second", &q->bytes_per_second));
    return Read(node, name, "max_inflight", &q->max_inflight);
  }

 private:
  const std::string& path_;
};

}  // namespace

bool AuthConfig::has_quotas() const {
  auto set = [](const TenantQuota& q) { return q.requests_per_second || q.bytes_per_second || q.max_inflight; };
  if (set(default_quota)) return true;
  for (const auto& [name, q] : tenant_quotas) {
    if (set(q)) return true;
  }
  return false;
}

Status LoadAuthConfig(const std::string& path, const YAML::Node& root, AuthConfig* out) {
  const Reader f(path);
  const YAML::Node a = root["auth"];
  if (!a || a.IsNull()) return Status::OK();
  ST_RETURN_IF_ERROR(f.Map(a, "auth", {"mode", "keys", "token_cache", "quotas"}));
  if (a["mode"]) {
    // YAML 1.1 reads a bare `off` as false: accept both spellings.
    const std::string mode = a["mode"].IsScalar() ? a["mode"].Scalar() : "";
    if (mode == "tokens") out->tokens = true;
    else if (mode == "off" || mode == "false") out->tokens = false;
    else return f.Bad("auth.mode", "must be off or tokens, got '" + mode + "'");
  }
  if (const YAML::Node keys = a["keys"]; keys && !keys.IsNull()) {
    if (!keys.IsSequence()) return f.Bad("auth.keys", "must be a list of {id, file}");
    out->keys.clear();
    for (size_t i = 0; i < keys.size(); i++) {
      const std::string name = "auth.keys[" + std::to_string(i) + "]";
      ST_RETURN_IF_ERROR(f.Map(keys[i], name, {"id", "file"}));
      AuthConfig::KeyFile k;
      ST_RETURN_IF_ERROR(f.Read(keys[i], name, "id", &k.id));
      ST_RETURN_IF_ERROR(f.Read(keys[i], name, "file", &k.file));
      if (k.id.empty() || k.file.empty()) return f.Bad(name, "needs both 'id' and 'file'");
      // Read with the rest of the configuration (exit 2, naming the file and
      // the key), not only when the authenticator starts: that came after
      // the data directory was created and opened, and exited 1.
      if (out->tokens) {
        if (auto key = token::LoadKeyFile(k.file); !key.ok())
          return f.Bad(name + ".file", key.status().message());
      }
      out->keys.push_back(std::move(k));
    }
  }
  ST_RETURN_IF_ERROR(f.Read(a, "auth", "token_cache", &out->token_cache));
  if (const YAML::Node q = a["quotas"]; q && !q.IsNull()) {
    ST_RETURN_IF_ERROR(f.Map(q, "auth.quotas", {"default", "tenants"}));
    ST_RETURN_IF_ERROR(f.Quota(q["default"], "auth.quotas.default", &out->default_quota));
    if (const YAML::Node t = q["tenants"]; t && !t.IsNull()) {
      ST_RETURN_IF_ERROR(f.Map(t, "auth.quotas.tenants", {}));
      for (auto it = t.begin(); it != t.end(); ++it) {
        const std::string tenant = it->first.as<std::string>();
        // Unset fields inherit the default, whichever order they were read in.
        TenantQuota quota = out->default_quota;
        ST_RETURN_IF_ERROR(f.Quota(it->second, "auth.quotas.tenants." + tenant, &quota));
        out->tenant_quotas[tenant] = quota;
      }
    }
  }
  return Status::OK();
}

Status ValidateAuthConfig(const AuthConfig& c) {
  auto bad = [](std::string m) { return Status(Code::kInvalidInput, std::move(m)); };
  if (c.keys.size() > 2) return bad("auth.keys: at most two keys (the current one and the next)");
  for (size_t i = 0; i < c.keys.size(); i++) {
    for (size_t j = 0; j < i; j++) {
      if (c.keys[i].id == c.keys[j].id) return bad("auth.keys: key id '" + c.keys[i].id + "' appears twice");
    }
  }
  if (c.tokens && c.keys.empty()) return bad("auth.mode is tokens but auth.keys names no key file");
  if (c.token_cache < 1) return bad("auth.token_cache must be at least 1");
  return Status::OK();
}

}  // namespace sidetable::sidecar::auth
