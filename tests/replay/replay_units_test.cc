// Units of the replay loop: checkpoint files (SaveCheckpoint/LoadCheckpoint),
// the progress line (FormatProgress, Progress) and RunReplay over a fake
// RecordSource. ReplayFilter and ParseTimeArgument are covered by
// filter_test.cc; PointInTime by point_in_time_test.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "testing/temp_dir.h"
#include "tools/replay/checkpoint.h"
#include "tools/replay/progress.h"
#include "tools/replay/runner.h"

namespace sidetable::replay {
namespace {

using sidetable::testing::TempDir;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

// ---- checkpoint -----------------------------------------------------------

Checkpoint FullCheckpoint() {
  Checkpoint c;
  c.command = "rebuild";
  c.fingerprint = "table=5:items;pk=9:\"q\"\\x\n\xC3\xA9\xF0\x9F\x98\x80\t\x01;";
  c.position.last_lsn = std::numeric_limits<uint64_t>::max() - 1;
  c.position.next_offsets = {{-1, -5}, {0, 0}, {3, std::numeric_limits<int64_t>::max()}, {7, 123456789012}};
  c.position.end_lsn = 987654321098765ull;
  c.position.end_offsets = {{0, 17}, {std::numeric_limits<int32_t>::max(), std::numeric_limits<int64_t>::min()}};
  c.position.floors = {{0, 1}, {7, (uint64_t{1} << 24) - 1}};
  c.events = 4'000'000'000ull;
  c.output_bytes = (1ull << 40) + 3;
  c.summary = "{\n  \"rows\": 12,\n  \"note\": \"a \\\"quoted\\\" \xE6\x97\xA5 line\\nbreak\"\n}";
  c.rebuild_meta = "{\"pastCut\":false,\"lastApplied\":42,\"entities\":2}";
  c.state = "{\"PartitionKey\":\"p\",\"RowKey\":\"\xC3\xA9\"}\nnot json at all \"\\\n\n{\"x\":1}\n";
  return c;
}

void ExpectSame(const Checkpoint& got, const Checkpoint& want) {
  EXPECT_EQ(got.command, want.command);
  EXPECT_EQ(got.fingerprint, want.fingerprint);
  EXPECT_EQ(got.position.last_lsn, want.position.last_lsn);
  EXPECT_EQ(got.position.next_offsets, want.position.next_offsets);
  EXPECT_EQ(got.position.end_lsn, want.position.end_lsn);
  EXPECT_EQ(got.position.end_offsets, want.position.end_offsets);
  EXPECT_EQ(got.position.floors, want.position.floors);
  EXPECT_EQ(got.events, want.events);
  EXPECT_EQ(got.output_bytes, want.output_bytes);
  EXPECT_EQ(got.summary, want.summary);
  EXPECT_EQ(got.rebuild_meta, want.rebuild_meta);
  EXPECT_EQ(got.state, want.state);
}

// The file at `path` loads as exactly `want`.
void ExpectLoadsAs(const std::string& path, const Checkpoint& want) {
  auto loaded = LoadCheckpoint(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->has_value());
  ExpectSame(**loaded, want);
}

TEST(CheckpointTest, RoundTripsEveryField) {
  TempDir dir;
  const std::string path = dir.Sub("run.ckpt");
  const Checkpoint c = FullCheckpoint();
  ASSERT_TRUE(SaveCheckpoint(path, c).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  // One header line, then the state byte for byte.
  const std::string raw = ReadFile(path);
  const size_t nl = raw.find('\n');
  ASSERT_NE(nl, std::string::npos);
  EXPECT_EQ(raw.substr(nl + 1), c.state);
  ExpectLoadsAs(path, c);
}

// Scale-out fencing floors: absent outside a cluster (the header is as
// before), and a bad entry makes the file no checkpoint.
TEST(CheckpointTest, FloorsAreOptionalAndCheckedWhenPresent) {
  TempDir dir;
  const std::string path = dir.Sub("run.ckpt");
  Checkpoint c = FullCheckpoint();
  c.position.floors.clear();
  ASSERT_TRUE(SaveCheckpoint(path, c).ok());
  EXPECT_EQ(ReadFile(path).find("floors"), std::string::npos);
  ExpectLoadsAs(path, c);
  c.position.floors = {{2, 9}};
  ASSERT_TRUE(SaveCheckpoint(path, c).ok());
  std::string raw = ReadFile(path);
  const size_t at = raw.find("\"floors\":[[2,9]]");
  ASSERT_NE(at, std::string::npos) << raw;
  for (const std::string bad : {"\"floors\":[[2,-9]]", "\"floors\":[[2]]", "\"floors\":{\"2\":9}"}) {
    std::string broken = raw;
    broken.replace(at, std::string("\"floors\":[[2,9]]").size(), bad);
    WriteFile(path, broken);
    auto loaded = LoadCheckpoint(path);
    EXPECT_EQ(loaded.status().code(), Code::kInvalidInput) << bad;
  }
}

TEST(CheckpointTest, EmptyFieldsAndStateWithoutFinalNewlineRoundTrip) {
  TempDir dir;
  const std::string path = dir.Sub("c");
  for (const std::string& state : {std::string(), std::string("a\nb"), std::string("\n\n")}) {
    Checkpoint c;
    c.state = state;
    ASSERT_TRUE(SaveCheckpoint(path, c).ok());
    ExpectLoadsAs(path, c);
  }
}

TEST(CheckpointTest, SaveReplacesTheWholeFileAndIgnoresAStaleTemporary) {
  TempDir dir;
  const std::string path = dir.Sub("c");
  ASSERT_TRUE(SaveCheckpoint(path, FullCheckpoint()).ok());
  // A crash during an earlier save may have left a torn temporary behind.
  WriteFile(path + ".tmp", "torn garbage, longer than the new checkpoint " + std::string(4096, '.'));
  Checkpoint small;
  small.command = "audit";
  small.position.last_lsn = 3;
  small.state = "x\n";
  ASSERT_TRUE(SaveCheckpoint(path, small).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  ExpectLoadsAs(path, small);
}

TEST(CheckpointTest, MissingFileIsNoCheckpoint) {
  TempDir dir;
  auto loaded = LoadCheckpoint(dir.Sub("absent"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_FALSE(loaded->has_value());
  auto in_missing_dir = LoadCheckpoint(dir.Sub("no/such/dir/c"));
  ASSERT_TRUE(in_missing_dir.ok()) << in_missing_dir.status().ToString();
  EXPECT_FALSE(in_missing_dir->has_value());
}

TEST(CheckpointTest, ADirectoryIsNotACheckpoint) {
  TempDir dir;
  std::filesystem::create_directory(dir.Sub("d"));
  auto loaded = LoadCheckpoint(dir.Sub("d"));
  EXPECT_FALSE(loaded.ok()) << "a directory loaded as " << (loaded.ok() && loaded->has_value() ? "a checkpoint" : "none");
}

TEST(CheckpointTest, SaveIntoAMissingDirectoryFails) {
  TempDir dir;
  Status s = SaveCheckpoint(dir.Sub("no/such/dir/c"), Checkpoint{});
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), Code::kInternal) << s.ToString();
}

TEST(CheckpointTest, AFailedSaveLeavesNoTemporary) {
  TempDir dir;
  // rename() of a file onto a directory fails after the temporary was written.
  const std::string path = dir.Sub("c");
  std::filesystem::create_directory(path);
  Status s = SaveCheckpoint(path, FullCheckpoint());
  EXPECT_EQ(s.code(), Code::kInternal) << s.ToString();
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  EXPECT_TRUE(std::filesystem::is_directory(path));
}

TEST(CheckpointTest, RemoveDeletesAndAbsentIsFine) {
  TempDir dir;
  const std::string path = dir.Sub("c");
  EXPECT_TRUE(RemoveCheckpoint(path).ok());
  ASSERT_TRUE(SaveCheckpoint(path, FullCheckpoint()).ok());
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_TRUE(RemoveCheckpoint(path).ok());
  EXPECT_FALSE(std::filesystem::exists(path));
  auto loaded = LoadCheckpoint(path);
  ASSERT_TRUE(loaded.ok());
  EXPECT_FALSE(loaded->has_value());
  EXPECT_TRUE(RemoveCheckpoint(path).ok());
}

std::string Edit(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  if (at == std::string::npos) return "<edit: " + from + " not found>";
  return s.replace(at, from.size(), to);
}

TEST(CheckpointTest, RejectsFilesThatAreNotCheckpoints) {
  TempDir dir;
  const std::string good_path = dir.Sub("good");
  Checkpoint c = FullCheckpoint();
  c.position.next_offsets = {{1, 2}};
  ASSERT_TRUE(SaveCheckpoint(good_path, c).ok());
  const std::string good = ReadFile(good_path);
  const std::string header = good.substr(0, good.find('\n'));
  const std::string state = good.substr(good.find('\n'));
  ASSERT_EQ(header.find("\"checkpoint\":1,"), 1u) << header;
  struct Bad {
    std::string what, text;
  };
  std::vector<Bad> bad = {
      {"empty file", ""},
      {"garbage", "hello world\nmore\n"},
      {"no newline after the header", header},
      {"header cut short", header.substr(0, header.size() / 2) + state},
      {"header is an array", "[1,2,3]" + state},
      {"version 2", Edit(header, "\"checkpoint\":1,", "\"checkpoint\":2,") + state},
      {"version 0", Edit(header, "\"checkpoint\":1,", "\"checkpoint\":0,") + state},
      {"version as a string", Edit(header, "\"checkpoint\":1,", "\"checkpoint\":\"1\",") + state},
      {"no version", Edit(header, "\"checkpoint\":1,", "") + state},
      {"bad offset entry", Edit(header, "\"offsets\":[[1,2]]", "\"offsets\":[[1]]") + state},
      {"offset not a number", Edit(header, "\"offsets\":[[1,2]]", "\"offsets\":[[1,\"2\"]]") + state},
      {"lastLsn negative", Edit(header, "\"lastLsn\":", "\"lastLsn\":-") + state},
  };
  for (const char* field : {"command", "fingerprint", "lastLsn", "offsets", "endLsn", "endOffsets", "events",
                            "outputBytes", "summary", "rebuild"}) {
    bad.push_back({std::string("without ") + field,
                   Edit(header, "\"" + std::string(field) + "\":", "\"renamed\":") + state});
  }
  for (const Bad& b : bad) {
    ASSERT_EQ(b.text.find("<edit: "), std::string::npos) << b.what << ": " << b.text;
    const std::string path = dir.Sub("bad");
    WriteFile(path, b.text);
    auto loaded = LoadCheckpoint(path);
    ASSERT_FALSE(loaded.ok()) << b.what << ": loaded as a checkpoint";
    EXPECT_EQ(loaded.status().code(), Code::kInvalidInput) << b.what << ": " << loaded.status().ToString();
  }
  // The unedited file still loads: the rejections above are the edits'.
  auto loaded = LoadCheckpoint(good_path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  ASSERT_TRUE(loaded->has_value());
  ExpectSame(**loaded, c);
}

// ---- progress -------------------------------------------------------------

TEST(ProgressTest, FormatProgressExactText) {
  EXPECT_EQ(FormatProgress(0, 0, std::nullopt), "0 events  0/s");
  EXPECT_EQ(FormatProgress(999, 999.4, std::nullopt), "999 events  999/s");
  EXPECT_EQ(FormatProgress(1000, 1000.5, std::nullopt), "1,000 events  1,001/s");
  EXPECT_EQ(FormatProgress(100000, 12345.49, std::nullopt), "100,000 events  12,345/s");
  EXPECT_EQ(FormatProgress(1234567, 52000, 52000 * 42), "1,234,567 events  52,000/s  ETA 0:42");
  EXPECT_EQ(FormatProgress(std::numeric_limits<uint64_t>::max(), 0, std::nullopt),
            "18,446,744,073,709,551,615 events  0/s");
  // The ETA rounds up: 10 left at 3/s is 4 s, not 3.
  EXPECT_EQ(FormatProgress(10, 3.0, 10), "10 events  3/s  ETA 0:04");
  EXPECT_EQ(FormatProgress(7, 1.0, 3725), "7 events  1/s  ETA 62:05");
  EXPECT_EQ(FormatProgress(7, 2.0, 120), "7 events  2/s  ETA 1:00");
  EXPECT_EQ(FormatProgress(7, 10.0, 0), "7 events  10/s  ETA 0:00");
  // A rate that shows as 0/s still gives an ETA; a zero rate or an unknown
  // remainder gives none.
  EXPECT_EQ(FormatProgress(1, 0.4, 2), "1 events  0/s  ETA 0:05");
  EXPECT_EQ(FormatProgress(5, 0, 100), "5 events  0/s");
  EXPECT_EQ(FormatProgress(5, 50, std::nullopt), "5 events  50/s");
}

struct TmpFile {
  std::FILE* f = std::tmpfile();
  ~TmpFile() {
    if (f) std::fclose(f);
  }
  std::string Contents() const {
    std::fflush(f);
    std::rewind(f);
    std::string out;
    char buf[256];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    std::fseek(f, 0, SEEK_END);
    return out;
  }
};

TEST(ProgressTest, NeverAndAutoOnAFileWriteNothing) {
  for (ProgressMode mode : {ProgressMode::kNever, ProgressMode::kAuto}) {
    TmpFile file;
    ASSERT_NE(file.f, nullptr);
    {
      Progress p(mode, file.f);
      EXPECT_FALSE(p.enabled());
      p.Update(10, 100);
      p.Update(20, std::nullopt);
      p.Finish();
    }
    EXPECT_EQ(file.Contents(), "") << "mode " << static_cast<int>(mode);
  }
}

TEST(ProgressTest, AlwaysDrawsOneLineAndFinishClearsIt) {
  TmpFile file;
  ASSERT_NE(file.f, nullptr);
  Progress p(ProgressMode::kAlways, file.f);
  EXPECT_TRUE(p.enabled());
  const auto t0 = std::chrono::steady_clock::now();
  p.Update(5, 10);
  p.Update(6, 10);
  const auto t1 = std::chrono::steady_clock::now();
  const std::string drawn = file.Contents();
  EXPECT_TRUE(std::regex_match(drawn, std::regex("\r\x1b\\[K5 events  [0-9,]+/s(  ETA [0-9]+:[0-5][0-9])?")))
      << drawn;
  if (t1 - t0 < std::chrono::milliseconds(400)) {
    // Both updates came within the 500 ms redraw interval: one draw.
    EXPECT_EQ(drawn.find("6 events"), std::string::npos) << drawn;
  }
  p.Finish();
  EXPECT_EQ(file.Contents(), drawn + "\r\x1b[K");
  p.Finish();  // nothing drawn since: nothing to clear
  EXPECT_EQ(file.Contents(), drawn + "\r\x1b[K");
}

TEST(ProgressTest, DestructorClearsADrawnLine) {
  TmpFile file;
  ASSERT_NE(file.f, nullptr);
  {
    Progress p(ProgressMode::kAlways, file.f);
    p.Update(3, std::nullopt);
  }
  const std::string all = file.Contents();
  EXPECT_TRUE(std::regex_match(all, std::regex("\r\x1b\\[K3 events  [0-9,]+/s\r\x1b\\[K"))) << all;
  TmpFile untouched;
  ASSERT_NE(untouched.f, nullptr);
  { Progress p(ProgressMode::kAlways, untouched.f); }
  EXPECT_EQ(untouched.Contents(), "");
}

// ---- runner ---------------------------------------------------------------

ChangeRecord Rec(uint64_t lsn) {
  ChangeRecord r;
  r.lsn = lsn;
  r.table = "T";
  r.partition_key = "p" + std::to_string(lsn);
  ChangeOp op;
  op.row_key = "r";
  r.ops.push_back(op);
  return r;
}

// Records after_lsn+1 .. n in batches of random size (sometimes none before
// the end), the end flagged with the last records or on a later call.
class FakeSource : public RecordSource {
 public:
  FakeSource(uint64_t n, uint64_t after_lsn, uint64_t seed) : n_(n), next_(after_lsn + 1), rng_(seed) {}

  Status Next(size_t max, std::vector<ChangeRecord>* out, bool* end) override {
    calls++;
    if (max == 0 || max > max_allowed) bad_max++;
    if (ended_) calls_after_end++;
    if (fail_at_call == calls) return Status(Code::kUnavailable, "source broke");
    const uint64_t left = n_ + 1 - next_;
    uint64_t k = rng_() % 6 == 0 ? 0 : 1 + rng_() % std::max<size_t>(max, 1);
    k = std::min<uint64_t>({k, left, max});
    for (uint64_t i = 0; i < k; i++) out->push_back(Rec(next_++));
    handed_out += k;
    *end = next_ > n_ && (k == 0 || rng_() % 2 == 0);
    ended_ = ended_ || *end;
    return Status::OK();
  }
  Position position() const override {
    Position p;
    p.last_lsn = next_ - 1;
    p.end_lsn = n_;
    return p;
  }
  std::optional<uint64_t> remaining() const override { return n_ + 1 - next_; }
  uint64_t first_available_lsn() const override { return 1; }
  uint64_t end_lsn() const override { return n_; }
  std::string Describe() const override { return "fake source"; }

  size_t max_allowed = std::numeric_limits<size_t>::max();
  int fail_at_call = 0;
  int calls = 0, bad_max = 0, calls_after_end = 0;
  uint64_t handed_out = 0;

 private:
  uint64_t n_, next_;
  std::mt19937_64 rng_;
  bool ended_ = false;
};

struct Save {
  Position position;
  uint64_t events;
};

uint64_t TestSeed() {
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

RunControl Control(size_t batch, uint64_t stop_after = 0) {
  RunControl c;
  c.batch = batch;
  c.stop_after = stop_after;
  c.checkpoint_every = std::chrono::hours(1);  // only the saves a stop makes
  return c;
}

// Runs in pieces of stop_after records, each resumed from a checkpoint file
// of the previous one (as the CLI does): the pieces together are one run.
TEST(RunReplayTest, StopAfterStopsExactlyAndResumingContinuesWhereItStopped) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  TempDir dir;
  const std::string path = dir.Sub("ckpt");
  for (int trial = 0; trial < 40; trial++) {
    const uint64_t n = rng() % 400;
    const size_t batch = 1 + rng() % 40;
    SCOPED_TRACE("trial " + std::to_string(trial) + ": " + std::to_string(n) + " records, batch " +
                 std::to_string(batch));
    std::vector<uint64_t> seen;
    uint64_t events = 0;
    Position from;
    RunEnd end = RunEnd::kStopped;
    int runs = 0;
    for (; end == RunEnd::kStopped && runs < 1000; runs++) {
      const uint64_t stop_after = 1 + rng() % (n / 3 + 5);
      FakeSource source(n, from.last_lsn, rng());
      source.max_allowed = batch;
      const uint64_t before = seen.size();
      std::vector<Save> saves;
      Sink sink = [&](std::vector<ChangeRecord>& records, bool*) {
        for (const auto& r : records) seen.push_back(r.lsn);
        return Status::OK();
      };
      Saver saver = [&](const Position& p, uint64_t e) {
        saves.push_back({p, e});
        Checkpoint c;
        c.command = "test";
        c.position = p;
        c.events = e;
        return SaveCheckpoint(path, c);
      };
      auto r = RunReplay(&source, sink, saver, Control(batch, stop_after), &events);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      end = *r;
      EXPECT_EQ(source.bad_max, 0) << "Next asked for 0 or more than the batch";
      EXPECT_EQ(source.calls_after_end, 0);
      const uint64_t got = seen.size() - before;
      const uint64_t left = n - from.last_lsn;
      EXPECT_EQ(events, seen.size());
      if (stop_after < left) {
        ASSERT_EQ(end, RunEnd::kStopped);
        EXPECT_EQ(got, stop_after);
      } else if (stop_after > left) {
        ASSERT_EQ(end, RunEnd::kComplete);
        EXPECT_EQ(got, left);
      } else {
        EXPECT_EQ(got, left);  // stopped exactly at the end, or saw the end: both fine
      }
      if (end == RunEnd::kStopped) {
        ASSERT_EQ(saves.size(), 1u);
        EXPECT_EQ(saves[0].position.last_lsn, from.last_lsn + got);
        EXPECT_EQ(saves[0].events, events);
        auto loaded = LoadCheckpoint(path);
        ASSERT_TRUE(loaded.ok() && loaded->has_value()) << loaded.status().ToString();
        from = (*loaded)->position;
        events = (*loaded)->events;
        EXPECT_EQ(from.end_lsn, n);
      } else {
        EXPECT_TRUE(saves.empty());
      }
    }
    ASSERT_EQ(end, RunEnd::kComplete);
    EXPECT_GE(runs, n > 0 ? 1 : 0);
    ASSERT_EQ(seen.size(), n);
    for (uint64_t i = 0; i < n; i++) ASSERT_EQ(seen[i], i + 1);
    EXPECT_EQ(events, n);
  }
}

TEST(RunReplayTest, InterruptFromTheSinkStopsAfterThatBatchWithOneSave) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 20; trial++) {
    std::atomic<bool> interrupted{false};
    FakeSource source(100000, 0, rng());
    const int at_batch = 1 + static_cast<int>(rng() % 10);
    int batches = 0, calls_at_interrupt = 0;
    uint64_t delivered = 0;
    Sink sink = [&](std::vector<ChangeRecord>& records, bool*) {
      delivered += records.size();
      if (++batches == at_batch) {
        interrupted = true;
        calls_at_interrupt = source.calls;
      }
      return Status::OK();
    };
    std::vector<Save> saves;
    Saver saver = [&](const Position& p, uint64_t e) {
      saves.push_back({p, e});
      return Status::OK();
    };
    RunControl control = Control(1 + rng() % 50);
    control.interrupted = &interrupted;
    uint64_t events = 1000;  // carried over from an earlier run
    auto r = RunReplay(&source, sink, saver, control, &events);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, RunEnd::kStopped);
    EXPECT_EQ(batches, at_batch);
    EXPECT_EQ(source.calls, calls_at_interrupt) << "the source was read after the interrupt";
    ASSERT_EQ(saves.size(), 1u);
    EXPECT_EQ(saves[0].position.last_lsn, delivered);
    EXPECT_EQ(saves[0].events, 1000 + delivered);
    EXPECT_EQ(events, 1000 + delivered);
  }
}

TEST(RunReplayTest, InterruptBeforeTheStartReadsNothingAndSavesTheStart) {
  std::atomic<bool> interrupted{true};
  FakeSource source(50, 20, 1);
  int sink_calls = 0;
  std::vector<Save> saves;
  RunControl control = Control(10);
  control.interrupted = &interrupted;
  uint64_t events = 20;
  auto r = RunReplay(
      &source,
      [&](std::vector<ChangeRecord>&, bool*) {
        sink_calls++;
        return Status::OK();
      },
      [&](const Position& p, uint64_t e) {
        saves.push_back({p, e});
        return Status::OK();
      },
      control, &events);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, RunEnd::kStopped);
  EXPECT_EQ(source.calls, 0);
  EXPECT_EQ(sink_calls, 0);
  ASSERT_EQ(saves.size(), 1u);
  EXPECT_EQ(saves[0].position.last_lsn, 20u);
  EXPECT_EQ(saves[0].events, 20u);
}

TEST(RunReplayTest, SinkErrorPropagatesAndNothingFurtherIsRead) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 20; trial++) {
    FakeSource source(100000, 0, rng());
    const int fail_at = 1 + static_cast<int>(rng() % 8);
    int batches = 0, calls_at_failure = 0;
    Sink sink = [&](std::vector<ChangeRecord>&, bool*) {
      if (++batches == fail_at) {
        calls_at_failure = source.calls;
        return Status(Code::kEntityTooLarge, "sink broke");
      }
      return Status::OK();
    };
    int saves = 0;
    Saver saver = [&](const Position&, uint64_t) {
      saves++;
      return Status::OK();
    };
    RunControl control = Control(1 + rng() % 50);
    control.stop_after = 1000000;
    uint64_t events = 0;
    auto r = RunReplay(&source, sink, saver, control, &events);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kEntityTooLarge);
    EXPECT_EQ(r.status().message(), "sink broke");
    EXPECT_EQ(batches, fail_at);
    EXPECT_EQ(source.calls, calls_at_failure);
    EXPECT_EQ(saves, 0) << "a checkpoint past a batch the sink refused";
  }
}

