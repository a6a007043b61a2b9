// Every operation and error code through the real binary and the C++ client.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <thread>

#include "tests/sidecar/e2e_fixture.h"
#include "testing/change_records.h"

namespace sidetable {
namespace {
using ::sidetable::testing::ExpectSameChanges;

using client::EntityBuilder;
using testing::SidecarTest;

TEST_F(SidecarTest, PingReportsVersionAndLsn) {
  auto p = client_->Ping();
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->protocol_version, 1);
  EXPECT_EQ(p->last_lsn, 0u);
}

TEST_F(SidecarTest, TablesLifecycle) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  ASSERT_TRUE(client_->CreateTable("Orders").ok());
  EXPECT_EQ(client_->CreateTable("people").code(), Code::kTableAlreadyExists);
  EXPECT_EQ(client_->CreateTable("1bad").code(), Code::kInvalidResourceName);
  EXPECT_EQ(client_->CreateTable("ab").code(), Code::kOutOfRangeInput);
  auto all = client_->ListTables();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, (std::vector<std::string>{"Orders", "People"}));
  auto some = client_->ListTables("TableName ge 'P'");
  ASSERT_TRUE(some.ok());
  EXPECT_EQ(*some, (std::vector<std::string>{"People"}));
  ASSERT_TRUE(client_->DeleteTable("Orders").ok());
  EXPECT_EQ(client_->DeleteTable("Orders").code(), Code::kTableNotFound);
}

TEST_F(SidecarTest, EntityOperationsAndConditions) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  Entity e = EntityBuilder("Sales", "1")
                 .String("Name", "Ana")
                 .Int64("Big", INT64_MIN)
                 .DateTime("Hired", "2019-05-20T09:00:00.1234567Z")
                 .Guid("Id", *ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833"))
                 .Binary("Raw", std::string("\0\x01", 2))
                 .Double("Score", 0.1)
                 .Boolean("Active", true)
                 .Build();
  auto w = client_->Insert("People", e);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  auto got = client_->Get("People", "Sales", "1");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->properties, e.properties);  // every Edm type exact over the wire
  EXPECT_EQ(got->etag, w->etags[0]);
  EXPECT_EQ(got->timestamp, w->timestamp);

  EXPECT_EQ(client_->Insert("People", e).status().code(), Code::kEntityAlreadyExists);
  auto m = client_->Merge("People", EntityBuilder("Sales", "1").Int32("Age", 30).Build(), w->etags[0]);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(client_->Update("People", e, w->etags[0]).status().code(), Code::kUpdateConditionNotSatisfied);
  EXPECT_EQ(client_->Delete("People", "Sales", "1", w->etags[0]).status().code(),
            Code::kUpdateConditionNotSatisfied);
  auto merged = client_->Get("People", "Sales", "1", {"Age", "Name"});
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->properties.size(), 2u);
  ASSERT_TRUE(client_->Update("People", e, m->etags[0]).ok());
  ASSERT_TRUE(client_->InsertOrReplace("People", Person("Sales", "2", 5)).ok());
  ASSERT_TRUE(client_->InsertOrMerge("People", Person("Sales", "2", 6)).ok());
  ASSERT_TRUE(client_->Delete("People", "Sales", "2").ok());
  EXPECT_EQ(client_->Get("People", "Sales", "2").status().code(), Code::kResourceNotFound);
  EXPECT_EQ(client_->Update("People", Person("Sales", "9", 1)).status().code(), Code::kResourceNotFound);
  EXPECT_EQ(client_->Get("Nope", "a", "b").status().code(), Code::kTableNotFound);
  EXPECT_EQ(client_->Insert("People", Person("a/b", "1", 1)).status().code(), Code::kOutOfRangeInput);
  EXPECT_EQ(client_->Insert("People", Person(std::string(600, 'k'), "1", 1)).status().code(),
            Code::kKeyValueTooLarge);
  Entity big = Person("Sales", "big", 1);
  big.Set("Blob", Value::Binary(std::string(70000, 'x')));
  EXPECT_EQ(client_->Insert("People", big).status().code(), Code::kPropertyValueTooLarge);
}

