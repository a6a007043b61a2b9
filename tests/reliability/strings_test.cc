// Untrusted strings (issue 12, item 4): every string that enters the server
// is validated before anything records it, and every message the server
// sends back is valid UTF-8 and bounded, whatever the client sent. Each bad
// request must get its error code and change nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "client/client.h"
#include "engine/limits.h"
#include "engine/utf8.h"
#include "protocol/wire.h"
#include "testing/shell.h"
#include "tests/sidecar/e2e_fixture.h"

namespace sidetable {
namespace {

using testing::SidecarTest;

struct Reply {
  uint16_t status = 0;
  Code code = Code::kOk;
  std::string message;
  std::string body;
};

class StringsTest : public SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    ASSERT_TRUE(client_->CreateTable("Orders").ok());
    raw_ = Connect(/*max_attempts=*/1);
  }

  // One request as the client library would never send it, and its reply.
  Reply Send(wire::Request r) {
    r.id = ++id_;
    std::string frame;
    wire::EncodeRequest(r, &frame);
    auto bytes = raw_->RawRoundTrip(frame);
    EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
    Reply out;
    if (!bytes.ok()) return out;
    wire::Header h;
    std::string_view body;
    Status s = wire::DecodeReply(*bytes, &h, &body);
    out.status = h.status;
    out.code = s.code();
    out.message = s.message();
    out.body.assign(body);
    EXPECT_EQ(h.request_id, r.id);
    return out;
  }

  static wire::Request Write(const std::string& caller, const std::string& rk) {
    wire::Request r;
    r.op = wire::Op::kWrite;
    r.table = "Orders";
    r.caller = caller;
    r.ops.push_back({OpKind::kInsert, client::EntityBuilder("p", rk).Int32("n", 1).Build(), ""});
    return r;
  }

  static wire::Request TableOp(wire::Op op, const std::string& table, const std::string& caller) {
    wire::Request r;
    r.op = op;
    r.table = table;
    r.caller = caller;
    return r;
  }

  // The sidecar's state that a refused request must leave alone.
  struct State {
    uint64_t last_lsn = 0;
    std::vector<std::string> tables;
    bool operator==(const State&) const = default;
  };
  State Snapshot() {
    State s;
    s.last_lsn = client_->Ping()->last_lsn;
    s.tables = client_->ListTables().value();
    return s;
  }

  std::unique_ptr<client::Client> raw_;
  uint64_t id_ = 1000;
};

const std::string kBadUtf8 = std::string("bad\xff\xfe", 5);

TEST_F(StringsTest, ACallerThatIsNotValidUtf8IsRefusedEverywhereAndChangesNothing) {
  const State before = Snapshot();
  for (const std::string& caller : {kBadUtf8, std::string("over\xc0\xaflong", 9), std::string("\xed\xa0\x80", 3)}) {
    for (wire::Request r : {Write(caller, "r1"), TableOp(wire::Op::kCreateTable, "Fresh", caller),
                            TableOp(wire::Op::kDeleteTable, "Orders", caller)}) {
      Reply rep = Send(r);
      EXPECT_EQ(rep.status, 400) << wire::OpName(r.op);
      EXPECT_EQ(rep.code, Code::kInvalidInput) << wire::OpName(r.op);
      EXPECT_NE(rep.message.find("caller"), std::string::npos) << rep.message;
    }
    wire::Request archive = TableOp(wire::Op::kRequestArchive, "Orders", caller);
    archive.pk = "p";
    archive.rks = {"r1"};
    archive.target = "OrdersArchive";
    EXPECT_EQ(Send(archive).code, Code::kInvalidInput);
  }
  EXPECT_EQ(Snapshot(), before) << "a refused request changed the change log or the tables";
  EXPECT_EQ(client_->Get("Orders", "p", "r1").status().code(), Code::kResourceNotFound);
}

TEST_F(StringsTest, ACallerOverOneKibOrWithControlCharactersIsRefused) {
  const State before = Snapshot();
  const std::string huge(4 << 20, 'c');  // a 4 MiB caller, inside the 6 MiB frame cap
  for (const std::string& caller : {huge, std::string(Limits::kMaxCallerBytes + 1, 'c'), std::string("tab\there"),
                                    std::string("nul\0x", 5), std::string("c1\xc2\x85", 4)}) {
    Reply create = Send(TableOp(wire::Op::kCreateTable, "Fresh", caller));
    EXPECT_EQ(create.code, Code::kInvalidInput) << caller.size();
    EXPECT_LE(create.message.size(), wire::kMaxErrorMessageBytes);
    EXPECT_EQ(Send(Write(caller, "r2")).code, Code::kInvalidInput) << caller.size();
  }
  EXPECT_EQ(Snapshot(), before);
}