TEST(RunReplayTest, SourceErrorPropagatesAndNothingFurtherIsRead) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 20; trial++) {
    FakeSource source(100000, 0, rng());
    source.fail_at_call = 1 + static_cast<int>(rng() % 8);
    uint64_t delivered = 0;
    int sink_calls = 0;
    Sink sink = [&](std::vector<ChangeRecord>& records, bool*) {
      sink_calls++;
      delivered += records.size();
      return Status::OK();
    };
    int saves = 0;
    Saver saver = [&](const Position&, uint64_t) {
      saves++;
      return Status::OK();
    };
    uint64_t events = 0;
    auto r = RunReplay(&source, sink, saver, Control(1 + rng() % 50), &events);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), Code::kUnavailable);
    EXPECT_EQ(r.status().message(), "source broke");
    EXPECT_EQ(source.calls, source.fail_at_call);
    EXPECT_EQ(delivered, source.handed_out);
    EXPECT_EQ(events, delivered);
    EXPECT_EQ(saves, 0);
  }
}

TEST(RunReplayTest, SinkDoneEndsTheRunComplete) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 20; trial++) {
    FakeSource source(100000, 0, rng());
    const int done_at = 1 + static_cast<int>(rng() % 8);
    int batches = 0, calls_at_done = 0;
    uint64_t delivered = 0;
    Sink sink = [&](std::vector<ChangeRecord>& records, bool* done) {
      delivered += records.size();
      if (++batches == done_at) {
        *done = true;
        calls_at_done = source.calls;
      }
      return Status::OK();
    };
    int saves = 0;
    Saver saver = [&](const Position&, uint64_t) {
      saves++;
      return Status::OK();
    };
    uint64_t events = 0;
    auto r = RunReplay(&source, sink, saver, Control(1 + rng() % 50, 1000000), &events);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, RunEnd::kComplete);
    EXPECT_EQ(batches, done_at);
    EXPECT_EQ(source.calls, calls_at_done);
    EXPECT_EQ(events, delivered);
    EXPECT_EQ(saves, 0);
  }
}