TEST_F(SidecarTest, BatchIsAtomicAndNamesTheFailingOperation) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  ASSERT_TRUE(client_->Insert("People", Person("p", "r3", 1)).ok());
  Batch b("People");
  for (int i = 0; i < 5; i++) b.Insert(Person("p", "r" + std::to_string(i), i));
  auto w = client_->Execute(b);
  EXPECT_EQ(w.status().code(), Code::kEntityAlreadyExists);
  EXPECT_EQ(w.status().op_index(), 3);
  EXPECT_EQ(client_->Get("People", "p", "r0").status().code(), Code::kResourceNotFound);
  Batch dup("People");
  dup.Insert(Person("p", "x", 1)).Insert(Person("p", "x", 2));
  EXPECT_EQ(client_->Execute(dup).status().code(), Code::kInvalidDuplicateRow);
  Batch ok("People");
  for (int i = 10; i < 110; i++) ok.Insert(Person("p", "r" + std::to_string(i), i));
  auto good = client_->Execute(ok);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->etags.size(), 100u);
}

// A Get's $select holds the names a Query's may (docs/queries.md): an
// invalid one is InvalidInput for both, where a Get used to answer 200 with
// {"a-b": null} (found from outside).
TEST_F(SidecarTest, GetRefusesTheSelectNamesQueryRefuses) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  ASSERT_TRUE(client_->Insert("People", Person("p", "r", 7)).ok());
  const std::vector<std::vector<std::string>> bad = {
      {"a-b"}, {""}, {std::string(256, 'x')}, {"odata.etag"}, {"Age", "9lives"}};
  for (const auto& select : bad) {
    auto got = client_->Get("People", "p", "r", select);
    ASSERT_FALSE(got.ok()) << ::testing::PrintToString(select);
    EXPECT_EQ(got.status().code(), Code::kInvalidInput) << got.status().ToString();
    EXPECT_NE(got.status().message().find("$select"), std::string::npos) << got.status().message();
    auto page = client_->QueryPage({.table = "People", .select = select});
    ASSERT_FALSE(page.ok()) << ::testing::PrintToString(select);
    EXPECT_EQ(page.status().code(), Code::kInvalidInput);
  }
  auto many = std::vector<std::string>(256, "Age");
  EXPECT_EQ(client_->Get("People", "p", "r", many).status().code(), Code::kInvalidInput);
  // The good ones still work, system names included.
  auto ok = client_->Get("People", "p", "r", {"Age", "RowKey", "Timestamp", "Missing"});
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(ok->row_key, "r");
  EXPECT_EQ(ok->Find("Age")->as_int32(), 7);
}

TEST_F(SidecarTest, QueryPagesFollowContinuations) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  for (int p = 0; p < 3; p++) {
    Batch b("People");
    for (int i = 0; i < 50; i++) b.Insert(Person("p" + std::to_string(p), "r" + std::to_string(100 + i), i));
    ASSERT_TRUE(client_->Execute(b).ok());
  }
  auto page = client_->QueryPage({.table = "People", .filter = "PartitionKey eq 'p1' and Age ge 40", .top = 4});
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->plan, "partition-scan");
  EXPECT_EQ(page->entities.size(), 4u);
  ASSERT_TRUE(page->next.has_value());

  auto it = client_->Query({.table = "People", .filter = "Age lt 10", .select = {"Age"}, .top = 7});
  Entity e;
  int n = 0;
  while (it.Next(&e)) {
    EXPECT_LT(e.Find("Age")->as_int32(), 10);
    EXPECT_EQ(e.properties.size(), 1u);
    // Keys and Timestamp only when selected (Azure's $select); the ETag always.
    EXPECT_EQ(e.partition_key, "");
    EXPECT_EQ(e.row_key, "");
    EXPECT_EQ(e.timestamp, 0);
    EXPECT_FALSE(e.etag.empty());
    n++;
  }
  EXPECT_TRUE(it.status().ok()) << it.status().ToString();
  EXPECT_EQ(n, 30);
  auto keyed = client_->QueryPage({.table = "People", .filter = "Age lt 10",
                                   .select = {"RowKey", "Timestamp", "Nope"}, .top = 3});
  ASSERT_TRUE(keyed.ok()) << keyed.status().ToString();
  ASSERT_FALSE(keyed->entities.empty());
  for (const Entity& k : keyed->entities) {
    EXPECT_FALSE(k.row_key.empty());
    EXPECT_EQ(k.partition_key, "");
    EXPECT_NE(k.timestamp, 0);
    EXPECT_TRUE(k.properties.empty()) << "Nope is null: absent in the C++ entity";
  }
  EXPECT_GE(it.pages(), 5u);
  auto bad = client_->QueryPage({.table = "People", .filter = "Age gt"});
  EXPECT_EQ(bad.status().code(), Code::kInvalidInput);
  EXPECT_EQ(client_->QueryPage({.table = "People", .top = 5000}).status().code(), Code::kInvalidInput);
}

