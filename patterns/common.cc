#include "patterns/common.h"

#include <charconv>
#include <limits>

#include "engine/limits.h"

namespace sidetable::patterns {

Status SettingsReader::Error(const std::string& key, const std::string& problem) const {
  return Status(Code::kInvalidInput,
                "pattern '" + config_.name + "': setting '" + key + "' " + problem);
}

Status SettingsReader::CheckKnown(std::initializer_list<std::string_view> known) const {
  for (const auto& [key, values] : config_.settings) {
    bool found = false;
    for (auto k : known) found = found || k == key;
    if (!found) {
      std::string list;
      for (auto k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      return Error(key, "is unknown (known: " + list + ")");
    }
  }
  return Status::OK();
}

Result<std::optional<std::string>> SettingsReader::Optional(const std::string& key) const {
  const auto* values = config_.List(key);
  if (values == nullptr) return std::optional<std::string>();
  if (values->size() != 1) return Error(key, "needs exactly one value");
  return std::optional<std::string>((*values)[0]);
}

Result<std::string> SettingsReader::Required(const std::string& key) const {
  auto v = Optional(key);
  if (!v.ok()) return v.status();
  if (!v->has_value()) return Error(key, "is required");
  return std::move(**v);
}

Result<std::vector<std::string>> SettingsReader::RequiredList(const std::string& key) const {
  const auto* values = config_.List(key);
  if (values == nullptr || values->empty()) return Error(key, "is required (one or more values)");
  return *values;
}

std::vector<std::string> SettingsReader::OptionalList(const std::string& key) const {
  const auto* values = config_.List(key);
  return values == nullptr ? std::vector<std::string>() : *values;
}

Result<std::optional<int64_t>> SettingsReader::OptionalInt(const std::string& key, int64_t min,
                                                           int64_t max) const {
  auto text = Optional(key);
  if (!text.ok()) return text.status();
  if (!text->has_value()) return std::optional<int64_t>();
  const std::string& s = **text;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) {
    return Error(key, "must be an integer, not '" + s + "'");
  }
  if (v < min || v > max) {
    return Error(key,
                 "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], not " + s);
  }
  return std::optional<int64_t>(v);
}

Result<std::string> SettingsReader::RequiredTable(const std::string& key) const {
  auto name = Required(key);
  if (!name.ok()) return name.status();
  Status valid = ValidateTableName(*name);
  if (!valid.ok()) return Error(key, "is not a valid table name: " + valid.message());
  return name;
}

}  // namespace sidetable::patterns
