// Watermarks and read-your-writes through the real binary
// (docs/consistency.md). The pattern worker is simulated: the test writes
// the derived rows and calls AdvanceWatermarks itself.
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "client/session.h"
#include "common/kafka/partitioner.h"
#include "tests/sidecar/e2e_fixture.h"

namespace sidetable {
namespace {

using client::ReadOptions;
using client::Watermark;
using testing::SidecarTest;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kPartitions = 4;

class SessionTest : public SidecarTest {
 protected:
  void CreateTables() {
    ASSERT_TRUE(client_->CreateTable("People").ok());
    ASSERT_TRUE(client_->CreateTable("PeopleByAge").ok());
    ASSERT_TRUE(client_->CreateTable("Orders").ok());
  }
  // Registers PeopleByAge as derived from People, every partition at lsn 0.
  void Register() {
    std::vector<Watermark> all;
    for (int p = 0; p < kPartitions; p++) all.push_back(Mark(p, 0));
    ASSERT_TRUE(client_->AdvanceWatermarks(all).ok());
  }
  static Watermark Mark(int partition, uint64_t lsn, int partitions = kPartitions) {
    return Watermark{"PeopleByAge", "People", partition, partitions, lsn, 0};
  }
  static int32_t PartitionOf(const std::string& pk) {
    return kafka::KafkaPartitionFor("People/" + pk, kPartitions);
  }
  std::vector<Watermark> Stored() {
    auto w = client_->ReadWatermarks();
    EXPECT_TRUE(w.ok()) << w.status().ToString();
    return w.ok() ? *w : std::vector<Watermark>{};
  }
  std::string Metrics() {
    auto colon = server_->http().rfind(':');
    httplib::Client http(server_->http().substr(0, colon), std::stoi(server_->http().substr(colon + 1)));
    auto m = http.Get("/metrics");
    return m ? m->body : "";
  }
  // Waits (bounded) until the metrics show `n` parked reads.
  bool WaitParked(int n) {
    const std::string want = "sidetable_parked_reads " + std::to_string(n) + "\n";
    for (int i = 0; i < 500; i++) {
      if (Metrics().find(want) != std::string::npos) return true;
      std::this_thread::sleep_for(milliseconds(10));
    }
    return false;
  }
};

// The heart of it: no stale answer, a lower or unrelated watermark does not
// release the read, the covering one does at once.
TEST_F(SessionTest, ParkedReadCompletesRightAfterItsWatermarkAndNotBefore) {
  CreateTables();
  Register();
  auto w1 = client_->Insert("People", Person("Sales", "1", 34));
  auto w2 = client_->Merge("People", client::EntityBuilder("Sales", "1").Int32("Age", 35).Build());
  ASSERT_TRUE(w1.ok() && w2.ok());
  // The worker's derived row exists already, but its watermark does not say so.
  ASSERT_TRUE(client_->Insert("PeopleByAge", Person("35", "Sales_1", 35)).ok());
  const ReadOptions mine{{{"People", w2->lsn}}, milliseconds(300)};

  auto start = Clock::now();
  auto stale = client_->Get("PeopleByAge", "35", "Sales_1", {}, mine);
  EXPECT_EQ(stale.status().code(), Code::kReadSessionNotAvailable) << stale.status().ToString();
  EXPECT_GE(Clock::now() - start, milliseconds(290));
  client::QueryOptions q{.table = "PeopleByAge", .read = mine};
  EXPECT_EQ(client_->QueryPage(q).status().code(), Code::kReadSessionNotAvailable);

  bool done = false;
  Result<Entity> got = Status(Code::kInternal, "not answered");
  client_->SendGet("PeopleByAge", "35", "Sales_1", [&](Result<Entity> r) { got = std::move(r); done = true; },
                   {}, ReadOptions{{{"People", w2->lsn}}, milliseconds(20000)});
  auto worker = Connect();  // the simulated pattern worker
  auto still_waiting = [&] {
    const auto until = Clock::now() + milliseconds(300);
    while (!done && Clock::now() < until) client_->Poll(milliseconds(50));
    return !done;
  };
  ASSERT_TRUE(still_waiting());
  const int32_t p = PartitionOf("Sales");
  ASSERT_TRUE(worker->AdvanceWatermarks({Mark((p + 1) % kPartitions, w2->lsn)}).ok());  // another partition
  EXPECT_TRUE(still_waiting());
  ASSERT_TRUE(worker->AdvanceWatermarks({Mark(p, w1->lsn)}).ok());  // below the token
  EXPECT_TRUE(still_waiting());
  ASSERT_TRUE(WaitParked(1));
  ASSERT_TRUE(worker->AdvanceWatermarks({Mark(p, w2->lsn)}).ok());
  const auto advanced = Clock::now();
  while (!done && Clock::now() - advanced < milliseconds(5000)) client_->Poll(milliseconds(20));
  ASSERT_TRUE(done);
  EXPECT_LT(Clock::now() - advanced, milliseconds(1000));
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->Find("Age")->as_int32(), 35);
  // Covered now: answered at once, the query too.
  EXPECT_TRUE(client_->Get("PeopleByAge", "35", "Sales_1", {}, mine).ok());
  auto page = client_->QueryPage(q);
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  EXPECT_EQ(page->entities.size(), 1u);

