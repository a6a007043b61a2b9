// sidetable-cli end to end: the real server binary and the real CLI binary,
// checking stdout, stderr and the exit code of every command.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/kafka/partitioner.h"
#include "events/entity_json.h"
#include "testing/child_process.h"
#include "testing/text.h"
#include "tests/sidecar/e2e_fixture.h"

namespace sidetable {
namespace {

using client::EntityBuilder;

struct CliResult {
  int exit_code = -1;
  std::string out, err;
};

std::string ReadAll(const std::string& path) { return testing::ReadWholeFile(path); }

using testing::Contains;
using testing::Lines;

// Runs sidetable-cli with `args`, `input` on stdin and extra environment
// variables; waits at most 20 s.
// `stdout_to` replaces the file stdout goes to (a /dev/full, say).
CliResult RunCli(const testing::TempDir& dir, const std::vector<std::string>& args,
                 const std::string& input = "",
                 const std::vector<std::pair<std::string, std::string>>& env = {},
                 const std::string& stdout_to = "") {
  static int counter = 0;
  const std::string base = dir.Sub("cli" + std::to_string(counter++));
  const std::string in_path = base + ".in", err_path = base + ".err";
  const std::string out_path = stdout_to.empty() ? base + ".out" : stdout_to;
  std::ofstream(in_path, std::ios::binary) << input;
  std::vector<std::string> argv_s = {SIDETABLE_CLI};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  pid_t pid = fork();
  if (pid == 0) {
    int in = open(in_path.c_str(), O_RDONLY);
    int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) _exit(126);
    dup2(in, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    unsetenv("SIDETABLE_ENDPOINT");
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  CliResult r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.err = "timed out";
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  if (stdout_to.empty()) r.out = ReadAll(out_path);
  r.err = ReadAll(err_path);
  return r;
}

std::string Describe(const CliResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out.substr(0, 2000) + "\nstderr: " + r.err;
}

// A sidecar at its connection bound is named, not taken for one that is
// not there (client/connection_watch.h).
class CliFullSidecarTest : public testing::SidecarTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    return {"--durability", "os", "--max-connections", "1"};
  }
};

TEST_F(CliFullSidecarTest, ASidecarAtItsConnectionBoundIsSaidSo) {
  ASSERT_TRUE(client_->Ping().ok());  // holds the one connection
  CliResult r = RunCli(dir_, {"--endpoint", server_->endpoint(), "--timeout-ms", "500", "ping"});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "closed the connection during the handshake")) << r.err;
  EXPECT_TRUE(Contains(r.err, "sidecar.max_connections")) << r.err;
  EXPECT_FALSE(Contains(r.err, "is the sidecar running?")) << r.err;
  EXPECT_TRUE(client_->Ping().ok());
}

class CliTest : public testing::SidecarTest {
 protected:
  CliResult Cli(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"--endpoint", server_->endpoint()});
    return RunCli(dir_, args, input);
  }
  // Runs a command that must succeed; returns its stdout.
  std::string Ok(std::vector<std::string> args, const std::string& input = "") {
    CliResult r = Cli(std::move(args), input);
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_EQ(r.err, "");
    return r.out;
  }
  // Runs a command the server must refuse with `error` ("Code (status)").
  CliResult ServerError(std::vector<std::string> args, std::string_view error, const std::string& input = "") {
    CliResult r = Cli(std::move(args), input);
    EXPECT_EQ(r.exit_code, 1) << Describe(r);
    EXPECT_TRUE(r.err.starts_with(std::string(error) + ": ")) << Describe(r);
    EXPECT_EQ(r.out, "") << "nothing on stdout on failure";
    return r;
  }
  std::string EtagOf(const std::string& table, const std::string& pk, const std::string& rk) {
    auto e = client_->Get(table, pk, rk);
    EXPECT_TRUE(e.ok()) << e.status().ToString();
    return e.ok() ? e->etag : "";
  }
  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = dir_.Sub(name);
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
};

constexpr const char* kEveryType =
    R"({"PartitionKey":"Sales","RowKey":"1","Name":"Ana \"A\" \u00e9 \ud83d\ude00","Age":34,)"
    R"("Salary":"5400000000","Salary@odata.type":"Edm.Int64",)"
    R"("Min":"-9223372036854775808","Min@odata.type":"Edm.Int64",)"
    R"("Hired":"2019-05-20T09:00:00.1234567Z","Hired@odata.type":"Edm.DateTime",)"
    R"("Id":"c9da6455-213d-42c9-9a79-3e9149a57833","Id@odata.type":"Edm.Guid",)"
    R"("Raw":"AAE=","Raw@odata.type":"Edm.Binary","Empty":"","Empty@odata.type":"Edm.Binary",)"
    R"("Score":1.5,"Whole":2.0,"Nan":"NaN","Nan@odata.type":"Edm.Double",)"
    R"("Inf":"-Infinity","Inf@odata.type":"Edm.Double","Active":true})";

// `backup` prints what the sidecar made; a sidecar without a backup
// directory answers InvalidInput (exit 1, nothing on stdout).
class CliBackupTest : public CliTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    return {"--durability", "os", "--backup-dir", dir_.Sub("backups")};
  }
};

TEST_F(CliBackupTest, BackupPrintsTheBackupAsJson) {
  ASSERT_TRUE(client_->CreateTable("Orders").ok());
  const std::string out = Ok({"backup"});
  EXPECT_TRUE(Contains(out, R"("name":"backup-)")) << out;
  EXPECT_TRUE(Contains(out, R"("lastLsn":1,)")) << out;
  EXPECT_TRUE(Contains(out, R"("tables":1,)")) << out;
  EXPECT_TRUE(Contains(out, R"("removed":[])")) << out;
  ASSERT_EQ(Lines(out).size(), 1u) << out;
  // One backup beside the sidecar's lock file (.sidetable-backups.lock).
  int backups = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_.Sub("backups"))) {
    backups += e.path().filename().string().starts_with("backup-");
  }
  EXPECT_EQ(backups, 1);
}

TEST_F(CliTest, BackupWithoutABackupDirectoryExitsOne) {
  CliResult r = ServerError({"backup"}, "InvalidInput (400)");
  EXPECT_TRUE(Contains(r.err, "storage.backup_dir")) << r.err;
}

TEST_F(CliTest, PingAndEnvironmentEndpoint) {
  EXPECT_TRUE(Contains(Ok({"ping"}), R"("version":1)"));
  CliResult r = RunCli(dir_, {"ping"}, "", {{"SIDETABLE_ENDPOINT", server_->endpoint()}});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  EXPECT_TRUE(Contains(r.out, R"("lsn":0)")) << r.out;
}

TEST_F(CliTest, TablesLifecycle) {
  EXPECT_EQ(Ok({"create-table", "People"}), "");
  EXPECT_EQ(Ok({"create-table", "Orders"}), "");
  EXPECT_EQ(Ok({"list-tables"}), "Orders\nPeople\n");
  EXPECT_EQ(Ok({"list-tables", "--filter", "TableName ge 'P'"}), "People\n");
  ServerError({"create-table", "people"}, "TableAlreadyExists (409)");
  ServerError({"create-table", "1bad"}, "InvalidResourceName (400)");
  EXPECT_EQ(Ok({"delete-table", "Orders"}), "");
  ServerError({"delete-table", "Orders"}, "TableNotFound (404)");
  EXPECT_EQ(Ok({"list-tables"}), "People\n");
}

