// The real `sidetable` binary refusing bad start-up input (issue 16): exit
// code 2, a message naming the flag or the file and key, and nothing created
// (the data directory stays absent).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "testing/child_process.h"
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

}  // namespace
}  // namespace sidetable
