// Queries read one page ahead (Client::SendQueryPages, SendQueryPageViews,
// QueryIterator), against a real sidecar: the next page is asked for before
// the current one is handed over, pages still arrive complete and in order,
// a stop or an error ends the query once, and nothing is left pending. Pages
// read in place (PageView) describe what the decoded pages hold.
#include <string>
#include <vector>

#include "e2e_fixture.h"
#include "fake_peer.h"
#include "protocol/msgpack.h"

namespace sidetable::testing {
namespace {

class QueryReadAheadTest : public SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    CreatePeople();
  }

  // The same query asked page by page, each once the previous one arrived:
  // the reference the read-ahead paths must reproduce.
  std::vector<std::string> PageByPage(const client::QueryOptions& q, size_t* pages) {
    std::vector<std::string> keys;
    std::optional<client::Continuation> next;
    *pages = 0;
    do {
      auto page = client_->QueryPage(q, next);
      EXPECT_TRUE(page.ok()) << page.status().ToString();
      if (!page.ok()) break;
      ++*pages;
      for (const Entity& e : page->entities) keys.push_back(e.partition_key + "/" + e.row_key);
      next = page->next;
    } while (next);
    return keys;
  }
};

TEST_F(QueryReadAheadTest, SendQueryPagesDeliversThePagesInOrderAndAsksAhead) {
  const client::QueryOptions q{.table = "People", .filter = "Age lt 10", .top = 7};
  size_t expected_pages = 0;
  const std::vector<std::string> expected = PageByPage(q, &expected_pages);
  ASSERT_EQ(expected.size(), 30u);
  ASSERT_GE(expected_pages, 5u);

  std::vector<std::string> keys;
  std::vector<size_t> pending_during_page;  // requests in flight while each page is handed over
  std::vector<bool> had_next;
  int done_calls = 0;
  Status final_status(Code::kInternal, "done not called");
  client_->SendQueryPages(
      q,
      [&](client::Page& page) {
        for (const Entity& e : page.entities) {
          EXPECT_LT(e.Find("Age")->as_int32(), 10);
          EXPECT_FALSE(e.etag.empty());
          keys.push_back(e.partition_key + "/" + e.row_key);
        }
        pending_during_page.push_back(client_->pending());
        had_next.push_back(page.next.has_value());
        return true;
      },
      [&](Status s) {
        done_calls++;
        final_status = std::move(s);
      });
  client_->Drain();
  EXPECT_EQ(done_calls, 1);
  EXPECT_TRUE(final_status.ok()) << final_status.ToString();
  EXPECT_EQ(keys, expected);
  ASSERT_EQ(pending_during_page.size(), expected_pages);
  for (size_t i = 0; i < pending_during_page.size(); i++) {
    // A page with a continuation is handed over with the next one already
    // asked for; the last one with nothing in flight.
    EXPECT_EQ(pending_during_page[i], had_next[i] ? 1u : 0u) << "page " << i;
  }
  EXPECT_FALSE(had_next.back());
  EXPECT_EQ(client_->pending(), 0u);
}

TEST_F(QueryReadAheadTest, SendQueryPagesStopsWhenOnPageSaysSo) {
  int pages = 0, done_calls = 0;
  Status final_status(Code::kInternal, "done not called");
  client_->SendQueryPages(
      {.table = "People", .top = 10},
      [&](client::Page& page) {
        EXPECT_EQ(page.entities.size(), 10u);
        return ++pages < 2;
      },
      [&](Status s) {
        done_calls++;
        final_status = std::move(s);
      });
  client_->Drain();  // the page read ahead of the stop arrives and is dropped
  EXPECT_EQ(pages, 2);
  EXPECT_EQ(done_calls, 1);
  EXPECT_TRUE(final_status.ok()) << final_status.ToString();
  EXPECT_EQ(client_->pending(), 0u);
  // The client goes on as before.
  auto e = client_->Get("People", "p0", "r100");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
}

TEST_F(QueryReadAheadTest, SendQueryPagesReportsTheFirstErrorOnce) {
  struct Case {
    client::QueryOptions q;
    Code code;
  };
  const std::vector<Case> cases = {
      {{.table = "People", .filter = "Age gt"}, Code::kInvalidInput},
      {{.table = "People", .top = 5000}, Code::kInvalidInput},
      {{.table = "Nobody"}, Code::kTableNotFound},
  };
  for (const Case& c : cases) {
    int pages = 0, done_calls = 0;
    Status final_status;
    client_->SendQueryPages(
        c.q,
        [&](client::Page&) {
          pages++;
          return true;
        },
        [&](Status s) {
          done_calls++;
          final_status = std::move(s);
        });
    client_->Drain();
    EXPECT_EQ(pages, 0) << c.q.filter;
    EXPECT_EQ(done_calls, 1) << c.q.filter;
    EXPECT_EQ(final_status.code(), c.code) << c.q.filter << ": " << final_status.ToString();
  }
  // A failed query wrote nothing: the table holds what it held.
  size_t pages = 0;
  EXPECT_EQ(PageByPage({.table = "People"}, &pages).size(), 150u);
}