TEST_F(CliTest, InsertGetRoundTripsEveryType) {
  Ok({"create-table", "People"});
  const std::string inserted = Ok({"insert", "People", kEveryType});
  EXPECT_TRUE(Contains(inserted, R"("etag":"W/\")")) << inserted;

  auto expected = json::ParseEntityJson(kEveryType);
  ASSERT_TRUE(expected.ok());
  // What the server stored, read with the C++ client: every value exact.
  auto stored = client_->Get("People", "Sales", "1");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->properties, expected->properties);
  // What `get` prints parses back to the same entity, with its ETag and Timestamp.
  const std::string got = Ok({"get", "People", "Sales", "1"});
  ASSERT_EQ(Lines(got).size(), 1u);
  auto printed = json::ParseEntityJson(got);
  ASSERT_TRUE(printed.ok()) << printed.status().ToString() << "\n" << got;
  EXPECT_EQ(printed->properties, expected->properties);
  EXPECT_EQ(printed->etag, stored->etag);
  EXPECT_TRUE(Contains(got, "\"Timestamp\":\"" + FormatDateTime(stored->timestamp) + "\"")) << got;
  EXPECT_EQ(got, json::EntityToJson(*stored) + "\n");

  // --select
  const std::string some = Ok({"get", "People", "Sales", "1", "--select", "Age,Salary"});
  auto projected = json::ParseEntityJson(some);
  ASSERT_TRUE(projected.ok());
  ASSERT_EQ(projected->properties.size(), 2u);
  EXPECT_EQ(*projected->Find("Salary"), Value::Int64(5'400'000'000));

  // `get` output fed back through stdin: an update conditioned on its odata.etag.
  EXPECT_EQ(Cli({"update", "People", "-"}, got).exit_code, 0);
  ServerError({"update", "People", "-"}, "UpdateConditionNotSatisfied (412)", got);  // now stale
  ServerError({"insert", "People", kEveryType}, "EntityAlreadyExists (409)");
  ServerError({"get", "People", "Sales", "2"}, "ResourceNotFound (404)");
}

TEST_F(CliTest, ConditionalWritesWithStaleEtag) {
  Ok({"create-table", "Tab"});
  Ok({"insert", "Tab", R"({"PartitionKey":"p","RowKey":"r","V":1})"});
  const std::string old_etag = EtagOf("Tab", "p", "r");
  Ok({"update", "Tab", R"({"PartitionKey":"p","RowKey":"r","V":2})", "--if-match", old_etag});
  const std::string new_etag = EtagOf("Tab", "p", "r");
  ASSERT_NE(old_etag, new_etag);

  CliResult r = ServerError({"update", "Tab", R"({"PartitionKey":"p","RowKey":"r","V":3})", "--if-match", old_etag},
                            "UpdateConditionNotSatisfied (412)");
  EXPECT_FALSE(Contains(r.err, "operation")) << "single writes do not name an operation";
  ServerError({"merge", "Tab", R"({"PartitionKey":"p","RowKey":"r","W":1})", "--if-match", old_etag},
              "UpdateConditionNotSatisfied (412)");
  ServerError({"delete", "Tab", "p", "r", "--if-match", old_etag}, "UpdateConditionNotSatisfied (412)");
  Ok({"merge", "Tab", R"({"PartitionKey":"p","RowKey":"r","W":1})", "--if-match", new_etag});
  auto merged = client_->Get("Tab", "p", "r");
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(*merged->Find("V"), Value::Int32(2));
  EXPECT_EQ(*merged->Find("W"), Value::Int32(1));

  // upsert replaces, upsert --merge keeps the other properties.
  Ok({"upsert", "Tab", R"({"PartitionKey":"p","RowKey":"r","X":1})", "--merge"});
  ASSERT_TRUE(client_->Get("Tab", "p", "r").ok());
  EXPECT_EQ(client_->Get("Tab", "p", "r")->properties.size(), 3u);
  Ok({"upsert", "Tab", R"({"PartitionKey":"p","RowKey":"r","X":1})"});
  ASSERT_TRUE(client_->Get("Tab", "p", "r").ok());
  EXPECT_EQ(client_->Get("Tab", "p", "r")->properties.size(), 1u);
  ServerError({"update", "Tab", R"({"PartitionKey":"p","RowKey":"missing"})"}, "ResourceNotFound (404)");

  const std::string deleted = Ok({"delete", "Tab", "p", "r"});
  EXPECT_TRUE(Contains(deleted, R"("lsn":)")) << deleted;
  ServerError({"get", "Tab", "p", "r"}, "ResourceNotFound (404)");
}

// An empty condition is refused, exit 2, and nothing changes: the sidecar
// reads an empty ifMatch as none, so `--if-match "$ETAG"` with $ETAG empty
// (the `get` before it failed) replaced or deleted whatever was stored, the
// lost update the script guarded against (found from outside).
TEST_F(CliTest, AnEmptyConditionIsRefusedAndNothingChanges) {
  Ok({"create-table", "Tab"});
  Ok({"insert", "Tab", R"({"PartitionKey":"p","RowKey":"r","V":1})"});
  const std::string etag = EtagOf("Tab", "p", "r");
  const std::string batch_path = WriteFile(
      "empty-if-match.json",
      R"([{"op":"Merge","entity":{"PartitionKey":"p","RowKey":"r","V":9},"ifMatch":""}])");
  struct Case {
    std::vector<std::string> args;
    std::string input, says;
  };
  const std::vector<Case> cases = {
      {{"update", "Tab", R"({"PartitionKey":"p","RowKey":"r","V":9})", "--if-match", ""},
       "",
       "--if-match"},
      {{"merge", "Tab", R"({"PartitionKey":"p","RowKey":"r","V":9})", "--if-match", ""},
       "",
       "--if-match"},
      {{"delete", "Tab", "p", "r", "--if-match", ""}, "", "--if-match"},
      {{"update", "Tab", "-"},
       R"({"odata.etag":"","PartitionKey":"p","RowKey":"r","V":9})",
       "'odata.etag'"},
      {{"merge", "Tab", "-"},
       R"({"odata.etag":"","PartitionKey":"p","RowKey":"r","V":9})",
       "'odata.etag'"},
      {{"batch", "Tab", batch_path}, "", "operation 0: \"ifMatch\" is empty"},
  };
  for (const Case& c : cases) {
    CliResult r = Cli(c.args, c.input);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << ": " << Describe(r);
    EXPECT_TRUE(Contains(r.err, c.says)) << Describe(r);
    EXPECT_TRUE(Contains(r.err, "empty")) << Describe(r);
    EXPECT_EQ(r.out, "");
  }
  EXPECT_EQ(EtagOf("Tab", "p", "r"), etag) << "nothing was written";
  // An ETag and "*" still work.
  Ok({"merge", "Tab", R"({"PartitionKey":"p","RowKey":"r","W":1})", "--if-match", etag});
  Ok({"delete", "Tab", "p", "r", "--if-match", "*"});
}

// `policy clear TABLE ""` (an unset $ID) removed every policy, revoking
// every token issued under them; only an ID left out means all.
TEST_F(CliTest, AnEmptyPolicyIdClearsNothing) {
  Ok({"create-table", "Tab"});
  Ok({"policy", "set", "Tab", "ro", "--permissions", "r", "--expiry", "1d"});
  CliResult r = Cli({"policy", "clear", "Tab", ""});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "ID: got an empty value")) << Describe(r);
  EXPECT_TRUE(Ok({"policy", "get", "Tab"}).starts_with("ro\t")) << "the policy is still there";
  Ok({"policy", "clear", "Tab"});
  EXPECT_EQ(Ok({"policy", "get", "Tab"}), "");
}