TEST_F(SidecarTest, ReadChangesShowsCallerAndImages) {
  client::ClientOptions o;
  o.endpoint = server_->endpoint();
  o.caller = "hr-app";
  auto c = client::Client::Connect(o);
  ASSERT_TRUE(c.ok());
  ASSERT_TRUE((*c)->CreateTable("People").ok());
  ASSERT_TRUE((*c)->Insert("People", Person("p", "r", 1)).ok());
  ASSERT_TRUE((*c)->Merge("People", Person("p", "r", 2)).ok());
  auto changes = client_->ReadChanges(1, 100);
  ASSERT_TRUE(changes.ok()) << changes.status().ToString();
  ASSERT_EQ(changes->records.size(), 3u);
  EXPECT_EQ(changes->records[0].kind, ChangeKind::kTableCreated);
  const ChangeRecord& merge = changes->records[2];
  EXPECT_EQ(merge.caller, "hr-app");
  ASSERT_EQ(merge.ops.size(), 1u);
  EXPECT_EQ(merge.ops[0].before->Find("Age")->as_int32(), 1);
  EXPECT_EQ(merge.ops[0].after->Find("Age")->as_int32(), 2);
  EXPECT_EQ(changes->last_lsn, 3u);
  auto tail = client_->ReadChanges(3, 100);
  ASSERT_TRUE(tail.ok());
  EXPECT_EQ(tail->records.size(), 1u);
}


// Pages in the change log's own encoding ("raw", what this client asks for)
// and as MessagePack records (what older clients get) hold the same records,
// whatever the kinds, the images and the page bounds.
TEST_F(SidecarTest, RawAndMessagePackChangePagesAreTheSame) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  Entity rich = EntityBuilder("Sales", "1")
                    .String("Name", "Ana \xC3\xA9")
                    .Int64("Big", INT64_MIN)
                    .Int32("Age", 34)
                    .Double("D", -0.5)
                    .Boolean("B", true)
                    .DateTime("Hired", "2019-05-20T09:00:00.1234567Z")
                    .Guid("G", *ParseGuid("c9da6455-213d-42c9-9a79-3e9149a57833"))
                    .Binary("Bin", std::string("\0\xFF", 2))
                    .Build();
  ASSERT_TRUE(client_->Insert("People", rich).ok());
  ASSERT_TRUE(client_->Merge("People", Person("Sales", "1", 2)).ok());
  Batch b("People");
  b.SetClientRequestId("req-7");
  for (int i = 0; i < 5; i++) b.InsertOrReplace(Person("Sales", "k" + std::to_string(i), i));
  ASSERT_TRUE(client_->Execute(b).ok());
  ASSERT_TRUE(client_->Delete("People", "Sales", "1").ok());
  ASSERT_TRUE(client_->RequestArchive("People", "Sales", {"k1", "k2"}, "PeopleArchive").ok());
  ASSERT_TRUE(client_->CreateTable("Gone").ok());
  ASSERT_TRUE(client_->DeleteTable("Gone").ok());
  for (uint64_t from : {0, 1, 3, 5, 8, 99}) {
    for (uint32_t max : {1u, 3u, 1000u}) {
      for (uint64_t bytes : {uint64_t{1}, uint64_t{200}, uint64_t{4} << 20}) {
        SCOPED_TRACE("from " + std::to_string(from) + " max " + std::to_string(max) + " bytes " +
                     std::to_string(bytes));
        auto raw = client_->ReadChanges(from, max, bytes, /*raw=*/true);
        auto packed = client_->ReadChanges(from, max, bytes, /*raw=*/false);
        ASSERT_TRUE(raw.ok()) << raw.status().ToString();
        ASSERT_TRUE(packed.ok()) << packed.status().ToString();
        ExpectSameChanges(*raw, *packed);
        if (from <= 8) {
          EXPECT_FALSE(raw->records.empty());
        }
      }
    }
  }
  auto all = client_->ReadChanges(1, 1000);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->records.size(), 8u);
  EXPECT_EQ(all->records[3].client_request_id, "req-7");
  EXPECT_EQ(all->records[5].target_table, "PeopleArchive");
  EXPECT_EQ(all->records[1].ops[0].after->properties, rich.properties);
  // A bad page size is refused the same way in both forms.
  EXPECT_EQ(client_->ReadChanges(1, 0, 100, true).status().code(), Code::kInvalidInput);
  EXPECT_EQ(client_->ReadChanges(1, 0, 100, false).status().code(), Code::kInvalidInput);
}

