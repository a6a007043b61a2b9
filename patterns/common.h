// Helpers shared by the built-in patterns: strict reading of a
// PatternConfig's settings. (Table names compare with engine/table_name.h,
// ETag versions come from engine/etag.h.)
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"
#include "engine/table_name.h"
#include "patterns/registry.h"

namespace sidetable::patterns {

// Strict readers for PatternConfig settings. Every error is InvalidInput and
// names the pattern and the setting.
class SettingsReader {
 public:
  explicit SettingsReader(const PatternConfig& config) : config_(config) {}

  // Rejects settings not in `known` (typos would otherwise be ignored).
  Status CheckKnown(std::initializer_list<std::string_view> known) const;
  // Exactly one value, required.
  Result<std::string> Required(const std::string& key) const;
  // At most one value; nullopt when absent.
  Result<std::optional<std::string>> Optional(const std::string& key) const;
  // One or more values, required.
  Result<std::vector<std::string>> RequiredList(const std::string& key) const;
  // Zero or more values.
  std::vector<std::string> OptionalList(const std::string& key) const;
  // An integer in [min, max]; nullopt when absent.
  Result<std::optional<int64_t>> OptionalInt(const std::string& key, int64_t min,
                                             int64_t max) const;
  // A valid table name, required.
  Result<std::string> RequiredTable(const std::string& key) const;

  Status Error(const std::string& key, const std::string& problem) const;

 private:
  const PatternConfig& config_;
};

}  // namespace sidetable::patterns