// stdout that cannot be written (a full disk) is exit 2 and said on
// stderr. stdio writes an output larger than its buffer straight through,
// and fflush then had nothing to report: `query T > export.jsonl` on a full
// disk exited 0 with the file empty, and a small output exited 2 silently
// (found from outside).
TEST_F(CliTest, AFullStdoutIsAnErrorNotASuccess) {
  if (access("/dev/full", W_OK) != 0) GTEST_SKIP() << "no /dev/full";
  Ok({"create-table", "Tab"});
  Batch b("Tab");  // ~30 KiB of output, past stdio's buffer
  for (int i = 0; i < 60; ++i)
    b.Insert(EntityBuilder("p", std::to_string(i)).String("Pad", std::string(400, 'x')).Build());
  ASSERT_TRUE(client_->Execute(b).ok());
  for (const std::vector<std::string>& args : {std::vector<std::string>{"query", "Tab"},
                                               {"query", "Tab", "--format", "table"},
                                               {"changes", "--from", "1"},
                                               {"get", "Tab", "p", "1"},
                                               {"ping"},
                                               // --follow went on polling and writing into the
                                               // void for ever: `changes -f | head -1` never ended.
                                               {"changes", "--from", "1", "--follow"}}) {
    std::vector<std::string> full = {"--endpoint", server_->endpoint()};
    full.insert(full.end(), args.begin(), args.end());
    CliResult r = RunCli(dir_, full, "", {}, "/dev/full");
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << Describe(r);
    EXPECT_TRUE(Contains(r.err, "sidetable-cli: cannot write stdout: No space left on device"))
        << Describe(r);
  }
}

TEST_F(CliTest, QueryFollowsEveryPage) {
  Ok({"create-table", "Big"});
  for (int p = 0; p < 5; p++) {
    for (int b = 0; b < 5; b++) {
      Batch batch("Big");
      for (int i = 0; i < 100; i++) {
        const int n = p * 500 + b * 100 + i;
        char rk[16];
        std::snprintf(rk, sizeof rk, "%05d", n);
        batch.Insert(EntityBuilder("p" + std::to_string(p), rk).Int32("N", n).String("S", "x").Build());
      }
      ASSERT_TRUE(client_->Execute(batch).ok());
    }
  }
  const auto all = Lines(Ok({"query", "Big", "--top", "1000"}));
  ASSERT_EQ(all.size(), 2500u);  // three pages of at most 1000
  for (size_t i = 0; i < all.size(); i += 499) {
    auto e = json::ParseEntityJson(all[i]);
    ASSERT_TRUE(e.ok()) << all[i];
    EXPECT_EQ(*e->Find("N"), Value::Int32(static_cast<int32_t>(i)));  // key order
  }
  EXPECT_EQ(Lines(Ok({"query", "Big", "--top", "7"})).size(), 2500u);

  const auto some = Lines(Ok({"query", "Big", "--filter", "N ge 2000 and S eq 'x'", "--select", "N", "--top", "300"}));
  ASSERT_EQ(some.size(), 500u);
  auto first = json::ParseEntityJson(some[0]);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->properties, (std::vector<Property>{{"N", Value::Int32(2000)}}));
  EXPECT_EQ(Lines(Ok({"query", "Big", "--filter", "PartitionKey eq 'p1'"})).size(), 500u);
  EXPECT_EQ(Lines(Ok({"query", "Big", "--limit", "1234", "--top", "1000"})).size(), 1234u);
  EXPECT_EQ(Ok({"query", "Big", "--filter", "N lt 0"}), "");

  ServerError({"query", "Missing"}, "TableNotFound (404)");
  ServerError({"query", "Big", "--filter", "N eq"}, "InvalidInput (400)");
}

TEST_F(CliTest, QueryAsTable) {
  Ok({"create-table", "Tab"});
  Ok({"insert", "Tab", R"({"PartitionKey":"p","RowKey":"1","Name":"Ana","Age":34})"});
  Ok({"insert", "Tab", R"({"PartitionKey":"p","RowKey":"2","City":"Oslo","Name":"Bo"})"});
  const auto lines = Lines(Ok({"query", "Tab", "--format", "table"}));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "PartitionKey  RowKey  Name  Age  City");
  EXPECT_EQ(lines[1], "------------  ------  ----  ---  ----");
  EXPECT_EQ(lines[2], "p             1       Ana   34");
  EXPECT_EQ(lines[3], "p             2       Bo         Oslo");
  CliResult bad = Cli({"query", "Tab", "--format", "xml"});
  EXPECT_EQ(bad.exit_code, 2) << Describe(bad);
}

TEST_F(CliTest, BatchFromFileAndFailingOperation) {
  Ok({"create-table", "Tab"});
  Ok({"insert", "Tab", R"({"PartitionKey":"p","RowKey":"old","V":1})"});
  const std::string good = WriteFile("good.json", R"([
    {"op":"Insert","entity":{"PartitionKey":"p","RowKey":"a","V":1}},
    {"op":"InsertOrReplace","entity":{"PartitionKey":"p","RowKey":"b","V":2}},
    {"op":"Delete","entity":{"PartitionKey":"p","RowKey":"old"},"ifMatch":"*"}])");
  const std::string out = Ok({"batch", "Tab", good});
  EXPECT_TRUE(Contains(out, R"("etags":["W/\")")) << out;
  EXPECT_TRUE(Contains(out, R"(",""]})")) << "the delete's etag is empty: " << out;
  EXPECT_TRUE(client_->Get("Tab", "p", "a").ok());
  EXPECT_EQ(client_->Get("Tab", "p", "old").status().code(), Code::kResourceNotFound);

  const std::string failing = WriteFile("bad.json", R"([
    {"op":"Insert","entity":{"PartitionKey":"p","RowKey":"c","V":3}},
    {"op":"Insert","entity":{"PartitionKey":"p","RowKey":"a","V":4}}])");
  CliResult r = ServerError({"batch", "Tab", failing}, "EntityAlreadyExists (409)");
  EXPECT_TRUE(Contains(r.err, "operation 1")) << r.err;
  EXPECT_EQ(client_->Get("Tab", "p", "c").status().code(), Code::kResourceNotFound) << "all or nothing";

  // From stdin.
  Ok({"batch", "Tab", "-"}, R"([{"op":"Merge","entity":{"PartitionKey":"p","RowKey":"a","W":1}}])");
  auto merged = client_->Get("Tab", "p", "a");
  ASSERT_TRUE(merged.ok());
  EXPECT_NE(merged->Find("W"), nullptr);

  CliResult unknown = Cli({"batch", "Tab", WriteFile("op.json", R"([{"op":"Upsert","entity":{}}])")});
  EXPECT_EQ(unknown.exit_code, 2) << Describe(unknown);
  EXPECT_TRUE(Contains(unknown.err, "operation 0")) << unknown.err;
  CliResult missing = Cli({"batch", "Tab", dir_.Sub("no-such-file.json")});
  EXPECT_EQ(missing.exit_code, 2) << Describe(missing);
  EXPECT_EQ(missing.out, "");
}