// Writes without their own id get one from the client: 32 hex digits, the
// client's random 64 bits, then a counter, so one client's ids are unique
// and grow in byte order (the request log inserts each beside the last),
// and two clients' differ. Single writes and batches draw from the same
// counter.
TEST_F(SidecarTest, ClientRequestIdsAreUniqueAndGrowPerClient) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  auto other = Connect();
  ASSERT_NE(other, nullptr);
  for (int i = 0; i < 20; i++) {
    client::Client& c = i % 3 == 2 ? *other : *client_;
    ASSERT_TRUE(c.Insert("People", Person("p", "r" + std::to_string(i), i)).ok());
    if (i % 5 == 0) {
      Batch b("People");
      b.InsertOrReplace(Person("q", "r" + std::to_string(i), i));
      ASSERT_TRUE(c.Execute(b).ok());
    }
  }
  ASSERT_TRUE(client_->Get("People", "p", "r0").ok());
  auto all = client_->ReadChanges(1, 1000);
  ASSERT_TRUE(all.ok()) << all.status().ToString();
  ASSERT_EQ(all->records.size(), 25u);  // 20 inserts, 4 batches, the table
  std::map<std::string, std::vector<std::string>> by_client;
  std::set<std::string> seen;
  for (const ChangeRecord& r : all->records) {
    if (r.kind == ChangeKind::kTableCreated) continue;
    const std::string& id = r.client_request_id;
    ASSERT_EQ(id.size(), 32u) << id;
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
    EXPECT_TRUE(seen.insert(id).second) << "id used twice: " << id;
    by_client[id.substr(0, 16)].push_back(id);
  }
  ASSERT_EQ(by_client.size(), 2u);  // two clients, two prefixes
  for (const auto& [prefix, ids] : by_client) {
    EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end())) << prefix;
  }
}

TEST_F(SidecarTest, ArchiveRequestsGoToTheChangeLog) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  auto lsn = client_->RequestArchive("People", "Sales", {"1", "2"}, "PeopleArchive");
  ASSERT_TRUE(lsn.ok()) << lsn.status().ToString();
  auto changes = client_->ReadChanges(*lsn, 1);
  ASSERT_TRUE(changes.ok());
  ASSERT_EQ(changes->records.size(), 1u);
  EXPECT_EQ(changes->records[0].kind, ChangeKind::kArchiveRequested);
  EXPECT_EQ(changes->records[0].target_table, "PeopleArchive");
  EXPECT_EQ(changes->records[0].ops.size(), 2u);
  EXPECT_EQ(client_->RequestArchive("People", "Sales", {"1"}, "people").status().code(),
            Code::kInvalidInput);
  EXPECT_EQ(client_->RequestArchive("Nope", "Sales", {"1"}, "Arch").status().code(), Code::kTableNotFound);
}

TEST_F(SidecarTest, DataSurvivesRestart) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  auto w = client_->Insert("People", Person("p", "r", 7));
  ASSERT_TRUE(w.ok());
  client_.reset();
  ASSERT_EQ(server_->Stop(), 0);
  ASSERT_TRUE(server_->Start()) << server_->Log();
  client_ = Connect();
  auto e = client_->Get("People", "p", "r");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->etag, w->etags[0]);
}

