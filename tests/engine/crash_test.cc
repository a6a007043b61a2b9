// Crash safety: a child process commits EGTs from several threads and
// reports every acknowledgement; we SIGKILL it at random points (after a
// random number of acks, while other commits are in flight), reopen the
// database and check that
//   - every acknowledged EGT is in the change log, whole, at the LSN acked;
//   - the change log is contiguous (no gaps) and every record is complete;
//   - replaying the change log from empty gives exactly the stored rows.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <random>
#include <set>

#include "engine/engine.h"
#include "testing/temp_dir.h"
#include "tests/engine/crash_workload.h"

namespace sidetable {
namespace {

namespace crash = testing::crash;

struct ChildRun {
  std::map<uint64_t, uint64_t> acked;  // id -> lsn
  int exit_signal = 0;
};

// Starts the child, reads acks until `kill_after` of them arrived (or the
// child ends), kills it with SIGKILL, then drains what it wrote before dying.
ChildRun RunAndKill(const std::string& db, const char* durability, int round, int kill_after) {
  ChildRun run;
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::string r = std::to_string(round);
    execl(SIDETABLE_CRASH_CHILD, SIDETABLE_CRASH_CHILD, db.c_str(), durability, r.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  std::string buf;
  int acks = 0;
  bool killed = false;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    pollfd p{fds[0], POLLIN, 0};
    int ready = poll(&p, 1, 1000);
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "child made no progress for 60 s";
      kill(pid, SIGKILL);
      killed = true;
    }
    if (ready <= 0) continue;
    char chunk[4096];
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n <= 0) break;  // EOF: the child is gone
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      unsigned long long id, lsn;
      if (std::sscanf(line.c_str(), "ack %llu %llu", &id, &lsn) == 2) {
        run.acked[id] = lsn;
        acks++;
      }
    }
    if (!killed && acks >= kill_after) {
      kill(pid, SIGKILL);
      killed = true;
    }
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) run.exit_signal = WTERMSIG(status);
  return run;
}

void Verify(const std::string& db, const std::map<uint64_t, uint64_t>& acked, int round) {
  EngineOptions o;
  o.durability = Durability::kOs;
  auto opened = Engine::Open(o, db);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Engine& engine = **opened;

  auto log = engine.ReadChanges(0, SIZE_MAX, SIZE_MAX);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  ASSERT_EQ(log->first_available_lsn, 1u);
  ASSERT_FALSE(log->records.empty());

  std::map<std::pair<std::string, std::string>, Entity> replayed;
  std::map<uint64_t, uint64_t> logged;  // id -> lsn
  for (size_t i = 0; i < log->records.size(); i++) {
    const ChangeRecord& r = log->records[i];
    ASSERT_EQ(r.lsn, i + 1) << "gap in the change log";
    if (r.kind != ChangeKind::kEntities) continue;
    ASSERT_FALSE(r.ops.empty());
    ASSERT_TRUE(r.ops[0].after.has_value());
    const uint64_t id = static_cast<uint64_t>(r.ops[0].after->Find("egt")->as_int64());
    ASSERT_EQ(r.ops.size(), crash::OpsFor(id)) << "partial EGT " << id;
    for (int j = 0; j < crash::RowsFor(id); j++) ASSERT_EQ(r.ops[j].row_key, crash::RowKey(id, j));
    ASSERT_TRUE(logged.emplace(id, r.lsn).second) << "EGT " << id << " logged twice";
    for (const ChangeOp& op : r.ops) {
      auto key = std::make_pair(r.partition_key, op.row_key);
      if (op.after) replayed[key] = *op.after;
      else replayed.erase(key);
    }
  }
  for (const auto& [id, lsn] : acked) {
    auto it = logged.find(id);
    ASSERT_NE(it, logged.end()) << "acknowledged EGT " << id << " lost in round " << round;
    ASSERT_EQ(it->second, lsn) << "EGT " << id;
  }

  auto cur = engine.Scan("Crash", ScanBounds{}, nullptr);
  ASSERT_TRUE(cur.ok());
  size_t rows = 0;
  for (; (*cur)->Valid(); (*cur)->Next(), rows++) {
    Entity e;
    ASSERT_TRUE((*cur)->Read(&e).ok());
    auto it = replayed.find({e.partition_key, e.row_key});
    ASSERT_NE(it, replayed.end()) << "row not explained by the log: " << e.row_key;
    ASSERT_EQ(e.etag, it->second.etag) << e.row_key;
    ASSERT_EQ(e.properties, it->second.properties) << e.row_key;
  }
  ASSERT_TRUE((*cur)->status().ok());
  ASSERT_EQ(rows, replayed.size()) << "rows missing that the log says exist";
}

TEST(CrashTest, KillNineNeverLosesAcknowledgedEgts) {
  testing::TempDir dir;
  const std::string db = dir.Sub("db");
  std::mt19937 rng(20261130);
  std::map<uint64_t, uint64_t> all_acked;
  int killed = 0;
  constexpr int kRounds = 24;
  for (int round = 1; round <= kRounds; round++) {
    const char* durability = round % 2 ? "os" : "fsync";
    const int kill_after = 1 + static_cast<int>(rng() % 300);
    ChildRun run = RunAndKill(db, durability, round, kill_after);
    ASSERT_FALSE(run.acked.empty()) << "round " << round << " acknowledged nothing";
    if (run.exit_signal == SIGKILL) killed++;
    all_acked.insert(run.acked.begin(), run.acked.end());
    Verify(db, all_acked, round);
    if (HasFatalFailure()) return;
  }
  EXPECT_GE(killed, 20);
}

}  // namespace
}  // namespace sidetable
