// The real `sidetable` binary refusing bad start-up input (issue 16): exit
// code 2, a message naming the flag or the file and key, and nothing created
// (the data directory stays absent).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "testing/child_process.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"
#include "testing/text.h"

namespace sidetable {
namespace {

struct Outcome {
  int exit_code = -1;
  std::string output;
};

// Runs the binary to completion (at most 20 s) and returns its exit code and
// its stdout+stderr.
Outcome Sidetable(const testing::TempDir& dir, std::vector<std::string> args) {
  static int n = 0;
  const std::string log = dir.Sub("run" + std::to_string(n++) + ".log");
  args.insert(args.begin(), SIDETABLE_BIN);
  pid_t pid = testing::SpawnLogged(args, log, /*append=*/false);
  Outcome r;
  r.exit_code = testing::SignalAndWait(&pid, 0, 20);  // signal 0: only wait
  r.output = testing::ReadWholeFile(log);
  return r;
}

TEST(Startup, EmptyKafkaFlagIsAnErrorAndNoneIsInTheHelp) {
  testing::TempDir dir;
  const std::string data = dir.Sub("data");
  Outcome r = Sidetable(dir, {"--kafka", "", "--data", data, "--http", ""});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(testing::Contains(r.output, "--kafka ''")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(data)) << "nothing is created";

  Outcome help = Sidetable(dir, {"--help"});
  EXPECT_EQ(help.exit_code, 0) << help.output;
  EXPECT_TRUE(testing::Contains(help.output, "'none' (no change stream)")) << help.output;
  EXPECT_TRUE(testing::Contains(help.output, "'embedded'")) << help.output;

  Outcome version = Sidetable(dir, {"--version"});
  EXPECT_EQ(version.exit_code, 0) << version.output;
  EXPECT_TRUE(version.output.starts_with("sidetable ")) << version.output;
}

TEST(Startup, ATypoInTheConfigStopsTheStartNamingFileAndKey) {
  testing::TempDir dir;
  const std::string data = dir.Sub("data");
  const std::string config = dir.Sub("typo.yaml");
  std::ofstream(config) << "storage:\n  durabilty: os\n";
  Outcome r = Sidetable(dir, {"--config", config, "--data", data, "--http", ""});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(testing::Contains(r.output, config + ": storage.durabilty: unknown key")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(data)) << "nothing is created";
}

TEST(Startup, AnOutOfRangeValueNamesTheFileAndTheKey) {
  testing::TempDir dir;
  const std::string data = dir.Sub("data");
  const std::string config = dir.Sub("range.yaml");
  std::ofstream(config) << "sidecar:\n  workers: 0\n";
  Outcome r = Sidetable(dir, {"--config", config, "--data", data, "--http", ""});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(testing::Contains(r.output, config)) << r.output;
  EXPECT_TRUE(testing::Contains(r.output, "sidecar.workers must be 1..256")) << r.output;
  EXPECT_FALSE(std::filesystem::exists(data));
}

// A bad flag is bad configuration: exit 2, as for the file (CLI11's own
// codes, 105-114, told a supervisor nothing).
TEST(Startup, BadFlagsExitTwo) {
  testing::TempDir dir;
  const std::string data = dir.Sub("data");
  for (const std::vector<std::string>& args : {
           std::vector<std::string>{"--data", data, "--http", "", "--no-such-flag"},
           {"--data", data, "--http", "", "--workers", "abc"},
           {"--data", data, "--http", "", "--durability", "maybe"},
           {"--data", data, "--http", "", "-c"},  // no value
       }) {
    Outcome r = Sidetable(dir, args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.output;
    EXPECT_FALSE(r.output.empty()) << args.back();
  }
  EXPECT_FALSE(std::filesystem::exists(data)) << "nothing is created";
}

// A port beyond 65535 wrapped around in the socket API (99999 bound 34463)
// while the log and the ready file named 99999.
TEST(Startup, PortsBeyondSixteenBitsAreRefused) {
  testing::TempDir dir;
  const std::string data = dir.Sub("data");
  const std::pair<std::vector<std::string>, std::string> cases[] = {
      {{"--listen", "tcp://127.0.0.1:99999", "--http", ""},
       "sidecar.listen must be host:port with a port of 0..65535"},
      {{"--listen", "tcp://127.0.0.1:-1", "--http", ""}, "sidecar.listen must be host:port"},
      {{"--http", "127.0.0.1:70000"}, "sidecar.http must be host:port with a port of 0..65535"},
      {{"--http", "127.0.0.1:"}, "sidecar.http must be host:port"},
      {{"--http", "", "--rest", "127.0.0.1:65536"}, "rest.address must be host:port"},
  };
  for (const auto& [args, message] : cases) {
    std::vector<std::string> full = args;
    full.insert(full.end(), {"--data", data, "--kafka", "none"});
    Outcome r = Sidetable(dir, full);
    EXPECT_EQ(r.exit_code, 2) << args[1] << ": " << r.output;
    EXPECT_TRUE(testing::Contains(r.output, message)) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(data)) << "nothing is created";
}

// yaml-cpp keeps a repeated key and answers with the first: a second
// `storage:` or `path:` was ignored without a word.
TEST(Startup, AKeyOrSectionWrittenTwiceIsRefused) {
  testing::TempDir dir;
  const std::string data = dir.Sub("data");
  const std::pair<std::string, std::string> cases[] = {
      {"storage:\n  path: " + dir.Sub("a") + "\nstorage:\n  path: " + dir.Sub("b") + "\n",
       ": storage: appears twice"},
      {"storage:\n  durability: os\n  durability: fsync\n", ": storage.durability: appears twice"},
      {"sidecar:\n  listen: tcp://127.0.0.1:*\n  listen: tcp://127.0.0.1:5999\n",
       ": sidecar.listen: appears twice"},
  };
  int n = 0;
  for (const auto& [yaml, message] : cases) {
    const std::string config = dir.Sub("twice" + std::to_string(n++) + ".yaml");
    std::ofstream(config) << yaml;
    Outcome r = Sidetable(dir, {"--config", config, "--data", data, "--http", ""});
    EXPECT_EQ(r.exit_code, 2) << yaml << r.output;
    EXPECT_TRUE(testing::Contains(r.output, config + message)) << r.output;
  }
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("a")) || std::filesystem::exists(dir.Sub("b")) ||
               std::filesystem::exists(data));
}

TEST(Startup, WriteBufferOutOfRangeAndAMissingFileAreRefused) {
  testing::TempDir dir;
  const std::string data = dir.Sub("data");
  for (const char* mb : {"0", "4097", "100000000"}) {
    const std::string config = dir.Sub(std::string("wb") + mb + ".yaml");
    std::ofstream(config) << "storage:\n  write_buffer_mb: " << mb << "\n";
    Outcome r = Sidetable(dir, {"--config", config, "--data", data, "--http", ""});
    EXPECT_EQ(r.exit_code, 2) << mb << ": " << r.output;
    EXPECT_TRUE(testing::Contains(r.output, "write_buffer_mb")) << r.output;
  }
  const std::string missing = dir.Sub("missing.yaml");
  Outcome r = Sidetable(dir, {"--config", missing, "--data", data, "--http", ""});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(testing::Contains(r.output, missing + ": cannot read the file: No such file"))
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(data));
}

