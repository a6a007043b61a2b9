// Text options of sidetable-cli that must not be empty.
//
// An option given as "" is not the option left out: `--if-match "$ETAG"`
// with $ETAG empty (the `get` before it failed) asked for a condition, and
// the sidecar reads an empty ifMatch as none, so the write replaced or
// deleted whatever was stored; `policy clear TABLE "$ID"` removed every
// policy. Refused before anything is sent, exit 2, naming the option
// ("--if-match: ... got an empty value").
//
// Thread safety: stateless functions.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace sidetable::cli {

// A validator refusing "" with `why` (what to give instead).
inline CLI::Validator NotEmpty(std::string why) {
  return CLI::Validator(
      [why = std::move(why)](std::string& text) {
        return text.empty() ? "got an empty value: " + why : "";
      },
      "");
}

}  // namespace sidetable::cli