  const std::string m = Metrics();
  EXPECT_NE(m.find("sidetable_parked_reads 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("sidetable_session_timeouts_total 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("sidetable_session_waits_total 3\n"), std::string::npos) << m;
  EXPECT_NE(m.find("sidetable_session_wait_seconds_count 3\n"), std::string::npos) << m;
  EXPECT_NE(m.find("sidetable_errors_total{code=\"ReadSessionNotAvailable\"} 2"), std::string::npos) << m;
}

// A token means every write of the session to its source, not only the
// newest: a session that wrote A then B holds B's LSN, and the read must
// wait for A's partition too (before session 46 it was answered as soon as
// B's partition had applied B). What the sidecar knows of where records
// went survives a kill -9.
TEST_F(SessionTest, ATokenCoversTheSessionsEarlierWritesOnOtherPartitionsAcrossAKill) {
  CreateTables();
  Register();
  std::string a = "a0", b;
  for (int i = 1; i < 100 && b.empty(); i++) {
    if (PartitionOf("a" + std::to_string(i)) != PartitionOf(a)) b = "a" + std::to_string(i);
  }
  ASSERT_FALSE(b.empty());
  auto wa = client_->Insert("People", Person(a, "1", 30));
  auto wb = client_->Insert("People", Person(b, "1", 31));
  ASSERT_TRUE(wa.ok() && wb.ok());
  ASSERT_TRUE(client_->Insert("PeopleByAge", Person("30", a + "_1", 30)).ok());
  ASSERT_TRUE(client_->Insert("PeopleByAge", Person("31", b + "_1", 31)).ok());
  ASSERT_TRUE(
      client_->AdvanceWatermarks({Mark(PartitionOf(b), wb->lsn)}).ok());  // B applied, A not
  const ReadOptions mine{{{"People", wb->lsn}}, milliseconds(0)};
  EXPECT_EQ(client_->Get("PeopleByAge", "30", a + "_1", {}, mine).status().code(),
            Code::kReadSessionNotAvailable);

  client_.reset();
  server_->Kill();
  ASSERT_TRUE(server_->Start()) << server_->Log();
  client_ = Connect();
  ASSERT_NE(client_, nullptr);
  EXPECT_EQ(client_->Get("PeopleByAge", "30", a + "_1", {}, mine).status().code(),
            Code::kReadSessionNotAvailable);
  ASSERT_TRUE(client_->AdvanceWatermarks({Mark(PartitionOf(a), wa->lsn)}).ok());
  auto got = client_->Get("PeopleByAge", "30", a + "_1", {}, mine);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  // The partitions nothing of People went to since the registration were
  // never waited for: they are still at 0.
  EXPECT_TRUE(client_->Get("PeopleByAge", "31", b + "_1", {}, mine).ok());
}

TEST_F(SessionTest, TokensWithNothingToWaitForAreAnsweredAtOnce) {
  CreateTables();
  Register();
  auto w = client_->Insert("People", Person("Sales", "1", 34));
  auto o = client_->Insert("Orders", Person("o", "1", 1));
  ASSERT_TRUE(w.ok() && o.ok());
  ASSERT_TRUE(client_->Insert("PeopleByAge", Person("34", "Sales_1", 34)).ok());
  const ReadOptions no_wait{{{"People", w->lsn}, {"Orders", o->lsn}}, milliseconds(0)};
  // The source table itself: nothing is derived into it.
  EXPECT_TRUE(client_->Get("People", "Sales", "1", {}, no_wait).ok());
  // Orders is not a source of PeopleByAge: its token is ignored...
  EXPECT_TRUE(client_->Get("PeopleByAge", "34", "Sales_1", {}, ReadOptions{{{"Orders", o->lsn}}, milliseconds(0)}).ok());
  // ...but the People token is not, and waitMs 0 answers at once.
  auto start = Clock::now();
  EXPECT_EQ(client_->Get("PeopleByAge", "34", "Sales_1", {}, no_wait).status().code(),
            Code::kReadSessionNotAvailable);
  EXPECT_LT(Clock::now() - start, milliseconds(1000));
  // A trimmed record or a case-changed name changes nothing here: names fold.
  ASSERT_TRUE(client_->AdvanceWatermarks({Watermark{"peoplebyage", "PEOPLE", PartitionOf("Sales"), kPartitions,
                                                    w->lsn, 0}}).ok());
  EXPECT_TRUE(client_->Get("PeopleByAge", "34", "Sales_1", {}, no_wait).ok());
}

TEST_F(SessionTest, WatermarksAreMonotonicAndSurviveRestart) {
  CreateTables();
  Register();
  for (int i = 0; i < 5; i++) ASSERT_TRUE(client_->Insert("People", Person("p", std::to_string(i), i)).ok());
  ASSERT_TRUE(client_->AdvanceWatermarks({Watermark{"PeopleByAge", "People", 2, kPartitions, 6, 1234}}).ok());
  // A zombie worker's old report never moves it back.
  ASSERT_TRUE(client_->AdvanceWatermarks({Watermark{"PeopleByAge", "People", 2, kPartitions, 4, 999}}).ok());
  std::vector<Watermark> want;
  for (int p = 0; p < kPartitions; p++) want.push_back(Mark(p, 0));
  want[2] = Watermark{"PeopleByAge", "People", 2, kPartitions, 6, 1234};
  EXPECT_EQ(Stored(), want);
  auto only = client_->ReadWatermarks("peoplebyage");
  ASSERT_TRUE(only.ok());
  EXPECT_EQ(*only, want);
  auto none = client_->ReadWatermarks("Orders");
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  client_.reset();
  ASSERT_EQ(server_->Stop(), 0) << server_->Log();
  ASSERT_TRUE(server_->Start()) << server_->Log();
  client_ = Connect();
  EXPECT_EQ(Stored(), want);
  // And they still wake reads after the restart.
  const ReadOptions token{{{"People", 6}}, milliseconds(0)};
  ASSERT_TRUE(client_->Insert("PeopleByAge", Person("4", "p_4", 4)).ok());
  auto rec = client_->ReadChanges(6, 1);
  ASSERT_TRUE(rec.ok() && rec->records.size() == 1);
  const int32_t p = kafka::KafkaPartitionFor("People/" + rec->records[0].partition_key, kPartitions);
  EXPECT_EQ(client_->Get("PeopleByAge", "4", "p_4", {}, token).status().code() == Code::kOk, p == 2);
}

// A derived table kept while nobody derives it any more (its pattern taken
// out of the workers' configuration) used to stay registered for good:
// `lag` showed it falling behind and every restart on the embedded Kafka
// published again from its last watermark; only deleting the table ended
// it. ForgetWatermarks forgets it and keeps the table; a read parked on it
// is answered at once; it lasts across a restart; a worker that still
// derives the table registers it again.
TEST_F(SessionTest, AForgottenDerivedTableKeepsItsRowsAndHoldsNothing) {
  CreateTables();
  Register();
  ASSERT_TRUE(client_->AdvanceWatermarks({Watermark{"Orders", "People", 0, 1, 0, 0}}).ok());
  auto w = client_->Insert("People", Person("Sales", "1", 34));
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE(client_->Insert("PeopleByAge", Person("34", "Sales_1", 34)).ok());

  // Bad input first: refused, nothing forgotten.
  EXPECT_EQ(client_->ForgetWatermarks("").code(), Code::kInvalidInput);
  EXPECT_EQ(client_->ForgetWatermarks("no such!").code(), Code::kInvalidResourceName);
  ASSERT_EQ(Stored().size(), static_cast<size_t>(kPartitions + 1));

  // A read parked on PeopleByAge for the People write, for up to a minute.
  bool done = false;
  Result<Entity> got = Status(Code::kInternal, "not answered");
  client_->SendGet(
      "PeopleByAge", "34", "Sales_1",
      [&](Result<Entity> r) {
        got = std::move(r);
        done = true;
      },
      {}, ReadOptions{{{"People", w->lsn}}, milliseconds(60000)});
  for (int i = 0; i < 10 && !done; i++) client_->Poll(milliseconds(20));
  ASSERT_FALSE(done) << got.status().ToString();
  ASSERT_TRUE(WaitParked(1));

  auto other = Connect();                                    // the operator
  ASSERT_TRUE(other->ForgetWatermarks("peoplebyage").ok());  // names fold
  // Answered once nothing is left to wait for, not at the minute's end.
  const auto forgotten = Clock::now();
  while (!done && Clock::now() - forgotten < milliseconds(30000)) client_->Poll(milliseconds(20));
  ASSERT_TRUE(done) << "the parked read still waits for a forgotten table";
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->Find("Age")->as_int32(), 34);
  // Only that table's pairs went; its rows stay; forgetting again is no error.
  EXPECT_EQ(Stored(), (std::vector<Watermark>{Watermark{"Orders", "People", 0, 1, 0, 0}}));
  EXPECT_TRUE(client_->Get("PeopleByAge", "34", "Sales_1").ok());
  EXPECT_TRUE(client_->ForgetWatermarks("PeopleByAge").ok());
  // Reads of it no longer wait.
  EXPECT_TRUE(client_
                  ->Get("PeopleByAge", "34", "Sales_1", {},
                        ReadOptions{{{"People", w->lsn}}, milliseconds(0)})
                  .ok());