TEST_F(CliTest, InputAndUsageErrorsExitTwo) {
  Ok({"create-table", "Tab"});
  CliResult bad_json = Cli({"insert", "Tab", R"({"PartitionKey":"p","RowKey":)"});
  EXPECT_EQ(bad_json.exit_code, 2) << Describe(bad_json);
  EXPECT_TRUE(Contains(bad_json.err, "invalid JSON")) << bad_json.err;
  EXPECT_EQ(bad_json.out, "");

  CliResult bad_type = Cli({"insert", "Tab", "-"}, R"({"PartitionKey":"p","RowKey":"r","X":1,"X@odata.type":"Edm.Money"})");
  EXPECT_EQ(bad_type.exit_code, 2) << Describe(bad_type);
  EXPECT_TRUE(Contains(bad_type.err, "property 'X'")) << bad_type.err;
  EXPECT_TRUE(Contains(bad_type.err, "Edm.Money")) << bad_type.err;
  EXPECT_EQ(client_->Get("Tab", "p", "r").status().code(), Code::kResourceNotFound);

  EXPECT_EQ(Cli({"get", "Tab", "p"}).exit_code, 2);             // missing RK
  EXPECT_EQ(Cli({"frobnicate"}).exit_code, 2);                // unknown command
  EXPECT_EQ(Cli({}).exit_code, 2);                            // no command
  EXPECT_EQ(Cli({"query", "Tab", "--top", "0"}).exit_code, 2);  // out of range
  EXPECT_EQ(Cli({"--retries", "x", "ping"}).exit_code, 2);

  CliResult help = Cli({"query", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_TRUE(Contains(help.out, "--filter")) << help.out;
  EXPECT_TRUE(Contains(help.out, "--format")) << help.out;

  // The server's own validation is a server error, exit 1.
  ServerError({"insert", "Tab", R"({"PartitionKey":"p","RowKey":"r","bad name":1})"}, "PropertyNameInvalid (400)");
}

TEST_F(CliTest, ChangesShowCallerAndImages) {
  Ok({"create-table", "Tab"});
  Ok({"--caller", "hr-app", "insert", "Tab", R"({"PartitionKey":"p","RowKey":"r","Big":"7","Big@odata.type":"Edm.Int64"})"});
  Ok({"merge", "Tab", R"({"PartitionKey":"p","RowKey":"r","V":1})", "--caller", "other"});
  const auto lines = Lines(Ok({"changes"}));
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_TRUE(Contains(lines[0], R"("lsn":1,"kind":"TableCreated")")) << lines[0];
  EXPECT_TRUE(Contains(lines[1], R"("kind":"Entities")")) << lines[1];
  EXPECT_TRUE(Contains(lines[1], R"("pk":"p","caller":"hr-app")")) << lines[1];
  EXPECT_TRUE(Contains(lines[1], R"("op":"Insert")")) << lines[1];
  EXPECT_TRUE(Contains(lines[1], R"("Big":"7","Big@odata.type":"Edm.Int64")")) << lines[1];
  EXPECT_FALSE(Contains(lines[1], R"("before")")) << lines[1];
  EXPECT_TRUE(Contains(lines[2], R"("caller":"other")")) << lines[2];
  EXPECT_TRUE(Contains(lines[2], R"("before":{)")) << lines[2];
  EXPECT_TRUE(Contains(lines[2], R"("after":{)")) << lines[2];

  EXPECT_EQ(Lines(Ok({"changes", "--from", "2", "--max", "1"})), std::vector<std::string>{lines[1]});
  EXPECT_EQ(Ok({"changes", "--from", "4"}), "");
}

// Negative numbers for unsigned options used to wrap (CLI11 reads them with
// strtoull): `changes --from -5` printed nothing and exited 0. And the range
// checks printed their bounds as ~300-digit doubles. Each is refused before
// anything is sent, naming the option, with its bound in plain digits.
TEST_F(CliTest, NegativeAndOutOfRangeNumbersAreRefusedNamingTheOption) {
  Ok({"create-table", "Tab"});
  Ok({"insert", "Tab", R"({"PartitionKey":"p","RowKey":"r"})"});
  const std::string config = WriteFile("w.yaml",
                                       "patterns:\n  - name: index_table\n    source: Tab\n"
                                       "    target: TabIdx\n    properties: V\n");
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"changes", "--from", "-5"}, "--from: must be at least 0, got -5"},
      {{"changes", "--from", "-1"}, "--from: must be at least 0, got -1"},
      {{"changes", "--max", "0"}, "--max: must be at least 1, got 0"},
      {{"changes", "--max", "-1"}, "--max: must be at least 1, got -1"},
      {{"changes", "--from", "0x10"}, "--from: expected a whole number, got '0x10'"},
      {{"changes", "--from", "1.5"}, "--from: expected a whole number, got '1.5'"},
      {{"changes", "--from", "18446744073709551616"},
       "--from: must be at most 18446744073709551615"},
      {{"replay", "--from-lsn", "-3"}, "--from-lsn: must be at least 0, got -3"},
      {{"replay", "--to-lsn", "-3"}, "--to-lsn: must be at least 0, got -3"},
      {{"audit", "--from-lsn", "-1"}, "--from-lsn: must be at least 0, got -1"},
      {{"replay", "--stop-after", "-1"}, "--stop-after: must be at least 0, got -1"},
      {{"replay", "--kafka-offset", "-5"}, "--kafka-offset: must be at least 0, got -5"},
      {{"lag", "--max-scan", "0"}, "--max-scan: must be at least 1, got 0"},
      {{"lag", "--max-scan", "-2"}, "--max-scan: must be at least 1, got -2"},
      {{"lag", "--derived", ""}, "--derived: got an empty value"},
      {{"rebuild", "Tab", "--at-lsn", "0"}, "--at-lsn: must be at least 1, got 0"},
      {{"rebuild", "Tab", "--at-lsn", "-1"}, "--at-lsn: must be at least 1, got -1"},
      {{"rebuild", "Tab", "--at-lsn", "1", "--stop-after", "-1"},
       "--stop-after: must be at least 0, got -1"},
      {{"derive", "--config", config, "--stop-after", "-1"},
       "--stop-after: must be at least 0, got -1"},
      {{"query", "Tab", "--limit", "-1"}, "--limit: must be at least 0, got -1"},
      {{"query", "Tab", "--top", "0"}, "--top: must be at least 1, got 0"},
      {{"query", "Tab", "--top", "1001"}, "--top: must be at most 1000, got 1001"},
      {{"--timeout-ms", "0", "ping"}, "--timeout-ms: must be at least 1, got 0"},
      {{"--retries", "-1", "ping"}, "--retries: must be at least 0, got -1"},
      {{"--retries", "101", "ping"}, "--retries: must be at most 100, got 101"},
  };
  for (const Case& c : cases) {
    CliResult r = Cli(c.args);
    const std::string what = ::testing::PrintToString(c.args) + "\n" + Describe(r);
    EXPECT_EQ(r.exit_code, 2) << what;
    EXPECT_EQ(r.out, "") << what;
    EXPECT_TRUE(r.err.starts_with("sidetable-cli: " + c.message)) << what;
    EXPECT_FALSE(Contains(r.err, "0.000000")) << what;
  }
  EXPECT_FALSE(client_->QueryPage({.table = "TabIdx"}).ok()) << "derive ran nothing";
  // The bounds themselves are accepted.
  EXPECT_EQ(Lines(Ok({"changes", "--from", "1", "--max", "1"})).size(), 1u);
  EXPECT_EQ(Lines(Ok({"query", "Tab", "--top", "1000", "--limit", "0"})).size(), 1u);
}

