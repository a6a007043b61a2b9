// Command-line flags of the sidetable binaries (sidetable, sidetable-worker):
// how a flag that does not parse ends the process. Header-only, for the
// executables that link CLI11; no library part includes it.
//
// Thread safety: call from main() only.
#pragma once

#include <CLI/CLI.hpp>

namespace sidetable::common {

// Parses argv into `app`. -1 when the flags parsed; otherwise the exit code
// after CLI11 printed why: 0 after --help or --version, 2 for a bad flag.
// CLI11's own codes (105, 109, ...) would tell an operator's supervisor
// nothing: a bad flag is bad configuration, exit 2, as for the file.
inline int ParseFlags(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return -1;
}

}  // namespace sidetable::common