  other.reset();
  client_.reset();
  ASSERT_EQ(server_->Stop(), 0) << server_->Log();
  ASSERT_TRUE(server_->Start()) << server_->Log();
  client_ = Connect();
  EXPECT_EQ(Stored(), (std::vector<Watermark>{Watermark{"Orders", "People", 0, 1, 0, 0}}));
  // A worker still deriving it registers it again.
  Register();
  EXPECT_EQ(Stored().size(), static_cast<size_t>(kPartitions + 1));
}

// Every refusal is InvalidInput and leaves the stored watermarks as they were.
TEST_F(SessionTest, BadInputIsInvalidAndChangesNothing) {
  CreateTables();
  Register();
  auto w = client_->Insert("People", Person("Sales", "1", 34));
  auto o = client_->Insert("Orders", Person("o", "1", 1));
  ASSERT_TRUE(w.ok() && o.ok());
  ASSERT_TRUE(client_->AdvanceWatermarks({Mark(0, 1)}).ok());
  const std::vector<Watermark> before = Stored();
  ASSERT_EQ(before.size(), static_cast<size_t>(kPartitions));
  const uint64_t last = o->lsn;

  auto refused = [&](std::vector<Watermark> batch, const std::string& why) {
    Status s = client_->AdvanceWatermarks(batch);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << why << ": " << s.ToString();
    EXPECT_EQ(Stored(), before) << why;
  };
  // The good entry first: a refused request applies none of its entries.
  refused({Mark(1, 2), Mark(0, last + 1)}, "lsn from the future");
  refused({Mark(1, 2), Mark(kPartitions, 2)}, "partition >= partitions");
  refused({Mark(1, 2), Mark(-1, 2)}, "negative partition");
  refused({Mark(1, 2), Mark(0, 2, 0)}, "zero partitions");
  refused({Mark(1, 2), Mark(0, 2, 10001)}, "too many partitions");
  refused({Mark(1, 2), Watermark{"1bad", "People", 0, kPartitions, 1, 0}}, "bad derived name");
  refused({Mark(1, 2), Watermark{"PeopleByAge", "tables", 0, kPartitions, 1, 0}}, "reserved source name");
  refused({Mark(1, 2), Watermark{"PeopleByAge", "", 0, kPartitions, 1, 0}}, "empty source name");
  refused({Mark(1, 2), Mark(0, 2, 8)}, "two partition counts for one pair");
  refused(std::vector<Watermark>(1001, Mark(1, 2)), "1,001 entries");
  refused({}, "no entries");
  EXPECT_EQ(client_->ReadWatermarks("no-such").status().code(), Code::kInvalidResourceName);

  ASSERT_TRUE(client_->Insert("PeopleByAge", Person("34", "Sales_1", 34)).ok());
  const uint64_t last_now = last + 1;
  auto read_refused = [&](ReadOptions read, const std::string& why) {
    EXPECT_EQ(client_->Get("PeopleByAge", "34", "Sales_1", {}, read).status().code(), Code::kInvalidInput) << why;
    client::QueryOptions q{.table = "PeopleByAge", .read = read};
    EXPECT_EQ(client_->QueryPage(q).status().code(), Code::kInvalidInput) << why;
  };
  read_refused({{{"People", last_now + 1}}, milliseconds(0)}, "token from the future");
  // An unregistered source from the future is refused too: the LSN is checked first.
  read_refused({{{"Orders", last_now + 5}}, milliseconds(0)}, "unregistered token from the future");
  read_refused({{{"People", o->lsn}}, milliseconds(0)}, "token naming another table's change");
  read_refused({{{"9bad", 1}}, milliseconds(0)}, "bad token table name");
  read_refused({std::vector<client::SessionToken>(65, {"Orders", 1}), milliseconds(0)},
               "65 tokens");
  read_refused({{{"Orders", 1}}, milliseconds(60001)}, "waitMs over 60000");
  EXPECT_EQ(Stored(), before);
  auto p = client_->Ping();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->last_lsn, last_now);  // no read wrote anything
}