// With --select the server returns the keys only when they are selected;
// `get` and `query` printed "" for them ("" is a valid key). The CLI selects
// the keys and Timestamp itself (docs/cli.md), so the output is the real
// entity and can be fed back.
TEST_F(CliTest, SelectStillPrintsTheRealKeysAndTimestamp) {
  Ok({"create-table", "People"});
  Ok({"insert", "People", R"({"PartitionKey":"Sales","RowKey":"3","Name":"Cy","Age":41})"});
  auto stored = client_->Get("People", "Sales", "3");
  ASSERT_TRUE(stored.ok());
  const std::string timestamp = "\"Timestamp\":\"" + FormatDateTime(stored->timestamp) + "\"";

  const std::string got = Ok({"get", "People", "Sales", "3", "--select", "Name"});
  auto e = json::ParseEntityJson(got);
  ASSERT_TRUE(e.ok()) << got;
  EXPECT_EQ(e->partition_key, "Sales") << got;
  EXPECT_EQ(e->row_key, "3") << got;
  EXPECT_EQ(e->properties, (std::vector<Property>{{"Name", Value::String("Cy")}})) << got;
  EXPECT_TRUE(Contains(got, timestamp)) << got;
  EXPECT_EQ(e->etag, stored->etag);
  // Naming a key or Timestamp too changes nothing.
  EXPECT_EQ(Ok({"get", "People", "Sales", "3", "--select", "RowKey,Name,Timestamp"}), got);

  const std::string queried = Ok({"query", "People", "--select", "Name"});
  EXPECT_EQ(queried, got) << "query prints what get prints";
  const auto table = Lines(Ok({"query", "People", "--select", "Name", "--format", "table"}));
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[0], "PartitionKey  RowKey  Name");
  EXPECT_EQ(table[2], "Sales         3       Cy");

  // Fed back: a merge of the selected property, conditioned on its ETag.
  Ok({"merge", "People", "-"}, got);
  auto merged = client_->Get("People", "Sales", "3");
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(*merged->Find("Age"), Value::Int32(41)) << "merge kept the property not selected";
}

// --select counts the user's names: the CLI adds PartitionKey, RowKey and
// Timestamp, so 252 others fit and 253 are a usage error naming 253. Before
// session 38 the server refused them as "'select' holds at most 255
// strings, got 256", counting names the user never gave; a name given twice
// is sent once.
TEST_F(CliTest, SelectCountsTheNamesTheUserGave) {
  Ok({"create-table", "People"});
  Ok({"insert", "People", R"({"PartitionKey":"Sales","RowKey":"3","x0":1})"});
  auto names = [](int n) {
    std::string out;
    for (int i = 0; i < n; i++) out += (i ? "," : "") + std::string("x") + std::to_string(i);
    return out;
  };
  EXPECT_TRUE(Contains(Ok({"get", "People", "Sales", "3", "--select", names(252)}), "\"x0\":1"));
  EXPECT_TRUE(
      Contains(Ok({"query", "People", "--select", names(252) + ",x0,x1,RowKey"}), "\"x0\":1"));
  for (const char* command : {"get", "query"}) {
    std::vector<std::string> args = {command, "People"};
    if (std::string(command) == "get") args.insert(args.end(), {"Sales", "3"});
    args.insert(args.end(), {"--select", names(253)});
    CliResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 2) << Describe(r);
    EXPECT_TRUE(
        Contains(r.err, "at most 252 property names besides PartitionKey, RowKey and Timestamp"))
        << Describe(r);
    EXPECT_TRUE(Contains(r.err, "(got 253)")) << Describe(r);
    EXPECT_EQ(r.out, "");
  }
}

// An empty --select name is an input error, exit 2 before anything is sent
// (it went to the server, whose InvalidInput was exit 1; found from outside),
// as is an empty field of a list. Several --select options add up.
TEST_F(CliTest, AnEmptySelectNameIsAnInputError) {
  Ok({"create-table", "People"});
  Ok({"insert", "People", R"({"PartitionKey":"Sales","RowKey":"3","x0":1})"});
  for (std::vector<std::string> args :
       {std::vector<std::string>{"get", "People", "Sales", "3", "--select", ""},
        {"query", "People", "--select", ""},
        // Empty fields of a list (CLI11's delimiter dropped them: "A,,B" ran as "A,B").
        {"get", "People", "Sales", "3", "--select", "x0,,RowKey"},
        {"query", "People", "--select", "x0,"},
        {"query", "People", "--select", ",x0"},
        {"query", "People", "--select", "x0", "--select", ""}}) {
    CliResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 2) << Describe(r);
    EXPECT_TRUE(Contains(r.err, "sidetable-cli: --select: an empty property name")) << Describe(r);
    EXPECT_EQ(r.out, "");
  }
  const std::string two =
      Ok({"get", "People", "Sales", "3", "--select", "x0", "--select", "RowKey"});
  EXPECT_TRUE(Contains(two, "\"x0\":1")) << two;
}

// A --checkpoint path that cannot be written was found only at the first
// save: `replay --stop-after 1` printed a record, then failed as a server
// "InternalError (500)"; without --stop-after it was never checked. Every
// replay command now refuses it first, naming the path, exit 2.
TEST_F(CliTest, AnUnwritableCheckpointPathIsRefusedBeforeTheRun) {
  Ok({"create-table", "Tab"});
  Ok({"insert", "Tab", R"({"PartitionKey":"p","RowKey":"r","V":"x"})"});
  const std::string config = WriteFile("w.yaml",
                                       "patterns:\n  - name: index_table\n    source: Tab\n"
                                       "    target: TabIdx\n    properties: V\n");
  const std::string out = dir_.Sub("out.jsonl");
  for (const std::string& ck : {std::string("/nonexistent/dir/ck"), dir_.path()}) {
    const std::vector<std::vector<std::string>> runs = {
        {"replay", "--progress", "never", "--checkpoint", ck, "--stop-after", "1"},
        {"replay", "--progress", "never", "--checkpoint", ck},
        {"audit", "--progress", "never", "--checkpoint", ck},
        {"rebuild", "Tab", "--at-lsn", "2", "--output", out, "--checkpoint", ck},
        {"derive", "--config", config, "--checkpoint", ck},
    };
    for (const auto& args : runs) {
      CliResult r = Cli(args);
      const std::string what = ::testing::PrintToString(args) + "\n" + Describe(r);
      EXPECT_EQ(r.exit_code, 2) << what;
      EXPECT_EQ(r.out, "") << "nothing ran: " << what;
      EXPECT_TRUE(r.err.starts_with("sidetable-cli: --checkpoint " + ck)) << what;
      EXPECT_FALSE(Contains(r.err, "InternalError")) << what;
    }
  }
  EXPECT_FALSE(client_->QueryPage({.table = "TabIdx"}).ok()) << "derive ran nothing";
  // A writable path still works, and leaves no probe file behind.
  const std::string ck = dir_.Sub("ck");
  CliResult stopped =
      Cli({"replay", "--progress", "never", "--checkpoint", ck, "--stop-after", "1"});
  EXPECT_EQ(stopped.exit_code, 5) << Describe(stopped);
  CliResult finished = Cli({"replay", "--progress", "never", "--checkpoint", ck});
  EXPECT_EQ(finished.exit_code, 0) << Describe(finished);
  EXPECT_NE(access(ck.c_str(), F_OK), 0) << "a finished run removes its checkpoint";
  EXPECT_NE(access((ck + ".tmp").c_str(), F_OK), 0);
}