TEST(RunReplayTest, PeriodicCheckpointsMatchWhatTheSinkHasTaken) {
  const uint64_t seed = TestSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  FakeSource source(500, 0, seed);
  uint64_t taken = 0;
  Sink sink = [&](std::vector<ChangeRecord>& records, bool*) {
    taken += records.size();
    return Status::OK();
  };
  std::vector<Save> saves;
  std::vector<uint64_t> taken_at_save;
  Saver saver = [&](const Position& p, uint64_t e) {
    saves.push_back({p, e});
    taken_at_save.push_back(taken);
    return Status::OK();
  };
  RunControl control = Control(7);
  control.checkpoint_every = std::chrono::milliseconds(0);  // after every batch
  uint64_t events = 40;
  auto r = RunReplay(&source, sink, saver, control, &events);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, RunEnd::kComplete);
  EXPECT_EQ(taken, 500u);
  EXPECT_EQ(events, 540u);
  ASSERT_GE(saves.size(), 500u / 7);
  for (size_t i = 0; i < saves.size(); i++) {
    EXPECT_EQ(saves[i].position.last_lsn, taken_at_save[i]);
    EXPECT_EQ(saves[i].events, 40 + taken_at_save[i]);
    if (i > 0) {
      EXPECT_GE(saves[i].position.last_lsn, saves[i - 1].position.last_lsn);
    }
  }
}