TEST_F(SessionTest, SessionRecordsWritesExportsAndImports) {
  CreateTables();
  Register();
  client::Session session(client_.get());
  session.set_wait(milliseconds(200));
  auto w = session.Insert("People", Person("Sales", "1", 34));
  ASSERT_TRUE(w.ok());
  auto wo = session.Insert("Orders", Person("o", "1", 1));
  ASSERT_TRUE(wo.ok());
  Batch b("People");
  b.Insert(Person("Sales", "2", 40));
  auto wb = session.Execute(b);
  ASSERT_TRUE(wb.ok());
  EXPECT_EQ(session.Export(), "st1:Orders=" + std::to_string(wo->lsn) + ",People=" + std::to_string(wb->lsn));
  // A failed write records nothing.
  EXPECT_FALSE(session.Insert("People", Person("Sales", "2", 40)).ok());
  EXPECT_EQ(session.tokens().size(), 2u);

  ASSERT_TRUE(client_->Insert("PeopleByAge", Person("40", "Sales_2", 40)).ok());
  EXPECT_EQ(session.Get("PeopleByAge", "40", "Sales_2").status().code(), Code::kReadSessionNotAvailable);
  EXPECT_TRUE(session.Get("People", "Sales", "2").ok());  // the source itself: not delayed
  std::vector<Watermark> all;
  for (int p = 0; p < kPartitions; p++) all.push_back(Mark(p, wb->lsn));
  ASSERT_TRUE(client_->AdvanceWatermarks(all).ok());
  EXPECT_TRUE(session.Get("PeopleByAge", "40", "Sales_2").ok());
  auto it = session.Query({.table = "PeopleByAge"});
  int n = 0;
  for (Entity e; it.Next(&e);) n++;
  EXPECT_TRUE(it.status().ok()) << it.status().ToString();
  EXPECT_EQ(n, 1);

  // Handed over to another process's session.
  client::Session other(client_.get());
  ASSERT_TRUE(other.Import(session.Export()).ok());
  EXPECT_EQ(other.Export(), session.Export());
  ASSERT_TRUE(other.Import("st1:people=1").ok());  // older: the newer is kept
  EXPECT_EQ(other.Export(), session.Export());
  for (const char* bad : {"", "st2:People=1", "st1:People", "st1:People=x", "st1:1x=3", "st1:People=1,",
                          "st1:,People=1", "st1:People=1,,Orders=2", "st1:People=-1", "st1:People=99999999999999999999"}) {
    client::Session s(client_.get());
    EXPECT_EQ(s.Import(bad).code(), Code::kInvalidInput) << bad;
    EXPECT_TRUE(s.tokens().empty()) << bad;
  }
  ASSERT_TRUE(other.Import("st1:").ok());
}

