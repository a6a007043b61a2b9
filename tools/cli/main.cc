// sidetable-cli: the command line for people and scripts (docs/cli.md).
//
//   sidetable-cli [--endpoint E] [--timeout-ms N] [--caller C] [--retries N]
//                 [--token T | --token-file F] COMMAND ...
//
// Exit codes: 0 success, 1 the server answered an error, 2 usage or input
// error, 3 no reply or connection failure, 4 verify found a divergence, 5 a
// replay stopped early (resumable), 6 a replay from Kafka skipped messages
// that do not decode. Nothing is written to stdout on failure,
// except by the streaming replay commands (replay_commands.h).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

#include "tools/cli/commands.h"
#include "tools/cli/curve_commands.h"
#include "tools/cli/number_option.h"
#include "tools/cli/option_checks.h"
#include "tools/cli/replay_commands.h"
#include "tools/cli/token_commands.h"

using namespace sidetable::cli;

#ifndef SIDETABLE_VERSION
#define SIDETABLE_VERSION "unknown"
#endif

namespace {

// What the failed parse of `app` says on stderr, "sidetable-cli: " first as
// every other usage error (docs/cli.md, exit codes).
std::string FailureMessage(const CLI::App* app, const CLI::Error& e) {
  return "sidetable-cli: " + CLI::FailureMessage::simple(app, e);
}

// CLI11 reports a word that names no command as "A subcommand is required":
// the word is kept as an extra argument, and the missing command is found
// first. This names the word and lists the commands instead; "" when the
// error is something else.
std::string UnknownCommandMessage(const CLI::App& app, const CLI::Error& e) {
  if (dynamic_cast<const CLI::RequiredError*>(&e) == nullptr) return "";
  const CLI::App* cmd = &app;
  std::string path;  // "token " for `token issue`'s level
  while (!cmd->get_subcommands().empty()) {
    cmd = cmd->get_subcommands().front();
    path += cmd->get_name() + " ";
  }
  std::string names;
  for (const CLI::App* sub : cmd->get_subcommands([](const CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  if (names.empty()) return "";  // a required option of a leaf command
  const std::string help = "; run sidetable-cli " + path + "--help for what each does";
  for (const std::string& word : app.remaining(true)) {
    if (word.starts_with("-")) continue;
    return "unknown command '" + path + word + "' (commands: " + names + ")" + help;
  }
  return "a command is required (commands: " + names + ")" + help;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sidetable-cli: tables, entities, queries and the change log of a sidetable sidecar"};
  app.set_version_flag("--version", std::string("sidetable-cli ") + SIDETABLE_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // global options may also follow the command
  app.failure_message(FailureMessage);
  GlobalOptions g;
  CommandArgs a;
  app.add_option("--endpoint", g.endpoint, "sidecar endpoint")
      ->envname("SIDETABLE_ENDPOINT")
      ->capture_default_str();
  AddNumber(&app, "--timeout-ms", g.timeout_ms, "time to wait for each attempt's reply", 1,
            3'600'000)
      ->capture_default_str();
  app.add_option("--caller", g.caller, "writer identity recorded in the change log");
  app.add_option("--token", g.token, "signed access token sent with every request (docs/security.md)")
      ->envname("SIDETABLE_TOKEN");
  app.add_option("--token-file", g.token_file, "file holding the access token (instead of --token)")
      ->envname("SIDETABLE_TOKEN_FILE");
  AddNumber(&app, "--retries", g.retries,
            "attempts after the first when there is no reply or the server is busy "
            "(a retried write may have been applied already)",
            0, 100)
      ->capture_default_str();
  app.add_option("--curve-server-key", g.curve_server_key_file,
                 "CURVE: the sidecar's public key file (SERVER.pub); with --curve-key")
      ->envname("SIDETABLE_CURVE_SERVER_KEY");
  app.add_option("--curve-key", g.curve_key_file,
                 "CURVE: this client's secret key file (PREFIX.key, owner-only), allowed by the sidecar")
      ->envname("SIDETABLE_CURVE_KEY");

  auto table_arg = [&](CLI::App* cmd) { cmd->add_option("TABLE", a.table, "table name")->required(); };
  auto keys_args = [&](CLI::App* cmd) {
    cmd->add_option("PK", a.pk, "PartitionKey")->required();
    cmd->add_option("RK", a.rk, "RowKey")->required();
  };
  auto select_opt = [&](CLI::App* cmd) {
    // Split by SelectWithSystemProperties, not by CLI11, whose delimiter
    // drops empty fields: "A,,B" must be refused, not read as "A,B".
    cmd->add_option("--select", a.select, "properties to return, comma-separated");
  };
  const char* kIfMatch = "ETag the entity must have (default: the input's odata.etag, else *)";
  const char* kEmptyIfMatch = "give an ETag, or '*' for an unconditional write";

  app.add_subcommand("ping", "check the sidecar answers; prints its id and last LSN");
  auto* create = app.add_subcommand("create-table", "create a table");
  create->add_option("NAME", a.table, "table name")->required();
  auto* drop = app.add_subcommand("delete-table", "delete a table and its entities");
  drop->add_option("NAME", a.table, "table name")->required();
  auto* list = app.add_subcommand("list-tables", "list table names, one per line");
  list->add_option("--filter", a.filter, "$filter on TableName, e.g. \"TableName ge 'a'\"");

  auto* get = app.add_subcommand("get", "print one entity as JSON");
  table_arg(get);
  keys_args(get);
  select_opt(get);

  auto* insert = app.add_subcommand("insert", "insert an entity (fails if it exists)");
  table_arg(insert);
  a.input = "-";
  insert->add_option("JSON", a.input, "entity JSON, or - for stdin (the default)");
  for (const char* name : {"update", "merge"}) {
    auto* cmd = app.add_subcommand(name, std::string(name) == "update"
                                             ? "replace an existing entity"
                                             : "merge properties into an existing entity");
    table_arg(cmd);
    cmd->add_option("JSON", a.input, "entity JSON, or - for stdin")->required();
    cmd->add_option("--if-match", a.if_match, kIfMatch)->check(NotEmpty(kEmptyIfMatch));
  }
  auto* upsert = app.add_subcommand("upsert", "insert or replace (or merge, with --merge) an entity");
  table_arg(upsert);
  upsert->add_option("JSON", a.input, "entity JSON, or - for stdin")->required();
  upsert->add_flag("--merge", a.merge, "InsertOrMerge instead of InsertOrReplace");
  auto* del = app.add_subcommand("delete", "delete an entity");
  table_arg(del);
  keys_args(del);
  del->add_option("--if-match", a.if_match, "ETag the entity must have (default *)")
      ->check(NotEmpty(kEmptyIfMatch));

  auto* query = app.add_subcommand("query", "print every matching entity, following continuations");
  table_arg(query);
  query->add_option("--filter", a.filter, "OData $filter (docs/queries.md)");
  select_opt(query);
  AddNumber(query, "--top", a.top, "entities per page, 1-1000", 1, 1000);
  query->add_option("--format", a.format, "jsonl (one JSON object per line) or table")
      ->check(CLI::IsMember({"jsonl", "table"}))
      ->capture_default_str();
  AddNumber(query, "--limit", a.limit, "stop after this many entities (0 = all)", uint64_t{0});

  auto* batch = app.add_subcommand("batch", "run an entity group transaction from a JSON file");
  table_arg(batch);
  batch->add_option("FILE", a.input, "JSON array of {op, entity, ifMatch?}, or - for stdin")->required();

  auto* changes = app.add_subcommand("changes", "print change-log records as JSON lines");
  AddNumber(changes, "--from", a.from, "first LSN", uint64_t{0})->capture_default_str();
  AddNumber(changes, "--max", a.max, "most records to print (with --follow: no limit unless given)",
            uint64_t{1})
      ->capture_default_str();
  changes->add_flag("--follow,-f", a.follow,
                    "then wait for new records and print each as it commits, until Ctrl-C (like tail -f)");

  auto* lag = app.add_subcommand(
      "lag", "per derived table, source and Kafka partition: the applied LSN and the change records above it");
  // "" meant every table: `lag --derived "$T"` with $T unset reported all.
  lag->add_option("--derived", a.table, "only this derived table")
      ->check(NotEmpty("name a derived table, or leave --derived out for all of them"));
  AddNumber(lag, "--max-scan", a.max,
            "most change records to scan (counts above it are lower bounds)", uint64_t{1});
  bool lag_json = false;
  lag->add_flag("--json", lag_json, "one JSON object instead of the text table");

  auto* forget = app.add_subcommand("forget-derived",
                                    "stop counting TABLE as a derived table (forget its "
                                    "watermarks): for a table kept after its pattern "
                                    "left the workers' configuration");
  forget->add_option("TABLE", a.table, "the derived table")->required();

  auto* verify = app.add_subcommand(
      "verify", "check derived tables against their sources (exit 4 on divergence)");
  verify->add_option("--config", a.input, "the worker configuration whose patterns to verify")
      ->required();

  app.add_subcommand(
      "backup",
      "have the sidecar make a backup of its data directory in its storage.backup_dir; "
      "prints it as JSON");

  ReplayArgs replay_args;
  AddReplayCommands(app, replay_args);
  TokenArgs token_args;
  CLI::App* token = AddTokenCommands(app, token_args);
  PolicyArgs policy_args;
  CLI::App* policy = AddPolicyCommands(app, policy_args);
  std::string curve_prefix;
  AddCurveCommands(app, curve_prefix);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (std::string unknown = UnknownCommandMessage(app, e); !unknown.empty()) {
      std::fprintf(stderr, "sidetable-cli: %s\n", unknown.c_str());
      return kExitUsage;
    }
    return app.exit(e) == 0 ? kExitOk : kExitUsage;
  }

  const std::string command = app.get_subcommands().at(0)->get_name();
  Session s(g);
  if (command == "token") return RunTokenCommand(s, token_args, token->get_subcommands().at(0)->get_name());
  if (command == "policy") return RunPolicyCommand(s, policy_args, policy->get_subcommands().at(0)->get_name());
  if (command == "curve") return RunCurveKeygen(s, curve_prefix);
  if (command == "ping") return RunPing(s, a);
  if (command == "backup") return RunBackup(s, a);
  if (command == "verify") return RunVerify(s, a);
  if (command == "create-table") return RunCreateTable(s, a);
  if (command == "delete-table") return RunDeleteTable(s, a);
  if (command == "list-tables") return RunListTables(s, a);
  if (command == "get") return RunGet(s, a);
  if (command == "insert" || command == "update" || command == "merge" || command == "upsert") {
    return RunWrite(s, a, command);
  }
  if (command == "delete") return RunDelete(s, a);
  if (command == "query") return RunQuery(s, a);
  if (command == "batch") return RunBatch(s, a);
  if (command == "changes") {
    if (a.follow && changes->count("--max") == 0) a.max = UINT64_MAX;
    return RunChanges(s, a);
  }
  if (command == "lag") {
    if (lag->count("--max-scan") == 0) a.max = 200'000;
    a.format = lag_json ? "json" : "text";
    return RunLag(s, a);
  }
  if (command == "forget-derived") return RunForgetDerived(s, a);
  if (IsReplayCommand(command)) return RunReplayCommand(s, replay_args, command);
  return s.Usage("unknown command " + command);
}