// A second sidecar on a directory in use is refused before it changes
// anything: the first keeps its full-disk reserve (a refused start used to
// release it, so the next restart on a full disk failed).
TEST(Startup, ASecondSidecarOnTheSameDirectoryLeavesTheFirstsReserve) {
  testing::TempDir dir;
  const std::string data = dir.Sub("data");
  const std::string config = dir.Sub("reserve.yaml");
  std::ofstream(config) << "storage:\n  reserve_mb: 4\n  durability: os\n";
  testing::SidecarProcess first(SIDETABLE_BIN, data, {"--config", config, "--kafka", "none"});
  ASSERT_TRUE(first.Start()) << first.Log();
  const std::string reserve = data + "/SIDETABLE-RESERVE";
  for (int i = 0; i < 200 && !std::filesystem::exists(reserve); i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(std::filesystem::exists(reserve)) << first.Log();

  Outcome second = Sidetable(dir, {"--config", config, "--data", data, "--kafka", "none", "--http",
                                   "", "--listen", "tcp://127.0.0.1:*"});
  EXPECT_EQ(second.exit_code, 1) << second.output;
  EXPECT_TRUE(testing::Contains(second.output, "in use by another process")) << second.output;
  EXPECT_FALSE(testing::Contains(second.output, "released the")) << second.output;
  EXPECT_TRUE(std::filesystem::exists(reserve)) << "the running sidecar's reserve is gone";
  EXPECT_EQ(std::filesystem::file_size(reserve), 4u << 20);
  EXPECT_EQ(first.Stop(), 0) << first.Log();
  // Stopped, the directory is free again.
  testing::SidecarProcess again(SIDETABLE_BIN, data, {"--config", config, "--kafka", "none"});
  ASSERT_TRUE(again.Start()) << again.Log();
  EXPECT_EQ(again.Stop(), 0) << again.Log();
}

// SIGHUP stops the sidecar the orderly way SIGTERM does (it used to end
// the process at once: exit 129, no drain, nothing in the log).
TEST(Startup, SighupStopsInOrder) {
  testing::TempDir dir;
  testing::SidecarProcess sidecar(SIDETABLE_BIN, dir.Sub("data"), {"--kafka", "none"});
  ASSERT_TRUE(sidecar.Start()) << sidecar.Log();
  EXPECT_EQ(sidecar.SignalAndWait(SIGHUP, 30), 0) << sidecar.Log();
  EXPECT_TRUE(testing::Contains(sidecar.Log(), "stopped")) << sidecar.Log();
}

}  // namespace
}  // namespace sidetable
