// sidetable-cli's replay commands (docs/replay.md): replay, audit, rebuild
// and derive, over tools/replay.
//
// Unlike the other commands these stream their output (it can be large):
// rows reach stdout or --output as they are made, so a failure can leave a
// partial output behind; the exit code says whether it is complete:
//   0 complete, 5 stopped early (a signal or --stop-after) with a checkpoint
//   to resume from, 6 complete but for Kafka messages that do not decode
//   (each named on stderr), 1-3 as for every command, 4 derive's verify
//   diverged.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "patterns/registry.h"
#include "tools/cli/commands.h"

namespace sidetable::cli {

inline constexpr int kExitStopped = 5;
inline constexpr int kExitUndecodable = 6;

struct ReplayArgs {
  // Source: the sidecar's change log, or Kafka with --kafka.
  std::string kafka;  // bootstrap servers
  std::string topic;  // default: sidetable.<sidecar id>.changes (asks the sidecar)
  int64_t kafka_offset = -1;
  std::string kafka_time;
  std::vector<std::string> kafka_properties;  // key=value
  // The topic holds one table's records (kafka.topic with {table}): its LSNs
  // have gaps by design, so they are not checked.
  bool one_table_topic = false;
  uint64_t from_lsn = 0, to_lsn = 0;
  // Filters (presence matters for pk and caller: "" is a valid value).
  std::string table, pk, rk_from, rk_to, caller, since, until;
  bool has_pk = false, has_caller = false, has_rk_from = false, has_rk_to = false;
  // Output.
  std::string output = "-";
  std::string format = "jsonl";
  bool summary = false;
  // Run control.
  std::string checkpoint;
  uint64_t stop_after = 0;
  std::string progress = "auto";
  // rebuild
  uint64_t at_lsn = 0;
  std::string at_time;
  std::string into_table;
  std::string target_endpoint;
  // derive
  std::string config;
  std::string index;  // which index_table pattern (its target); default: the only one
  bool no_verify = false;
};

// Registers the four subcommands on `app`.
void AddReplayCommands(CLI::App& app, ReplayArgs& args);
bool IsReplayCommand(const std::string& command);
int RunReplayCommand(Session& s, const ReplayArgs& args, const std::string& command);

// commands_verify.cc: verifies the given pattern configurations (exit 0 or
// kExitDiverged), writing the report into s.out.
int VerifyPatterns(Session& s, const std::vector<patterns::PatternConfig>& patterns);

}  // namespace sidetable::cli