// WriteMany: independent EGTs in one request, each its own commit; fenced
// operations skip what a newer source version already wrote.
TEST_F(SidecarTest, WriteManyCommitsEachBatchOnItsOwn) {
  ASSERT_TRUE(client_->CreateTable("Idx").ok());
  ASSERT_TRUE(client_->Insert("Idx", Person("p", "taken", 1)).ok());
  auto derived = [](const std::string& rk, int64_t version) {
    return client::EntityBuilder("q", rk).Int64(kFenceProperty, version).Build();
  };
  std::vector<Batch> batches;
  batches.emplace_back("Idx");
  batches.back().FencedUpsert(derived("a", 5), 5).FencedUpsert(derived("b", 5), 5);
  batches.emplace_back("Idx");
  batches.back().Insert(Person("p", "taken", 2));   // fails: exists
  batches.emplace_back("Missing");
  batches.back().Insert(Person("p", "x", 1));       // fails: no table
  batches.emplace_back("Idx");
  batches.back().Insert(Person("p", "new", 3));
  std::optional<Result<std::vector<Result<WriteResult>>>> got;
  client_->SendWriteMany(batches, [&](Result<std::vector<Result<WriteResult>>> r) { got = std::move(r); });
  client_->Drain();
  ASSERT_TRUE(got.has_value());
  ASSERT_TRUE(got->ok()) << got->status().ToString();
  const auto& results = got->value();
  ASSERT_EQ(results.size(), 4u);
  ASSERT_TRUE(results[0].ok()) << results[0].status().ToString();
  EXPECT_TRUE(results[0]->skipped.empty());
  EXPECT_EQ(results[1].status().code(), Code::kEntityAlreadyExists);
  EXPECT_EQ(results[1].status().op_index(), 0);
  EXPECT_EQ(results[2].status().code(), Code::kTableNotFound);
  ASSERT_TRUE(results[3].ok());
  // Each its own commit (in order within a partition; these two are on
  // different partitions, which may run on different workers).
  EXPECT_NE(results[3]->lsn, results[0]->lsn);
  EXPECT_EQ(client_->Get("Idx", "p", "taken")->Find("Age")->as_int32(), 1) << "a failed batch changed something";
  EXPECT_TRUE(client_->Get("Idx", "p", "new").ok());

  // Older versions are skipped; a newer one is written.
  Batch again("Idx");
  again.FencedUpsert(derived("a", 4), 4).FencedUpsert(derived("b", 6), 6).FencedDelete("q", "zz", 9);
  auto w = client_->Execute(again);
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->skipped, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(FenceOf(*client_->Get("Idx", "q", "a")), 5u);
  EXPECT_EQ(FenceOf(*client_->Get("Idx", "q", "b")), 6u);

  // Every batch fenced out: nothing commits, LSN 0.
  const uint64_t before = client_->Ping()->last_lsn;
  Batch stale("Idx");
  stale.FencedUpsert(derived("a", 1), 1);
  auto s = client_->Execute(stale);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->lsn, 0u);
  EXPECT_EQ(client_->Ping()->last_lsn, before);
}

// Update, Merge and Delete of an entity read back are conditional on its
// ETag unless told otherwise (as with Azure's SDKs).
TEST_F(SidecarTest, WritesOfAnEntityReadBackDefaultToItsEtag) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  ASSERT_TRUE(client_->Insert("People", Person("p", "r", 1)).ok());
  auto read = client_->Get("People", "p", "r");
  ASSERT_TRUE(read.ok());
  // Someone else changes it meanwhile.
  ASSERT_TRUE(client_->InsertOrReplace("People", Person("p", "r", 2)).ok());
  Entity mine = *read;
  mine.Set("Age", Value::Int32(99));
  EXPECT_EQ(client_->Update("People", mine).status().code(), Code::kUpdateConditionNotSatisfied);
  EXPECT_EQ(client_->Merge("People", mine).status().code(), Code::kUpdateConditionNotSatisfied);
  EXPECT_EQ(client_->Delete("People", mine).status().code(), Code::kUpdateConditionNotSatisfied);
  EXPECT_EQ(client_->Get("People", "p", "r")->Find("Age")->as_int32(), 2) << "a stale write went through";
  // "*" overrides; an entity without an ETag is unconditional.
  EXPECT_TRUE(client_->Merge("People", mine, "*").ok());
  Entity fresh = Person("p", "r", 5);
  EXPECT_TRUE(fresh.etag.empty());
  EXPECT_TRUE(client_->Update("People", fresh).ok());
  auto current = client_->Get("People", "p", "r");
  ASSERT_TRUE(current.ok());
  EXPECT_TRUE(client_->Delete("People", *current).ok()) << "its own ETag matches";
  EXPECT_EQ(client_->Get("People", "p", "r").status().code(), Code::kResourceNotFound);
}

