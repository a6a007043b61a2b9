// sidetable-cli's token commands (docs/security.md): `token issue` signs a
// token with a key file, `token inspect` decodes one without verifying it.
// `token issue` needs only the key and talks to no sidecar; `token issue
// --via-sidecar` has the sidecar sign it instead (the IssueToken operation:
// the CLI's own --token must hold m and the requested token must lie within
// it).
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "client/tokens.h"
#include "tools/cli/commands.h"

namespace sidetable::cli {

struct TokenArgs {
  std::string key_file, key_id;
  bool via_sidecar = false;  // the sidecar signs, under the CLI's --token
  std::string table;
  std::optional<std::string> table_prefix;  // "" is every table
  // "" is a valid key bound, so presence is kept apart from the value.
  std::optional<std::string> pk_start, rk_start, pk_end, rk_end;
  std::string perms;
  std::string start, expiry;  // a duration from now (90s, 15m, 1h, 7d; -5m) or YYYY-MM-DDTHH:MM:SSZ
  std::string tenant, identity, policy;
  std::string token;  // inspect: the text, or "-" for stdin
};

// "1h", "-5m", "7d", "90s" from now, or YYYY-MM-DDTHH:MM:SSZ.
Result<client::tokens::TimePoint> ParseWhen(const std::string& text);

// `policy set|get|clear`: a table's stored access policies on the sidecar
// (commands_policy.cc).
struct PolicyArgs {
  std::string table, id, perms, start, expiry;
};
CLI::App* AddPolicyCommands(CLI::App& app, PolicyArgs& args);
int RunPolicyCommand(Session& s, const PolicyArgs& args, const std::string& sub);

// Registers `token` with its `issue` and `inspect` subcommands on `app`;
// returns the `token` command.
CLI::App* AddTokenCommands(CLI::App& app, TokenArgs& args);
// `sub` is "issue" or "inspect".
int RunTokenCommand(Session& s, const TokenArgs& args, const std::string& sub);

}  // namespace sidetable::cli