// lag against counts the test computes itself from what it wrote and where
// KafkaPartitionFor puts each key.
// `changes --follow` (issue 16): prints what is there, then each new record
// as it commits, and stops cleanly on SIGTERM.
TEST_F(CliTest, ChangesFollowPrintsNewRecordsAsTheyCommit) {
  ASSERT_TRUE(client_->CreateTable("Tail").ok());
  ASSERT_TRUE(client_->Insert("Tail", EntityBuilder("p", "before").Build()).ok());
  const std::string out = dir_.Sub("follow.out");
  pid_t pid = testing::SpawnLogged({SIDETABLE_CLI, "--endpoint", server_->endpoint(), "changes", "--follow"}, out,
                                   /*append=*/false);
  auto wait_for = [&](const std::string& text) {
    for (int i = 0; i < 1000; i++) {  // at most 10 s
      if (Contains(ReadAll(out), text)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  };
  EXPECT_TRUE(wait_for("\"before\"")) << ReadAll(out);
  ASSERT_TRUE(client_->Insert("Tail", EntityBuilder("p", "after-1").Build()).ok());
  EXPECT_TRUE(wait_for("\"after-1\"")) << ReadAll(out);
  ASSERT_TRUE(client_->Insert("Tail", EntityBuilder("p", "after-2").Build()).ok());
  EXPECT_TRUE(wait_for("\"after-2\"")) << ReadAll(out);
  EXPECT_EQ(testing::SignalAndWait(&pid, SIGTERM, 10), 0) << ReadAll(out);
  // Each record once, in commit order.
  const std::string text = ReadAll(out);
  EXPECT_LT(text.find("\"before\""), text.find("\"after-1\""));
  EXPECT_LT(text.find("\"after-1\""), text.find("\"after-2\""));
  int after2_lines = 0;
  for (const auto& line : Lines(text)) after2_lines += Contains(line, "\"after-2\"") ? 1 : 0;
  EXPECT_EQ(after2_lines, 1) << text;

  // --max still bounds it: exits by itself once that many are printed.
  CliResult bounded = Cli({"changes", "--follow", "--max", "2"});
  EXPECT_EQ(bounded.exit_code, 0) << Describe(bounded);
  EXPECT_EQ(Lines(bounded.out).size(), 2u) << bounded.out;
}

// `changes --follow | head -1` on a sidecar where nothing more commits:
// before session 44 the command noticed the closed pipe only when it had a
// record to write, so it waited for the next commit, for good on a quiet
// sidecar (docs/cli.md said it ended).
TEST_F(CliTest, ChangesFollowEndsWhenItsReaderIsGoneOnAQuietSidecar) {
  ASSERT_TRUE(client_->CreateTable("Quiet").ok());
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  const std::string err = dir_.Sub("follow-quiet.err");
  std::vector<std::string> args = {SIDETABLE_CLI, "--endpoint", server_->endpoint(), "changes",
                                   "--follow"};
  pid_t pid = fork();
  if (pid == 0) {
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (e < 0 || dup2(fds[1], STDOUT_FILENO) < 0 || dup2(e, STDERR_FILENO) < 0) _exit(126);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  close(fds[1]);
  // Read the first line, as head -1 does, then go away.
  std::string first;
  char ch;
  while (read(fds[0], &ch, 1) == 1 && ch != '\n') first += ch;
  close(fds[0]);
  EXPECT_TRUE(Contains(first, "\"TableCreated\"")) << first;

  // Nothing commits from here on: the command ends by itself.
  int status = 0;
  bool exited = false;
  for (int i = 0; i < 1000 && !exited; i++) {  // at most 10 s
    exited = waitpid(pid, &status, WNOHANG) == pid;
    if (!exited) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!exited) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  ASSERT_TRUE(exited) << "still following with nobody reading its output";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_TRUE(Contains(ReadAll(err), "sidetable-cli: cannot write stdout")) << ReadAll(err);
}

TEST_F(CliTest, LagCountsRecordsAboveEachPartitionsWatermark) {
  ASSERT_TRUE(client_->CreateTable("Other").ok());
  ASSERT_TRUE(client_->CreateTable("People").ok());
  const uint64_t created = client_->Ping()->last_lsn;
  ASSERT_TRUE(client_->CreateTable("Idx").ok());
  // People's TableCreated record is a change of People too (key "People/").
  std::vector<std::pair<std::string, uint64_t>> written = {{"", created}};  // (pk, lsn)
  for (const char* pk : {"a", "b", "c", "d", "e", "f", "g", "h"}) {
    auto w = client_->Insert("People", EntityBuilder(pk, "1").Int32("n", 1).Build());
    ASSERT_TRUE(w.ok());
    written.emplace_back(pk, w->lsn);
  }
  ASSERT_TRUE(client_->Insert("Other", EntityBuilder("a", "1").Build()).ok());  // not a source
  const uint64_t mark0 = written[3].second;
  ASSERT_TRUE(client_->AdvanceWatermarks({{"Idx", "People", 0, 2, mark0, 0}, {"Idx", "People", 1, 2, 0, 0}}).ok());
  uint64_t lag[2] = {0, 0};
  for (const auto& [pk, lsn] : written) {
    const int32_t p = kafka::KafkaPartitionFor("People/" + pk, 2);
    if (lsn > (p == 0 ? mark0 : 0)) lag[p]++;
  }
  ASSERT_GT(lag[0] + lag[1], 0u);
  const std::string json = Ok({"lag", "--json"});
  EXPECT_TRUE(Contains(json, R"("complete":true)")) << json;
  EXPECT_TRUE(Contains(json, R"("derived":"Idx","source":"People","partitions":2,"lag":)" +
                                 std::to_string(lag[0] + lag[1]))) << json;
  EXPECT_TRUE(Contains(json, R"({"partition":0,"reported":true,"applied":)" + std::to_string(mark0) +
                                 R"(,"lag":)" + std::to_string(lag[0]))) << json;
  EXPECT_TRUE(Contains(json, R"({"partition":1,"reported":true,"applied":0,"lag":)" + std::to_string(lag[1])))
      << json;
  const std::string text = Ok({"lag"});
  EXPECT_TRUE(Contains(text, "DERIVED")) << text;
  EXPECT_EQ(Lines(text).size(), 3u) << text;  // header and two partitions
  // Bounded: two records scanned, so the counts are lower bounds.
  const std::string cut = Ok({"lag", "--max-scan", "2", "--json"});
  EXPECT_TRUE(Contains(cut, R"("scanned":2,"complete":false)")) << cut;
  EXPECT_TRUE(Contains(Ok({"lag", "--max-scan", "2"}), "≥"));
  // A derived table with no watermarks has nothing to show; a bad name is refused.
  // Session 39: its last_lsn was 0 whatever the sidecar had committed.
  const std::string none = Ok({"lag", "--derived", "Other", "--json"});
  EXPECT_TRUE(Contains(none, R"({"last_lsn":)" + std::to_string(client_->Ping()->last_lsn) +
                                 R"(,"scanned":0,"complete":true,"pairs":[])"))
      << none;
  ServerError({"lag", "--derived", "1bad"}, "InvalidResourceName (400)");
  // In text, a name with nothing registered says so instead of an empty
  // table that reads as "no lag" (a typo looked like a caught-up index).
  EXPECT_TRUE(
      Contains(Ok({"lag", "--derived", "Idz"}), "(Idz is not registered as a derived table"));
  EXPECT_FALSE(Contains(Ok({"lag", "--derived", "Idx"}), "not registered"));
  // Catching up to every record empties the lag.
  const uint64_t top = written.back().second;
  ASSERT_TRUE(client_->AdvanceWatermarks({{"Idx", "People", 0, 2, top, 0}, {"Idx", "People", 1, 2, top, 0}}).ok());
  const std::string caught_up = Ok({"lag", "--json"});
  EXPECT_TRUE(Contains(caught_up, R"("partitions":2,"lag":0,)")) << caught_up;
}

// forget-derived: a table nobody derives any more stops counting (lag no
// longer shows it), keeps its rows, and says what it was derived from.
TEST_F(CliTest, ForgetDerivedDropsATableFromLagAndKeepsItsRows) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  ASSERT_TRUE(client_->CreateTable("Idx").ok());
  ASSERT_TRUE(client_->Insert("Idx", EntityBuilder("a", "1").Build()).ok());
  ASSERT_TRUE(client_
                  ->AdvanceWatermarks({{"Idx", "People", 0, 2, 0, 0},
                                       {"Idx", "People", 1, 2, 0, 0},
                                       {"Other", "People", 0, 1, 0, 0}})
                  .ok());
  ASSERT_EQ(Lines(Ok({"lag"})).size(), 4u);  // header, two of Idx, one of Other

  EXPECT_EQ(
      Ok({"forget-derived", "idx"}),
      "forgot idx as derived from People (a worker still deriving it registers it again with its "
      "next report)\n");
  const std::string left = Ok({"lag"});
  EXPECT_EQ(Lines(left).size(), 2u) << left;
  EXPECT_TRUE(Contains(left, "Other")) << left;
  EXPECT_TRUE(client_->Get("Idx", "a", "1").ok());
  EXPECT_EQ(Ok({"forget-derived", "Idx"}),
            "Idx was not registered as a derived table: nothing to forget\n");
  ServerError({"forget-derived", "1bad"}, "InvalidResourceName (400)");
  EXPECT_EQ(Cli({"forget-derived"}).exit_code, 2);
}

// Issue 14: a sidecar that is not there is said at once, with a hint; an
// endpoint without its scheme gets the likely fix.
TEST(CliStandaloneTest, NothingListeningIsSaidPromptlyAndSchemesAreHinted) {
  testing::TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  CliResult r = RunCli(dir, {"--endpoint", "tcp://127.0.0.1:1", "ping"});   // default timeout and retries
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "nothing answered at tcp://127.0.0.1:1")) << r.err;
  EXPECT_TRUE(Contains(r.err, "the connect failed")) << r.err;
  EXPECT_TRUE(Contains(r.err, "nothing listens at tcp://127.0.0.1:1")) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4)) << "not 15 s of silent retries";

  CliResult bare = RunCli(dir, {"--endpoint", "127.0.0.1:5555", "ping"});
  EXPECT_EQ(bare.exit_code, 3) << Describe(bare);
  EXPECT_TRUE(Contains(bare.err, "did you mean tcp://127.0.0.1:5555?")) << bare.err;
  // Another scheme is replaced, not prefixed ("tcp://http://..." before).
  CliResult http = RunCli(dir, {"--endpoint", "http://127.0.0.1:7602", "ping"});
  EXPECT_EQ(http.exit_code, 3) << Describe(http);
  EXPECT_TRUE(Contains(http.err, "did you mean tcp://127.0.0.1:7602?")) << http.err;
}