class ParkedFloodTest : public SessionTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    return {"--durability", "os", "--max-inflight-per-connection", "16"};
  }
};

// Waiting reads keep their admission charge: a flood of them meets the
// in-flight bound and gets ServerBusy at once, and the others keep going.
TEST_F(ParkedFloodTest, ManyParkedReadsHitTheInflightBound) {
  CreateTables();
  Register();
  auto w = client_->Insert("People", Person("Sales", "1", 34));
  ASSERT_TRUE(w.ok());
  auto flood = Connect(/*max_attempts=*/1);
  int busy = 0, timed_out = 0, other = 0;
  const ReadOptions wait{{{"People", w->lsn}}, milliseconds(1500)};
  for (int i = 0; i < 100; i++) {
    flood->SendGet("PeopleByAge", "x", std::to_string(i), [&](Result<Entity> r) {
      const Code c = r.status().code();
      (c == Code::kServerBusy ? busy : c == Code::kReadSessionNotAvailable ? timed_out : other)++;
    }, {}, wait);
  }
  ASSERT_TRUE(WaitParked(16));
  // Others are not starved by the waiting reads.
  auto start = Clock::now();
  ASSERT_TRUE(client_->Ping().ok());
  EXPECT_LT(Clock::now() - start, milliseconds(500));
  flood->Drain();
  EXPECT_EQ(busy, 84);
  EXPECT_EQ(timed_out, 16);
  EXPECT_EQ(other, 0);
  EXPECT_TRUE(WaitParked(0));
}