TEST_F(QueryReadAheadTest, PageViewsDescribeWhatDecodedPagesHold) {
  for (bool selected : {false, true}) {
    client::QueryOptions q{.table = "People", .filter = "Age lt 10", .top = 7};
    if (selected) q.select = {"RowKey", "Age", "Nope"};
    // The reference: the same query decoded into Entity values.
    std::vector<Entity> expected;
    std::optional<client::Continuation> next;
    do {
      auto page = client_->QueryPage(q, next);
      ASSERT_TRUE(page.ok()) << page.status().ToString();
      expected.insert(expected.end(), page->entities.begin(), page->entities.end());
      next = page->next;
    } while (next);
    ASSERT_EQ(expected.size(), 30u);

    std::vector<client::PageView> kept;  // pages moved out of on_page stay valid
    std::vector<size_t> pending_during_page;
    Status final_status(Code::kInternal, "done not called");
    client_->SendQueryPageViews(
        q,
        [&](client::PageView& page) {
          pending_during_page.push_back(client_->pending());
          EXPECT_EQ(pending_during_page.back(), page.next() ? 1u : 0u);
          kept.push_back(std::move(page));
          return true;
        },
        [&](Status s) { final_status = std::move(s); });
    client_->Drain();
    ASSERT_TRUE(final_status.ok()) << final_status.ToString();
    ASSERT_GE(kept.size(), 5u);
    size_t i = 0;
    for (const client::PageView& page : kept) {
      EXPECT_EQ(page.plan(), "table-scan");
      for (const client::EntityView& e : page.entities()) {
        ASSERT_LT(i, expected.size());
        const Entity& want = expected[i++];
        EXPECT_EQ(e.partition_key(), want.partition_key);  // "" under $select
        EXPECT_EQ(e.row_key(), want.row_key);
        EXPECT_EQ(e.etag(), want.etag);
        EXPECT_EQ(e.timestamp(), want.timestamp);
        EXPECT_EQ(e.ToEntity().properties, want.properties);
        PropertyView age;
        ASSERT_TRUE(e.Find("Age", &age));
        EXPECT_EQ(age.type(), EdmType::kInt32);
        EXPECT_EQ(age.as_int32(), want.Find("Age")->as_int32());
        PropertyView name;
        EXPECT_EQ(e.Find("Name", &name), !selected);
        if (!selected) {
          EXPECT_EQ(name.bytes(), want.Find("Name")->bytes());
        }
        EXPECT_FALSE(e.Find("Nope", &name)) << "selected and absent: nil on the wire, absent here";
      }
    }
    EXPECT_EQ(i, expected.size());
    EXPECT_EQ(client_->pending(), 0u);
  }
}

TEST_F(QueryReadAheadTest, PageViewsStopAndFailLikePages) {
  int pages = 0, done_calls = 0;
  Status final_status(Code::kInternal, "done not called");
  client_->SendQueryPageViews(
      {.table = "People", .top = 10},
      [&](client::PageView& page) {
        EXPECT_EQ(page.entities().size(), 10u);
        return ++pages < 3;
      },
      [&](Status s) {
        done_calls++;
        final_status = std::move(s);
      });
  client_->Drain();
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(done_calls, 1);
  EXPECT_TRUE(final_status.ok()) << final_status.ToString();
  EXPECT_EQ(client_->pending(), 0u);

  for (const auto& [q, code] : std::vector<std::pair<client::QueryOptions, Code>>{
           {{.table = "People", .filter = "Age gt"}, Code::kInvalidInput},
           {{.table = "Nobody"}, Code::kTableNotFound}}) {
    pages = done_calls = 0;
    client_->SendQueryPageViews(
        q,
        [&](client::PageView&) {
          pages++;
          return true;
        },
        [&](Status s) {
          done_calls++;
          final_status = std::move(s);
        });
    client_->Drain();
    EXPECT_EQ(pages, 0);
    EXPECT_EQ(done_calls, 1);
    EXPECT_EQ(final_status.code(), code) << final_status.ToString();
  }
}

TEST_F(QueryReadAheadTest, QueryIteratorReadsOnePageAhead) {
  const client::QueryOptions q{.table = "People", .filter = "PartitionKey eq 'p1'", .top = 20};
  size_t expected_pages = 0;
  const std::vector<std::string> expected = PageByPage(q, &expected_pages);
  ASSERT_EQ(expected.size(), 50u);
  ASSERT_EQ(expected_pages, 3u);

  auto it = client_->Query(q);
  std::vector<std::string> keys;
  std::vector<size_t> pending_at;  // after each entity taken
  for (Entity e; it.Next(&e);) {
    keys.push_back(e.partition_key + "/" + e.row_key);
    pending_at.push_back(client_->pending());
  }
  EXPECT_TRUE(it.status().ok()) << it.status().ToString();
  EXPECT_EQ(keys, expected);
  EXPECT_EQ(it.pages(), 3u);
  // Pages 1 and 2 have continuations: while the caller works through them
  // the next page is already asked for. Page 3 is the last: nothing is.
  ASSERT_EQ(pending_at.size(), 50u);
  EXPECT_EQ(pending_at[0], 1u);
  EXPECT_EQ(pending_at[19], 1u);
  EXPECT_EQ(pending_at[20], 1u);
  EXPECT_EQ(pending_at[39], 1u);
  EXPECT_EQ(pending_at[40], 0u);
  EXPECT_EQ(pending_at[49], 0u);
  Entity extra;
  EXPECT_FALSE(it.Next(&extra));
  EXPECT_EQ(client_->pending(), 0u);
}

