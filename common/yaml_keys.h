// The keys of a YAML map in a sidetable configuration file: each one known,
// and each written once. Header-only, for the parts that read YAML (the
// sidecar's config, auth and REST loaders); each formats the message with
// its own file and key prefix.
//
// Thread safety: stateless.
#pragma once

#include <yaml-cpp/yaml.h>

#include <optional>
#include <set>
#include <string>

namespace sidetable::common {

struct BadKey {
  std::string key;
  // Why: "unknown key (...)" or "appears twice; ...".
  std::string message;
};

// The first key of `map` that is not in `allowed` (an empty set allows any
// key) or that appears a second time. yaml-cpp keeps a repeated key and
// answers lookups with the first one, so a second `storage:` or `path:`
// would be ignored without a word; a typo such as `durabilty` would leave
// the default in force.
inline std::optional<BadKey> FindBadKey(const YAML::Node& map,
                                        const std::set<std::string>& allowed) {
  std::set<std::string> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    std::string key = it->first.as<std::string>();
    if (!allowed.empty() && !allowed.count(key)) {
      return BadKey{std::move(key), "unknown key (see configs/sidetable.dev.yaml)"};
    }
    if (!seen.insert(key).second)
      return BadKey{std::move(key), "appears twice; only one value can be in force"};
  }
  return std::nullopt;
}

}  // namespace sidetable::common