// `sidetable-cli nosuchcmd` said "A subcommand is required" (CLI11 keeps the
// word as an extra argument and finds the missing command first).
TEST(CliStandaloneTest, AnUnknownCommandIsNamed) {
  testing::TempDir dir;
  CliResult r = RunCli(dir, {"nosuchcmd"});
  EXPECT_EQ(r.exit_code, 2) << Describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(r.err.starts_with("sidetable-cli: unknown command 'nosuchcmd'")) << r.err;
  EXPECT_TRUE(Contains(r.err, "ping, create-table")) << "lists the commands: " << r.err;
  EXPECT_TRUE(Contains(r.err, "--help")) << r.err;
  EXPECT_FALSE(Contains(r.err, "A subcommand is required")) << r.err;

  CliResult after_options = RunCli(dir, {"--timeout-ms", "100", "nosuchcmd", "--retries", "0"});
  EXPECT_EQ(after_options.exit_code, 2) << Describe(after_options);
  EXPECT_TRUE(Contains(after_options.err, "unknown command 'nosuchcmd'")) << after_options.err;

  CliResult nested = RunCli(dir, {"token", "nosuch"});
  EXPECT_EQ(nested.exit_code, 2) << Describe(nested);
  EXPECT_TRUE(Contains(nested.err, "unknown command 'token nosuch' (commands: issue, inspect)"))
      << nested.err;

  CliResult none = RunCli(dir, {});
  EXPECT_EQ(none.exit_code, 2) << Describe(none);
  EXPECT_TRUE(Contains(none.err, "a command is required")) << none.err;
}

// `verify --config /missing.yaml` said "<file>: bad file: <file>" (yaml-cpp's
// words). A file that cannot be read is said so, naming it; derive too.
TEST(CliStandaloneTest, AConfigFileThatCannotBeReadIsSaidSo) {
  testing::TempDir dir;
  const std::string missing = dir.Sub("missing.yaml");
  for (const std::string cmd : {"verify", "derive"}) {
    CliResult r = RunCli(dir, {"--endpoint", "tcp://127.0.0.1:1", cmd, "--config", missing});
    EXPECT_EQ(r.exit_code, 2) << cmd << ": " << Describe(r);
    EXPECT_EQ(r.err,
              "sidetable-cli: --config " + missing + ": cannot read: No such file or directory\n")
        << cmd << ": " << Describe(r);
    CliResult d = RunCli(dir, {"--endpoint", "tcp://127.0.0.1:1", cmd, "--config", dir.path()});
    EXPECT_EQ(d.exit_code, 2) << cmd << ": " << Describe(d);
    EXPECT_TRUE(Contains(d.err, "cannot read: is a directory")) << cmd << ": " << Describe(d);
    EXPECT_FALSE(Contains(r.err + d.err, "bad file"));
  }
}

TEST(CliStandaloneTest, UnreachableEndpointExitsThree) {
  testing::TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  // Port 1 on loopback: nothing listens there.
  CliResult r = RunCli(dir, {"--endpoint", "tcp://127.0.0.1:1", "--timeout-ms", "200", "--retries", "1", "ping"});
  EXPECT_EQ(r.exit_code, 3) << Describe(r);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(Contains(r.err, "nothing answered")) << r.err;
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));

  CliResult write = RunCli(dir, {"--endpoint", "tcp://127.0.0.1:1", "--timeout-ms", "100", "--retries", "0",
                                 "insert", "Tab", R"({"PartitionKey":"p","RowKey":"r"})"});
  EXPECT_EQ(write.exit_code, 3) << Describe(write);
  EXPECT_EQ(write.out, "");

  // Input is checked before connecting: bad JSON is still a usage error.
  CliResult bad = RunCli(dir, {"--endpoint", "tcp://127.0.0.1:1", "insert", "Tab", "{"});
  EXPECT_EQ(bad.exit_code, 2) << Describe(bad);

  CliResult malformed = RunCli(dir, {"--endpoint", "nonsense", "ping"});
  EXPECT_EQ(malformed.exit_code, 3) << Describe(malformed);
  EXPECT_EQ(malformed.out, "");
}

}  // namespace
}  // namespace sidetable

// ---- verify ------------------------------------------------------------------

#include "engine/etag.h"
#include "patterns/index_table/index_table.h"

namespace sidetable {
namespace {

class VerifyTest : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    config_ = dir_.Sub("worker.yaml");
    std::ofstream(config_) << "patterns:\n"
                              "  - name: index_table\n    source: People\n    target: PeopleByName\n"
                              "    properties: Name\n"
                              "  - name: archive\n    source: People\n    target: PeopleArchive\n";
    ASSERT_TRUE(client_->CreateTable("People").ok());
    for (int i = 0; i < 5; i++) ASSERT_TRUE(client_->Insert("People", Person("p", std::to_string(i), i)).ok());
  }