TEST_F(QueryReadAheadTest, QueryIteratorDroppedEarlyLeavesTheClientUsable) {
  {
    auto it = client_->Query({.table = "People", .top = 10});
    Entity e;
    ASSERT_TRUE(it.Next(&e));
    EXPECT_EQ(client_->pending(), 1u);  // page 2, asked for ahead
  }
  client_->Drain();  // its reply arrives after the iterator is gone
  EXPECT_EQ(client_->pending(), 0u);
  auto e = client_->Get("People", "p2", "r149");
  ASSERT_TRUE(e.ok()) << e.status().ToString();
  EXPECT_EQ(e->Find("Age")->as_int32(), 49);
}

TEST_F(QueryReadAheadTest, QueryIteratorReportsAnErrorAfterThePagesBeforeIt) {
  auto bad = client_->Query({.table = "People", .filter = "Age gt"});
  Entity e;
  EXPECT_FALSE(bad.Next(&e));
  EXPECT_EQ(bad.status().code(), Code::kInvalidInput);
  EXPECT_FALSE(bad.Next(&e));  // stays ended
  EXPECT_EQ(client_->pending(), 0u);
}

// A page whose "tailAt" points at bytes that read as a continuation the
// page does not have: the read-ahead follows the lie once (it cannot know
// before decoding), but the page is refused when decoded, and the query ends
// with that error instead of handing over pages of another query.
TEST(QueryReadAheadLyingPage, ATailAtThatMisleadsIsRefused) {
  // {"tailAt": X, "entities": [], "examined": 1, "plan": "<npk lie nrk x>"},
  // X pointing into the plan string, at bytes that read as npk/nrk.
  std::string fake_tail;
  msgpack::Writer t(&fake_tail);
  t.Str("npk");
  t.Str("lie");
  t.Str("nrk");
  t.Str("x");
  std::string body;
  msgpack::Writer w(&body);
  w.MapHeader(4);
  w.Str("tailAt");
  const size_t x_at = body.size() + 1;
  body += std::string("\xce\0\0\0\0", 5);
  w.Str("entities");
  w.ArrayHeader(0);
  w.Str("examined");
  w.Uint(1);
  w.Str("plan");
  w.Str(fake_tail);
  const size_t x = body.size() - fake_tail.size();
  for (size_t i = 0; i < 4; i++) body[x_at + i] = static_cast<char>(x >> (24 - 8 * i));
  {  // The premise: the peek trusts the offset, the decoder sees no continuation.
    std::optional<std::string> npk, nrk;
    ASSERT_TRUE(wire::PeekQueryContinuation(body, &npk, &nrk).ok());
    ASSERT_EQ(npk, "lie");
    wire::QueryReply full;
    ASSERT_TRUE(wire::DecodeQuery(body, &full).ok());
    ASSERT_FALSE(full.next_pk.has_value());
  }

  sidecar::fake::FakePeer peer([&](const sidecar::fake::Received& r, size_t index) {
    sidecar::fake::Answer a;
    if (index % 2 == 0) {
      a.reply = sidecar::fake::ReplyFrame(r, body);
    } else {
      a.when = sidecar::fake::Answer::When::kNever;  // the request sent ahead on the lie
    }
    return a;
  });
  client::ClientOptions o;
  o.endpoint = peer.endpoint();
  o.timeout = std::chrono::milliseconds(300);
  o.max_attempts = 1;
  auto c = client::Client::Connect(o);
  ASSERT_TRUE(c.ok());
  for (bool views : {false, true}) {
    int pages = 0, done_calls = 0;
    Status final_status;
    auto done = [&](Status s) {
      done_calls++;
      final_status = std::move(s);
    };
    if (views) {
      (*c)->SendQueryPageViews({.table = "T"}, [&](client::PageView&) { return ++pages > 0; }, done);
    } else {
      (*c)->SendQueryPages({.table = "T"}, [&](client::Page&) { return ++pages > 0; }, done);
    }
    (*c)->Drain();
    EXPECT_EQ(pages, 0) << views;
    EXPECT_EQ(done_calls, 1) << views;
    EXPECT_EQ(final_status.code(), Code::kInternal) << views << ": " << final_status.ToString();
    EXPECT_NE(final_status.message().find("tailAt"), std::string::npos) << final_status.message();
  }
}

}  // namespace
}  // namespace sidetable::testing