TEST_F(SidecarTest, ChangeIteratorWalksTheLogPageByPage) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  for (int i = 0; i < 25; i++) ASSERT_TRUE(client_->Insert("People", Person("p", "r" + std::to_string(i), i)).ok());
  const uint64_t last = client_->Ping()->last_lsn;
  client::ChangeIterator it = client_->Changes(1, 7);   // pages of 7
  ChangeRecord rec;
  uint64_t expect = 1;
  while (it.Next(&rec)) EXPECT_EQ(rec.lsn, expect++);
  EXPECT_TRUE(it.status().ok()) << it.status().ToString();
  EXPECT_EQ(expect, last + 1) << "every record once, in order";
  EXPECT_EQ(it.next_lsn(), last + 1);
  EXPECT_FALSE(it.gap());
  // From the end: nothing yet; after a write, exactly it.
  client::ChangeIterator tail = client_->Changes(last + 1);
  EXPECT_FALSE(tail.Next(&rec));
  ASSERT_TRUE(client_->Insert("People", Person("p", "late", 1)).ok());
  client::ChangeIterator again = client_->Changes(last + 1);
  ASSERT_TRUE(again.Next(&rec));
  EXPECT_EQ(rec.lsn, last + 1);
  EXPECT_FALSE(again.Next(&rec));
}

// No reply is the client's own code, not the server's 503.
TEST(ClientNoReply, NothingListeningIsNoReplyNotServiceUnavailable) {
  client::ClientOptions o;
  o.endpoint = "tcp://127.0.0.1:9";   // discard port: nothing answers ZeroMQ there
  o.timeout = std::chrono::milliseconds(150);
  o.max_attempts = 2;
  o.backoff_initial = std::chrono::milliseconds(1);
  auto c = client::Client::Connect(o);
  ASSERT_TRUE(c.ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto info = (*c)->Ping();
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), Code::kNoReply) << info.status().ToString();
  EXPECT_NE(info.status().message().find("no reply from tcp://127.0.0.1:9"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  EXPECT_NE(Code::kNoReply, Code::kUnavailable);
  EXPECT_EQ(ErrorCodeName(Code::kNoReply), "NoReply");
}

// ClientOptions::abandon: a process that is stopping does not wait out
// timeout x max_attempts on a sidecar that does not answer (session 35: a
// worker took ~11 s to stop with its sidecar frozen).
TEST(ClientNoReply, AbandonEndsPendingRequestsAtOnce) {
  std::atomic<bool> abandon{false};
  client::ClientOptions o;
  o.endpoint = "tcp://127.0.0.1:9";  // nothing answers
  o.timeout = std::chrono::milliseconds(10000);
  o.max_attempts = 5;
  o.abandon = &abandon;
  auto c = client::Client::Connect(o);
  ASSERT_TRUE(c.ok());
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    abandon = true;
  });
  const auto t0 = std::chrono::steady_clock::now();
  auto info = (*c)->Ping();
  const auto took = std::chrono::steady_clock::now() - t0;
  stopper.join();
  ASSERT_FALSE(info.ok());
  EXPECT_EQ(info.status().code(), Code::kNoReply) << info.status().ToString();
  EXPECT_NE(info.status().message().find("abandoned"), std::string::npos)
      << info.status().ToString();
  EXPECT_LT(took, std::chrono::seconds(2));
  // Requests made once abandoning fail at once too.
  EXPECT_EQ((*c)->Ping().status().code(), Code::kNoReply);
}

// Insert answers with the entity as stored (201), or nothing (204) on request.
TEST_F(SidecarTest, InsertReturnsTheStoredEntityUnlessAskedNotTo) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  auto w = client_->Insert("People", Person("p", "r", 7));
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  ASSERT_TRUE(w->entity.has_value());
  EXPECT_EQ(w->entity->partition_key, "p");
  EXPECT_EQ(w->entity->Find("Age")->as_int32(), 7);
  EXPECT_EQ(w->entity->etag, w->etags[0]);
  EXPECT_EQ(w->entity->timestamp, w->timestamp);
  auto stored = client_->Get("People", "p", "r");
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->etag, w->entity->etag);
  EXPECT_EQ(stored->timestamp, w->entity->timestamp);

  auto quiet = client_->Insert("People", Person("p", "q", 8), /*return_entity=*/false);
  ASSERT_TRUE(quiet.ok());
  EXPECT_FALSE(quiet->entity.has_value());
  EXPECT_EQ(quiet->etags.size(), 1u);
  // Other writes carry no entity.
  auto up = client_->InsertOrReplace("People", Person("p", "r", 9));
  ASSERT_TRUE(up.ok());
  EXPECT_FALSE(up->entity.has_value());
}

}  // namespace
}  // namespace sidetable