TEST(RunReplayTest, SaverErrorOnStopPropagates) {
  FakeSource source(100, 0, 3);
  uint64_t events = 0;
  auto r = RunReplay(
      &source, [](std::vector<ChangeRecord>&, bool*) { return Status::OK(); },
      [](const Position&, uint64_t) { return Status(Code::kInternal, "disk full"); }, Control(10, 25), &events);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInternal);
  EXPECT_EQ(r.status().message(), "disk full");
  EXPECT_EQ(events, 25u);
}

TEST(RunReplayTest, NullSaverAndEmptySource) {
  FakeSource source(0, 0, 4);
  int sink_calls = 0;
  uint64_t events = 0;
  auto r = RunReplay(
      &source,
      [&](std::vector<ChangeRecord>&, bool*) {
        sink_calls++;
        return Status::OK();
      },
      Saver(), Control(10, 5), &events);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, RunEnd::kComplete);
  EXPECT_EQ(sink_calls, 0) << "the sink is not called with an empty batch";
  EXPECT_EQ(events, 0u);
  // Without a saver a stop still stops.
  FakeSource more(100, 0, 5);
  auto stopped = RunReplay(
      &more, [](std::vector<ChangeRecord>&, bool*) { return Status::OK(); }, Saver(), Control(10, 30), &events);
  ASSERT_TRUE(stopped.ok());
  EXPECT_EQ(*stopped, RunEnd::kStopped);
  EXPECT_EQ(events, 30u);
}

TEST(RunReplayTest, DrawsProgressWhenGivenOne) {
  TmpFile file;
  ASSERT_NE(file.f, nullptr);
  Progress progress(ProgressMode::kAlways, file.f);
  FakeSource source(100, 0, 6);
  RunControl control = Control(10);
  control.progress = &progress;
  uint64_t events = 0;
  auto r = RunReplay(
      &source, [](std::vector<ChangeRecord>&, bool*) { return Status::OK(); }, Saver(), control, &events);
  ASSERT_TRUE(r.ok());
  progress.Finish();
  const std::string out = file.Contents();
  EXPECT_TRUE(std::regex_search(out, std::regex("^\r\x1b\\[K[0-9,]+ events  [0-9,]+/s(  ETA [0-9]+:[0-9]{2})?")))
      << out;
  EXPECT_TRUE(out.ends_with("\r\x1b[K")) << out;
}

}  // namespace
}  // namespace sidetable::replay
