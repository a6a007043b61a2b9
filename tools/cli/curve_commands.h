// sidetable-cli's CURVE command (docs/security.md, "Transport"):
// `curve keygen --out PREFIX` writes a key pair, PREFIX.key (the secret key,
// mode 0600) and PREFIX.pub (the public key), for a sidecar or a client.
// It does not talk to a sidecar.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "tools/cli/commands.h"

namespace sidetable::cli {

// Registers `curve` with its `keygen` subcommand; --out goes to *prefix.
CLI::App* AddCurveCommands(CLI::App& app, std::string& prefix);
int RunCurveKeygen(Session& s, const std::string& prefix);

}  // namespace sidetable::cli