class ParkedShutdownTest : public SessionTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    return {"--durability", "os", "--shutdown-grace-ms", "3000"};
  }
};

// SIGTERM with reads parked for a minute: every one is answered ServerBusy
// (not executed) well within the grace, and the process exits 0.
TEST_F(ParkedShutdownTest, SigtermAnswersEveryParkedRead) {
  CreateTables();
  Register();
  auto w = client_->Insert("People", Person("Sales", "1", 34));
  ASSERT_TRUE(w.ok());
  auto reader = Connect(/*max_attempts=*/1);
  int busy = 0, other = 0;
  const ReadOptions wait{{{"People", w->lsn}}, milliseconds(60000)};
  for (int i = 0; i < 20; i++) {
    reader->SendGet("PeopleByAge", "x", std::to_string(i), [&](Result<Entity> r) {
      (r.status().code() == Code::kServerBusy ? busy : other)++;
    }, {}, wait);
  }
  ASSERT_TRUE(WaitParked(20));
  const auto start = Clock::now();
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
  EXPECT_LT(Clock::now() - start, milliseconds(3000));
  const auto until = Clock::now() + milliseconds(5000);
  while (reader->pending() > 0 && Clock::now() < until) reader->Poll(milliseconds(50));
  EXPECT_EQ(busy, 20);
  EXPECT_EQ(other, 0);
  EXPECT_EQ(reader->pending(), 0u);
  server_.reset();  // stopped here, not in TearDown
}

}  // namespace
}  // namespace sidetable