TEST_F(StringsTest, TheLongestLegalCallerIsRecordedExactly) {
  // 1 KiB of three-byte characters: at the limit, not over it.
  std::string caller;
  while (caller.size() + 3 <= Limits::kMaxCallerBytes) caller += "\xe2\x82\xac";  // U+20AC
  Reply rep = Send(Write(caller, "r3"));
  ASSERT_EQ(rep.code, Code::kOk) << rep.message;
  auto changes = client_->ReadChanges(1);
  ASSERT_TRUE(changes.ok());
  ASSERT_FALSE(changes->records.empty());
  EXPECT_EQ(changes->records.back().caller, caller);
}

// Error messages quote names, keys, filters and property names; whatever the
// bytes were, the reply must decode as UTF-8 (the Python client and every
// MessagePack library reject a str that is not) and stay bounded.
TEST_F(StringsTest, EveryErrorMessageIsValidUtf8AndBounded) {
  const State before = Snapshot();
  std::vector<std::pair<std::string, wire::Request>> bad;
  bad.emplace_back("table name", TableOp(wire::Op::kCreateTable, "ab" + kBadUtf8, "ok"));
  bad.emplace_back("1 MiB table name", TableOp(wire::Op::kCreateTable, std::string(1 << 20, '\xff'), "ok"));
  bad.emplace_back("delete unknown", TableOp(wire::Op::kDeleteTable, "zz" + kBadUtf8, "ok"));
  {
    wire::Request r = TableOp(wire::Op::kGet, "Orders", "ok");
    r.pk = kBadUtf8;
    r.rk = kBadUtf8;
    bad.emplace_back("get keys", r);
  }
  {
    wire::Request r = TableOp(wire::Op::kGet, "Orders" + kBadUtf8, "ok");
    r.pk = "p";
    r.rk = "r";
    bad.emplace_back("get table", r);
  }
  for (const std::string& filter : {"Name eq '" + kBadUtf8 + "'", kBadUtf8 + " eq 1", "Name eq " + kBadUtf8,
                                    std::string(100000, '\xfe')}) {
    wire::Request r = TableOp(wire::Op::kQuery, "Orders", "ok");
    r.filter = filter;
    bad.emplace_back("filter", r);
  }
  {
    wire::Request r = TableOp(wire::Op::kQuery, "Orders", "ok");
    r.select = {kBadUtf8};
    bad.emplace_back("select", r);
  }
  {
    wire::Request r = Write("ok", "r4");
    r.ops[0].entity.Set(kBadUtf8, Value::String("v"));
    bad.emplace_back("property name", r);
  }
  {
    wire::Request r = Write("ok", kBadUtf8);
    bad.emplace_back("row key", r);
  }
  {
    wire::Request r = Write("ok", "r5");
    r.ops[0].entity.Set("Name", Value::String(kBadUtf8));
    bad.emplace_back("string value", r);
  }
  {
    wire::Request r = Write("ok", "r6");
    r.ops[0].kind = OpKind::kUpdate;
    r.ops[0].if_match = kBadUtf8;
    bad.emplace_back("if-match", r);
  }
  {
    wire::Request r = TableOp(wire::Op::kListTables, "", "ok");
    r.filter = "TableName eq '" + kBadUtf8 + "'";
    bad.emplace_back("list filter", r);
  }
  for (auto& [what, request] : bad) {
    Reply rep = Send(request);
    EXPECT_GE(rep.status, 400) << what;
    EXPECT_TRUE(IsValidUtf8(rep.message)) << what << ": " << rep.message;
    EXPECT_LE(rep.message.size(), wire::kMaxErrorMessageBytes) << what;
  }
  EXPECT_EQ(Snapshot(), before);
}

// The other readers of the change log see only what the engine let in: the
// Python client (whose MessagePack decoder refuses invalid UTF-8) reads the
// whole log after every bad write above was tried.
TEST_F(StringsTest, ThePythonClientReadsTheChangeLogAfterBadCallersWereTried) {
  for (int i = 0; i < 3; i++) Send(Write(kBadUtf8 + std::to_string(i), "r" + std::to_string(i)));
  ASSERT_TRUE(client_->Insert("Orders", Person("p", "good", 1)).ok());
  const std::string cmd = "PYTHONPATH=" SIDETABLE_SOURCE_DIR "/client/python /usr/bin/python3 -c '"
                          "import sidetable,sys\n"
                          "c = sidetable.Client(sys.argv[1], timeout=5.0, retries=1)\n"
                          "b = c.read_changes(1)\n"
                          "print(len(b.records))\n"
                          "' " + server_->endpoint() + " 2>&1";
  int rc = -1;
  const std::string out = testing::RunShell(cmd, &rc);
  EXPECT_EQ(rc, 0) << out;
  // The table's creation and the one good insert.
  EXPECT_EQ(out, "2\n") << out;
}

}  // namespace
}  // namespace sidetable
