// Numeric options of sidetable-cli, checked before CLI11 converts them.
//
// Every numeric option is added with AddNumber, never a bare add_option:
// CLI11 2.1 reads an unsigned option with strtoull, which takes "-5" as
// 2^64 - 5 (so `changes --from -5` printed nothing and exited 0), and base
// 0, which takes "010" as 8; its Range validators print their bounds as
// doubles ("0.000000 to 179769313486231570814527..."). Here a value is a
// plain decimal integer in [min, max], and a refusal reads
// "--max: must be at least 1, got 0" (CLI11 adds the option's name), exit 2.
//
// Thread safety: stateless functions.
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <limits>
#include <string>
#include <system_error>

namespace sidetable::cli {

// Why `text` is not a decimal integer in [min, max]; "" when it is.
template <typename T>
std::string NumberError(const std::string& text, T min, T max) {
  const char* end = text.data() + text.size();
  T value{};
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  const bool negative = !text.empty() && text[0] == '-';
  const bool digits_after_sign =
      text.size() > 1 && text.find_first_not_of("0123456789", 1) == std::string::npos;
  if (ec == std::errc::invalid_argument || ptr != end) {
    // from_chars takes no sign into an unsigned type: "-5" is a number
    // below the range there, not a malformed one.
    if (!(negative && digits_after_sign)) return "expected a whole number, got '" + text + "'";
    return "must be at least " + std::to_string(min) + ", got " + text;
  }
  if (ec == std::errc::result_out_of_range) {
    return negative ? "must be at least " + std::to_string(min) + ", got " + text
                    : "must be at most " + std::to_string(max) + ", got " + text;
  }
  if (value < min) return "must be at least " + std::to_string(min) + ", got " + text;
  if (value > max) return "must be at most " + std::to_string(max) + ", got " + text;
  return "";
}

// Adds option `name` of `cmd`, storing into `value`, accepting [min, max].
template <typename T>
CLI::Option* AddNumber(CLI::App* cmd, const std::string& name, T& value, const std::string& help,
                       T min, T max = std::numeric_limits<T>::max()) {
  // No description: the help text states a bound that matters ("1-1000").
  CLI::Validator in_range([min, max](std::string& text) { return NumberError(text, min, max); },
                          "");
  return cmd->add_option(name, value, help)->check(in_range);
}

}  // namespace sidetable::cli
