// Exactly-once retries (issue 14): a write whose reply is lost, with the
// sidecar SIGKILLed between the attempt and its retry, is applied once; the
// retry gets the first outcome. Real `sidetable` processes on a fixed ipc://
// endpoint, so a restarted sidecar is found again at the same address.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

#include "client/client.h"
#include "protocol/wire.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"

namespace sidetable::testing {
namespace {

class RetriesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    endpoint_ = "ipc://" + dir_.Sub("sidecar.sock");
    server_ = std::make_unique<SidecarProcess>(
        SIDETABLE_BIN, dir_.Sub("db"),
        std::vector<std::string>{"--listen", endpoint_, "--durability", "os", "--kafka", "none"});
    ASSERT_TRUE(server_->Start()) << server_->Log();
  }

  void KillAndRestart() {
    EXPECT_EQ(server_->Kill(), 128 + SIGKILL);
    ASSERT_TRUE(server_->Start()) << server_->Log();
  }

  std::unique_ptr<client::Client> Connect(int max_attempts, int timeout_ms) {
    client::ClientOptions o;
    o.endpoint = endpoint_;
    o.caller = "retry-test";
    o.max_attempts = max_attempts;
    o.timeout = std::chrono::milliseconds(timeout_ms);
    o.backoff_initial = std::chrono::milliseconds(20);
    o.backoff_max = std::chrono::milliseconds(200);
    auto c = client::Client::Connect(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(c).value();
  }

  // Every change record's client request id, counted.
  std::map<std::string, int> IdsInTheChangeLog(client::Client& c) {
    std::map<std::string, int> ids;
    auto it = c.Changes(1);
    ChangeRecord r;
    while (it.Next(&r)) ids[r.client_request_id]++;
    EXPECT_TRUE(it.status().ok()) << it.status().ToString();
    return ids;
  }

  TempDir dir_;
  std::string endpoint_;
  std::unique_ptr<SidecarProcess> server_;
};

// The reply of each first attempt is read by the test and thrown away (the
// client "never got it"), the sidecar is SIGKILLed, and the same request is
// sent again to the restarted one: no kind is applied twice.
TEST_F(RetriesTest, AReplyLostToASigkillIsRecoveredByTheRetryForEveryKind) {
  auto c = Connect(1, 5000);
  ASSERT_TRUE(c->CreateTable("Orders").ok());
  Entity e;
  e.partition_key = "p";
  e.row_key = "r";
  e.Set("n", Value::Int32(1));
  ASSERT_TRUE(c->Insert("Orders", e).ok());

  struct Case {
    std::string name;
    Batch batch;
  };
  Entity merged = e;
  merged.Set("m", Value::Int32(2));
  Entity fresh;
  fresh.partition_key = "p";
  fresh.row_key = "new";
  std::vector<Case> cases;
  cases.push_back({"insert", std::move(Batch("Orders").Insert(fresh).SetClientRequestId("insert-1"))});
  cases.push_back({"merge", std::move(Batch("Orders").Merge(merged).SetClientRequestId("merge-1"))});
  cases.push_back({"upsert", std::move(Batch("Orders").InsertOrReplace(e).SetClientRequestId("upsert-1"))});
  cases.push_back({"delete", std::move(Batch("Orders").Delete("p", "new").SetClientRequestId("delete-1"))});
  for (const Case& k : cases) {
    SCOPED_TRACE(k.name);
    auto first = c->Execute(k.batch);  // its reply is "lost": only the test keeps it
    ASSERT_TRUE(first.ok()) << first.status().ToString();
    ASSERT_FALSE(first->replayed);
    // A newer write by someone else lands before the sidecar dies.
    Entity other;
    other.partition_key = "p";
    other.row_key = "other";
    ASSERT_TRUE(c->InsertOrMerge("Orders", other).ok());
    KillAndRestart();
    auto c2 = Connect(1, 5000);
    auto retry = c2->Execute(k.batch);
    ASSERT_TRUE(retry.ok()) << retry.status().ToString() << "\n" << server_->Log();
    EXPECT_TRUE(retry->replayed);
    EXPECT_EQ(retry->lsn, first->lsn);
    EXPECT_EQ(retry->etags, first->etags);
    auto ids = IdsInTheChangeLog(*c2);
    EXPECT_EQ(ids[k.batch.client_request_id()], 1) << "applied more than once";
    c = std::move(c2);
  }
  // The retried merge did not undo anything: the row is as the upsert left it.
  auto row = c->Get("Orders", "p", "r");
  ASSERT_TRUE(row.ok());
  EXPECT_EQ(row->Find("m"), nullptr);
  EXPECT_NE(server_->Log().find("merge-1"), std::string::npos)
      << "the replayed answer is logged with its client request id";
}

// Many writes through the client's own time-outs and retries while the
// sidecar is SIGKILLed and restarted at random moments: every write ends
// acknowledged once, none fails with its own first attempt, and the change
// log holds each client request id exactly once.
TEST_F(RetriesTest, WritesUnderRandomSigkillsConvergeToExactlyOneApplicationEach) {
  auto setup = Connect(5, 5000);
  ASSERT_TRUE(setup->CreateTable("Chaos").ok());
  setup.reset();

  // The writer runs until the killer is done (8 kills), at most kMaxWrites.
  constexpr int kKills = 8, kMaxWrites = 50'000;
  std::atomic<bool> killer_done{false};
  std::atomic<int> kills{0};
  std::thread killer([&] {
    std::mt19937 rng(42);
    for (int i = 0; i < kKills; i++) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100 + rng() % 200));
      KillAndRestart();
      kills++;
    }
    killer_done = true;
  });

  // Short attempts, many of them: attempts in flight when the sidecar dies
  // time out and are retried against the restarted one.
  auto c = Connect(200, 250);
  int replayed = 0;
  std::vector<std::string> ids;
  for (int i = 0; i < kMaxWrites && !killer_done.load(); i++) {
    Entity e;
    e.partition_key = "p" + std::to_string(i % 7);
    e.row_key = "r" + std::to_string(i);
    e.Set("i", Value::Int32(i));
    Batch b("Chaos");
    b.Insert(e).SetClientRequestId("chaos-" + std::to_string(i));
    ids.push_back(b.client_request_id());
    auto w = c->Execute(b);
    if (!w.ok()) {
      killer.join();
      FAIL() << "write " << i << ": " << w.status().ToString();
    }
    replayed += w->replayed;
  }
  killer.join();

  auto check = Connect(5, 5000);
  auto log_ids = IdsInTheChangeLog(*check);
  size_t wrong = 0;
  for (const auto& id : ids) wrong += log_ids[id] != 1;
  EXPECT_EQ(wrong, 0u) << "writes not in the change log exactly once";
  std::printf("%zu writes, %d SIGKILLs, %d answered from the remembered outcome\n", ids.size(),
              kills.load(), replayed);
  EXPECT_EQ(kills.load(), kKills);
  EXPECT_GT(ids.size(), 100u);
}

}  // namespace
}  // namespace sidetable::testing
