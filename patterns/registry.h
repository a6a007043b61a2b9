// Explicit registration of the built-in patterns (no static self-registering
// objects: they vanish under static linking). The worker creates patterns by
// name from its configuration.
//
// Thread safety: RegisterBuiltinPatterns() runs once (std::call_once);
// Create() is safe from any thread afterwards.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/status.h"
#include "patterns/pattern.h"

namespace sidetable::patterns {

// A pattern's settings from the worker's config: every value is a list of
// strings (scalars are lists of one), e.g. {"source": ["Employees"],
// "properties": ["LastName", "Email"]}.
struct PatternConfig {
  std::string name;
  std::map<std::string, std::vector<std::string>> settings;

  // The single value of `key`, or `fallback` when absent.
  std::string Get(const std::string& key, const std::string& fallback = "") const;
  const std::vector<std::string>* List(const std::string& key) const;
};

using PatternFactory = std::function<Result<std::unique_ptr<Pattern>>(const PatternConfig&)>;

void RegisterPattern(const std::string& name, PatternFactory factory);
// Registers index_table and archive; idempotent.
void RegisterBuiltinPatterns();
// The registered names, sorted (for messages and --help).
std::vector<std::string> RegisteredPatterns();
// InvalidInput for an unknown name or bad settings (the message names them).
// Calls RegisterBuiltinPatterns() first, so built-ins are always known.
Result<std::unique_ptr<Pattern>> CreatePattern(const PatternConfig& config);

// What no pattern can check alone, over the patterns of one configuration:
// an index_table's target is written by that pattern only (docs/patterns.md,
// "one index_table instance per target"), so no other pattern, index or
// archive, may name the same table (case-insensitively) as its target, and
// no archive may move entities out of it (name it as its source).
// InvalidInput naming both patterns (by position) and the table.
Status CheckPatternTargets(const std::vector<PatternConfig>& configs);

}  // namespace sidetable::patterns
