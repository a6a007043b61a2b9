// The sidetable-cli commands: each reads its arguments, talks to the sidecar
// through the C++ client and returns the process exit code.
//
// Output contract (docs/cli.md): a command writes its result to stdout only
// when it succeeds (output is buffered until then), and errors to stderr:
//   0 success, 1 the server answered an error, 2 usage or input error,
//   3 no reply or connection failure.
//
// Thread safety: one command per process, on the main thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/client.h"
#include "engine/status.h"

namespace sidetable::cli {


enum ExitCode : int {
  kExitOk = 0,
  kExitServerError = 1,
  kExitUsage = 2,
  kExitNoReply = 3,
  kExitDiverged = 4,  // verify: a derived table does not match its source
};

struct GlobalOptions {
  std::string endpoint = "tcp://127.0.0.1:5555";
  int timeout_ms = 5000;  // per attempt
  std::string caller;
  int retries = 2;  // attempts after the first
  // A signed access token for an authenticating sidecar: the text, or a
  // file holding it (--token-file; SIDETABLE_TOKEN_FILE).
  std::string token, token_file;
  // CURVE (docs/security.md, "Transport"): the sidecar's public key file and
  // this client's secret key file; both or neither.
  std::string curve_server_key_file, curve_key_file;
};

// The arguments of every command; each command reads the ones it declares.
struct CommandArgs {
  std::string table, pk, rk;
  std::string input;  // JSON text, or "-" for stdin (insert/update/merge/upsert); FILE or "-" (batch)
  std::string if_match;
  bool merge = false;  // upsert --merge
  std::string filter;
  std::vector<std::string> select;
  int top = 0;         // 0 = the server's page size
  uint64_t limit = 0;  // 0 = all
  std::string format = "jsonl";
  uint64_t from = 1;
  uint64_t max = 1000;
  bool follow = false;  // changes --follow: wait for new records (tail -f)
};

// One command's process-wide state: the lazily connected client and the
// buffered stdout.
class Session {
 public:
  explicit Session(GlobalOptions options) : options_(std::move(options)) {}
  // Connects on first use; nullptr after reporting the failure (see exit_code()).
  client::Client* Client();
  // Another connection with the same options to `endpoint` (rebuild's
  // target sidecar); nullptr after reporting the failure.
  std::unique_ptr<client::Client> ConnectTo(const std::string& endpoint);
  // Reports `s` on stderr and returns the exit code it maps to. `batch`
  // adds the failing operation's index.
  int Fail(const Status& s, bool batch = false);
  // Reports a usage or input error.
  int Usage(const std::string& message);
  // Writes the buffered output; returns kExitOk, or kExitUsage after
  // saying on stderr that stdout could not be written (a full disk).
  int Finish();

  std::string out;  // stdout, written by Finish()
  int connect_exit = kExitOk;

 private:
  // The client options every connection shares, the first Ping's included:
  // CURVE keys, the token and the caller (files read once); false after
  // reporting a bad key file or an unreadable token file.
  bool BaseOptions(client::ClientOptions* o);

  int StdoutFailed(int error);

  GlobalOptions options_;
  bool stdout_failed_ = false;
  std::unique_ptr<client::Client> client_;
  std::optional<client::CurveClientKeys> curve_;
  std::optional<std::string> token_;  // --token, or --token-file's text
};

// The text of a JSON argument: `arg` itself, or all of stdin when it is "-".
bool ReadJsonArgument(const std::string& arg, std::string* text);
// All of a file, or of stdin for "-".
bool ReadFileArgument(const std::string& path, std::string* text);
// Why the file at `path` cannot be read ("No such file or directory", "is a
// directory", ...); "" when it can. Checked before a loader that reports
// these as "<file>: bad file: <file>" (yaml-cpp's LoadFile).
std::string UnreadableFileReason(const std::string& path);

// The $select `get` and `query` send for --select: the given names plus
// PartitionKey, RowKey and Timestamp, which the server returns only when
// selected, each name once; empty (the whole entity) stays empty.
// InvalidInput when that passes the $select bound of 255 names.
Result<std::vector<std::string>> SelectWithSystemProperties(const std::vector<std::string>& select);

int RunPing(Session& s, const CommandArgs& a);
int RunVerify(Session& s, const CommandArgs& a);
int RunCreateTable(Session& s, const CommandArgs& a);
int RunDeleteTable(Session& s, const CommandArgs& a);
int RunListTables(Session& s, const CommandArgs& a);
int RunGet(Session& s, const CommandArgs& a);
// insert, update, merge, upsert
int RunWrite(Session& s, const CommandArgs& a, const std::string& command);
int RunDelete(Session& s, const CommandArgs& a);
int RunQuery(Session& s, const CommandArgs& a);
int RunBatch(Session& s, const CommandArgs& a);
int RunChanges(Session& s, const CommandArgs& a);
// lag: watermarks and the change records above them (--derived in `table`,
// --max-scan in `max`, --json as format "json").
int RunLag(Session& s, const CommandArgs& a);
// forget-derived: the table in `table` stops counting as derived (its
// watermarks forgotten); says which pairs were registered.
int RunForgetDerived(Session& s, const CommandArgs& a);
// backup: the sidecar makes a backup in its storage.backup_dir; prints it.
int RunBackup(Session& s, const CommandArgs& a);

}  // namespace sidetable::cli