  // Writes exactly the entries the index pattern expects for the source now.
  void BuildIndex() {
    patterns::PatternConfig pc{"index_table", {{"source", {"People"}}, {"target", {"PeopleByName"}},
                                               {"properties", {"Name"}}}};
    auto config = patterns::IndexTableConfig::FromSettings(pc);
    ASSERT_TRUE(config.ok()) << config.status().ToString();
    std::vector<Entity> source;
    auto it = client_->Query({.table = "People"});
    for (Entity e; it.Next(&e);) source.push_back(e);
    Status created = client_->CreateTable("PeopleByName");
    ASSERT_TRUE(created.ok() || created.code() == Code::kTableAlreadyExists);
    for (const Entity& entry : patterns::ExpectedIndex(*config, source)) {
      ASSERT_TRUE(client_->InsertOrReplace("PeopleByName", entry).ok());
    }
  }

  std::string config_;
};

TEST_F(VerifyTest, ReportsMissingExtraStaleAndExitsFourUntilConverged) {
  CliResult missing = Cli({"verify", "--config", config_});
  EXPECT_EQ(missing.exit_code, 4) << Describe(missing);
  EXPECT_TRUE(Contains(missing.out, "missing 5")) << missing.out;

  BuildIndex();
  CliResult ok = Cli({"verify", "--config", config_});
  EXPECT_EQ(ok.exit_code, 0) << Describe(ok);
  EXPECT_TRUE(Contains(ok.out, "checked 5: missing 0, extra 0, stale 0")) << ok.out;

  // A stale entry (its source changed) and an extra one (no source).
  ASSERT_TRUE(client_->Merge("People", Person("p", "1", 99)).ok());
  ASSERT_TRUE(client_->InsertOrReplace("PeopleByName",
                                       client::EntityBuilder("nobody", "p|zz").Int64("SourceVersion", 1).Build())
                  .ok());
  CliResult diverged = Cli({"verify", "--config", config_});
  EXPECT_EQ(diverged.exit_code, 4) << Describe(diverged);
  EXPECT_TRUE(Contains(diverged.out, "stale 1")) << diverged.out;
  EXPECT_TRUE(Contains(diverged.out, "extra 1")) << diverged.out;
  EXPECT_TRUE(Contains(diverged.out, "extra (nobody, p|zz)")) << diverged.out;
}

TEST_F(VerifyTest, AnEntityInBothArchiveTablesIsDivergence) {
  BuildIndex();
  ASSERT_TRUE(client_->CreateTable("PeopleArchive").ok());
  ASSERT_TRUE(client_->Insert("PeopleArchive", Person("p", "3", 3)).ok());
  CliResult both = Cli({"verify", "--config", config_});
  EXPECT_EQ(both.exit_code, 4) << Describe(both);
  EXPECT_TRUE(Contains(both.out, "in both tables 1")) << both.out;
  ASSERT_TRUE(client_->Delete("People", "p", "3").ok());
  BuildIndex();  // the index still has p|3's entry
  CliResult stale = Cli({"verify", "--config", config_});
  EXPECT_EQ(stale.exit_code, 4) << "the index entry of the archived entity is extra: " << Describe(stale);
}

// Session 35: an archived key that the application re-inserted later (a new
// order reusing the keys) was reported as "in both tables (move not
// finished)", exit 4. Only the same version in both is a move not finished.
TEST_F(VerifyTest, AReinsertedArchivedKeyIsNotAnUnfinishedMove) {
  const std::string archive_only = dir_.Sub("archive-only.yaml");
  std::ofstream(archive_only)
      << "patterns:\n  - name: archive\n    source: People\n    target: PeopleArchive\n";
  ASSERT_TRUE(client_->CreateTable("PeopleArchive").ok());
  // A move half done: the worker's copy (SourceVersion = the source's
  // version), the source not yet deleted.
  auto source = client_->Get("People", "p", "3");
  ASSERT_TRUE(source.ok()) << source.status().ToString();
  const uint64_t version = VersionFromETag(source->etag).value();
  Entity copy = *source;
  copy.Set("SourceVersion", Value::Int64(static_cast<int64_t>(version)));
  ASSERT_TRUE(client_->Insert("PeopleArchive", copy).ok());
  CliResult half = Cli({"verify", "--config", archive_only});
  EXPECT_EQ(half.exit_code, 4) << Describe(half);
  EXPECT_TRUE(Contains(half.out, "in both tables at the same version " + std::to_string(version) +
                                     ": a move not finished (p, 3)"))
      << half.out;
  EXPECT_TRUE(Contains(half.out, "in both tables 1")) << half.out;

  // The move finishes, then a new entity with the same keys is inserted.
  ASSERT_TRUE(client_->Delete("People", "p", "3").ok());
  EXPECT_EQ(Cli({"verify", "--config", archive_only}).exit_code, 0);
  ASSERT_TRUE(client_->Insert("People", Person("p", "3", 33)).ok());
  CliResult reinserted = Cli({"verify", "--config", archive_only});
  EXPECT_EQ(reinserted.exit_code, 0) << Describe(reinserted);
  EXPECT_TRUE(Contains(reinserted.out, "checked 1: missing 0, extra 0, stale 0, in both tables 0"))
      << reinserted.out;

  // A copy newer than its source cannot come from a move: divergence.
  auto now = client_->Get("People", "p", "3");
  ASSERT_TRUE(now.ok());
  copy.Set("SourceVersion",
           Value::Int64(static_cast<int64_t>(VersionFromETag(now->etag).value() + 1)));
  ASSERT_TRUE(client_->InsertOrReplace("PeopleArchive", copy).ok());
  CliResult newer = Cli({"verify", "--config", archive_only});
  EXPECT_EQ(newer.exit_code, 4) << Describe(newer);
  EXPECT_TRUE(Contains(newer.out, "newer than the source")) << newer.out;
}

TEST_F(VerifyTest, BadConfigIsAUsageError) {
  std::ofstream(dir_.Sub("bad.yaml")) << "patterns:\n  - name: nonsense\n";
  EXPECT_EQ(Cli({"verify", "--config", dir_.Sub("bad.yaml")}).exit_code, 2);
  EXPECT_EQ(Cli({"verify", "--config", dir_.Sub("absent.yaml")}).exit_code, 2);
}

// Issue 16: a source table that does not exist used to print "checked 0"
// and exit 0. It is an error naming the table; a derived table that does not
// exist yet is still fine (it appears with its first entry).
TEST_F(VerifyTest, AMissingSourceTableIsAnError) {
  std::ofstream(dir_.Sub("typo.yaml")) << "patterns:\n  - name: index_table\n    source: Peeple\n"
                                          "    target: PeopleByName\n    properties: Name\n";
  CliResult r = Cli({"verify", "--config", dir_.Sub("typo.yaml")});
  EXPECT_EQ(r.exit_code, 1) << Describe(r);
  EXPECT_TRUE(Contains(r.err, "source table 'Peeple'")) << Describe(r);
  EXPECT_EQ(r.out, "") << "nothing on stdout on failure";
  auto tables = client_->ListTables();
  ASSERT_TRUE(tables.ok());
  for (const auto& t : *tables) EXPECT_NE(t, "Peeple") << "verify created nothing";

  std::ofstream(dir_.Sub("archive.yaml")) << "patterns:\n  - name: archive\n    source: Nobody\n"
                                             "    target: NobodyArchive\n";
  CliResult a = Cli({"verify", "--config", dir_.Sub("archive.yaml")});
  EXPECT_EQ(a.exit_code, 1) << Describe(a);
  EXPECT_TRUE(Contains(a.err, "source table 'Nobody'")) << Describe(a);
}

}  // namespace
}  // namespace sidetable
