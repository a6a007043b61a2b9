// The replay commands' arguments (docs/replay.md) and their dispatch.
#include "tools/cli/replay_commands.h"

#include "tools/cli/number_option.h"

namespace sidetable::cli {

int RunStream(Session& s, const ReplayArgs& a, const std::string& command);  // commands_audit.cc
int RunRebuild(Session& s, const ReplayArgs& a);                             // commands_rebuild.cc
int RunDerive(Session& s, const ReplayArgs& a);

namespace {

void SourceOptions(CLI::App* cmd, ReplayArgs& a, bool ranges) {
  cmd->add_option("--kafka", a.kafka, "read the change topic at these Kafka bootstrap servers instead of "
                                      "the sidecar's change log");
  cmd->add_option("--topic", a.topic, "the change topic (default: sidetable.<sidecar id>.changes, asked of the sidecar)");
  cmd->add_option("--kafka-property", a.kafka_properties, "extra librdkafka property key=value (repeatable)");
  cmd->add_flag("--topic-of-one-table", a.one_table_topic,
                "the topic holds one table's records (kafka.topic with {table}): LSN gaps are "
                "expected and not "
                "checked");
  if (!ranges) return;
  AddNumber(cmd, "--kafka-offset", a.kafka_offset, "start every partition at this offset",
            int64_t{0});
  cmd->add_option("--kafka-time", a.kafka_time, "start every partition at the first message at or after this time");
  AddNumber(cmd, "--from-lsn", a.from_lsn, "first LSN (default: the oldest available)",
            uint64_t{0});
  AddNumber(cmd, "--to-lsn", a.to_lsn, "last LSN (default: the newest when the run starts)",
            uint64_t{0});
}

void KeyOptions(CLI::App* cmd, ReplayArgs& a) {
  // "" is a valid key, so presence is recorded apart from the value.
  cmd->add_option("--pk", a.pk, "only this PartitionKey")->each([&a](const std::string&) { a.has_pk = true; });
  cmd->add_option("--rk-from", a.rk_from, "only RowKeys >= this")->each([&a](const std::string&) {
    a.has_rk_from = true;
  });
  cmd->add_option("--rk-to", a.rk_to, "only RowKeys < this")->each([&a](const std::string&) { a.has_rk_to = true; });
}

void RunOptions(CLI::App* cmd, ReplayArgs& a) {
  cmd->add_option("--checkpoint", a.checkpoint,
                  "save progress to FILE every few seconds and when stopped; a run finding FILE resumes "
                  "from it; a finished run removes it");
  AddNumber(cmd, "--stop-after", a.stop_after,
            "read at most N records in this run, then checkpoint and exit 5 (0 = no limit)",
            uint64_t{0});
  cmd->add_option("--progress", a.progress, "events, rate and ETA on stderr: auto (when a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->capture_default_str();
}

}  // namespace

void AddReplayCommands(CLI::App& app, ReplayArgs& a) {
  auto* replay = app.add_subcommand("replay", "print the change stream as change records (JSON lines), filtered");
  auto* audit = app.add_subcommand(
      "audit", "who changed what, when: a row per changed entity with the property-level difference");
  for (CLI::App* cmd : {replay, audit}) {
    SourceOptions(cmd, a, true);
    cmd->add_option("--table", a.table, "only this table");
    KeyOptions(cmd, a);
    cmd->add_option("--by", a.caller, "only changes made by this caller identity (\"\" for none)")
        ->each([&a](const std::string&) { a.has_caller = true; });
    cmd->add_option("--since", a.since, "only changes committed at or after this time");
    cmd->add_option("--until", a.until, "only changes committed before this time");
    cmd->add_option("--output", a.output, "write to FILE instead of stdout (needed for an exact resume after kill -9)");
    RunOptions(cmd, a);
  }
  audit->add_option("--format", a.format, "jsonl or csv")->check(CLI::IsMember({"jsonl", "csv"}))->capture_default_str();
  audit->add_flag("--summary", a.summary, "print only the counts by table, operation and caller");

  auto* rebuild = app.add_subcommand("rebuild", "a table (or key range) as it was at an LSN or a time, into a new "
                                                "table or JSON lines; the live table is not touched");
  rebuild->add_option("TABLE", a.table, "the table to rebuild")->required();
  AddNumber(rebuild, "--at-lsn", a.at_lsn, "the state after this commit", uint64_t{1});
  rebuild->add_option("--at-time", a.at_time, "the state after the last commit at or before this time");
  rebuild->add_option("--into-table", a.into_table, "create this new table with the rebuilt entities");
  rebuild->add_option("--target-endpoint", a.target_endpoint, "the sidecar of --into-table (default: --endpoint)");
  rebuild->add_option("--output", a.output, "JSON lines file (default stdout)");
  SourceOptions(rebuild, a, false);
  KeyOptions(rebuild, a);
  RunOptions(rebuild, a);

  auto* derive = app.add_subcommand(
      "derive", "build an index_table pattern's table afresh (snapshot + change log, no gap, nothing twice), then verify");
  derive->add_option("--config", a.config, "the worker configuration holding the pattern")->required();
  derive->add_option("--index", a.index, "which index_table pattern, by its target (default: the only one)");
  derive->add_option("--into", a.into_table, "build into this table instead of the pattern's target");
  derive->add_flag("--no-verify", a.no_verify, "skip the verify at the end");
  RunOptions(derive, a);
}

bool IsReplayCommand(const std::string& command) {
  return command == "replay" || command == "audit" || command == "rebuild" || command == "derive";
}

int RunReplayCommand(Session& s, const ReplayArgs& a, const std::string& command) {
  if (command == "rebuild") return RunRebuild(s, a);
  if (command == "derive") return RunDerive(s, a);
  return RunStream(s, a, command);
}

}  // namespace sidetable::cli
