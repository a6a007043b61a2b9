#include "patterns/registry.h"

#include <mutex>

#include "engine/table_name.h"
#include "patterns/archive/archive.h"
#include "patterns/index_table/index_table.h"

namespace sidetable::patterns {

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, PatternFactory> factories;
};

Registry& GetRegistry() {
  static Registry* registry = new Registry();  // never destroyed: no exit-order issues
  return *registry;
}

}  // namespace

std::string PatternConfig::Get(const std::string& key, const std::string& fallback) const {
  auto it = settings.find(key);
  if (it == settings.end() || it->second.empty()) return fallback;
  return it->second.front();
}

const std::vector<std::string>* PatternConfig::List(const std::string& key) const {
  auto it = settings.find(key);
  return it == settings.end() ? nullptr : &it->second;
}

void RegisterPattern(const std::string& name, PatternFactory factory) {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.factories[name] = std::move(factory);
}

void RegisterBuiltinPatterns() {
  static std::once_flag once;
  std::call_once(once, [] {
    RegisterPattern(kIndexTableName, &IndexTablePattern::Create);
    RegisterPattern(kArchiveName, &ArchivePattern::Create);
  });
}

std::vector<std::string> RegisteredPatterns() {
  Registry& r = GetRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, factory] : r.factories) names.push_back(name);
  return names;
}

Result<std::unique_ptr<Pattern>> CreatePattern(const PatternConfig& config) {
  RegisterBuiltinPatterns();
  PatternFactory factory;
  {
    Registry& r = GetRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.factories.find(config.name);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string known;
    for (const auto& name : RegisteredPatterns()) known += (known.empty() ? "" : ", ") + name;
    return Status(Code::kInvalidInput,
                  "unknown pattern '" + config.name + "' (known: " + known + ")");
  }
  return factory(config);
}

Status CheckPatternTargets(const std::vector<PatternConfig>& configs) {
  // Two writers of one index table undo each other: one's fenced deletes and
  // the clear after its source's deletion remove the other's entries (with
  // the same keys, or all of them), and verify sees the other's as extra.
  for (size_t i = 0; i < configs.size(); i++) {
    const std::string target = configs[i].Get("target");
    if (target.empty()) continue;  // CreatePattern names the missing setting
    for (size_t j = 0; j < i; j++) {
      if (configs[i].name != kIndexTableName && configs[j].name != kIndexTableName) continue;
      if (!TableNameEquals(target, configs[j].Get("target"))) continue;
      return Status(Code::kInvalidInput,
                    "patterns[" + std::to_string(j) + "] (" + configs[j].name + ") and patterns[" +
                        std::to_string(i) + "] (" + configs[i].name + ") both write table '" +
                        target +
                        "': an index_table's target must be written by that pattern alone");
    }
    // An archive moving rows out of an index table deletes its entries.
    if (configs[i].name != kIndexTableName) continue;
    for (size_t j = 0; j < configs.size(); j++) {
      if (configs[j].name != kArchiveName || !TableNameEquals(target, configs[j].Get("source")))
        continue;
      return Status(Code::kInvalidInput,
                    "patterns[" + std::to_string(j) + "] (archive) moves entities out of table '" +
                        target + "', the target of patterns[" + std::to_string(i) +
                        "] (index_table): its moves would delete index entries");
    }
  }
  return Status::OK();
}

}  // namespace sidetable::patterns
