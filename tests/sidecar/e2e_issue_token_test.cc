// The IssueToken operation (op 15) on a real sidecar: a token holding m has
// the sidecar sign a token within its own scope (docs/security.md, "Issuing
// tokens"), and nothing outside it.
#include "testing/child_process.h"
#include "testing/text.h"
#include "tests/sidecar/e2e_auth_fixture.h"

namespace sidetable::testing {
namespace {

class IssueTokenTest : public AuthSidecarTest {
 protected:
  void SetUp() override {
    AuthSidecarTest::SetUp();
    if (HasFatalFailure()) return;
    for (const char* t : {"acmeOrders", "acmeInvoices", "globexOrders"}) ASSERT_TRUE(admin_->CreateTable(t).ok());
    for (const char* pk : {"acme|1", "acme|2", "globex|1"}) {
      ASSERT_TRUE(admin_->Insert("acmeOrders", Row(pk, "r")).ok());
    }
    ASSERT_TRUE(admin_->Insert("acmeInvoices", Row("acme|1", "r")).ok());
    // The application tier: m and raud on the tables "acme*", partitions
    // acme|..acme|~, tenant acme, for two hours.
    tok::TokenSpec app = Spec("acme", true, "raudm", "app-tier");
    app.start_pk = "acme|";
    app.end_pk = "acme|~";
    app.expiry = Now() + std::chrono::hours(2);
    app_expiry_ = *app.expiry;
    app_ = Connect(Issue(app));
    ASSERT_NE(app_, nullptr);
  }

  // A user's token inside the app tier's scope: acmeOrders, partition
  // acme|1, read and add, for 30 minutes.
  static tok::TokenSpec UserSpec(const std::string& identity = "acme user 1") {
    tok::TokenSpec s = Spec("acmeOrders", false, "ra", identity);
    s.start_pk = "acme|1";
    s.end_pk = "acme|1";
    s.expiry = Now() + std::chrono::minutes(30);
    return s;
  }

  std::unique_ptr<client::Client> app_;
  tok::TimePoint app_expiry_;
};

TEST_F(IssueTokenTest, AnInScopeTokenWorksForExactlyItsScope) {
  auto issued = app_->IssueToken(UserSpec());
  ASSERT_TRUE(issued.ok()) << issued.status().ToString();
  auto parsed = tok::ParseToken(*issued);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->key_id, "k1");  // the first key in auth.keys signs
  EXPECT_EQ(parsed->spec.identity, "acme user 1");
  EXPECT_EQ(parsed->spec.table, "acmeOrders");

  auto user = Connect(*issued);
  ASSERT_NE(user, nullptr);
  EXPECT_TRUE(user->Get("acmeOrders", "acme|1", "r").ok());
  EXPECT_TRUE(user->Insert("acmeOrders", Row("acme|1", "new")).ok());
  EXPECT_EQ(user->Get("acmeOrders", "acme|2", "r").status().code(), Code::kAuthorizationFailure);
  EXPECT_EQ(user->Insert("acmeOrders", Row("acme|2", "new")).status().code(), Code::kAuthorizationFailure);
  EXPECT_EQ(user->Delete("acmeOrders", "acme|1", "r", "*").status().code(), Code::kAuthorizationPermissionMismatch);
  EXPECT_EQ(user->Get("acmeInvoices", "acme|1", "r").status().code(), Code::kAuthorizationFailure);
  auto page = user->QueryPage({"acmeOrders", "", {}, {}, {}});
  ASSERT_TRUE(page.ok()) << page.status().ToString();
  ASSERT_EQ(page->entities.size(), 2u);
  for (const auto& e : page->entities) EXPECT_EQ(e.partition_key, "acme|1");
  // The change log records the issued token's identity for its write.
  auto changes = admin_->ReadChanges(1, 1000);
  ASSERT_TRUE(changes.ok()) << changes.status().ToString();
  bool seen = false;
  for (const auto& rec : changes->records) seen |= rec.caller == "acme user 1";
  EXPECT_TRUE(seen);

  // A prefix inside the app tier's prefix, and a stored policy of the table.
  tok::TokenSpec prefix = UserSpec("acme user 2");
  prefix.table = "acmeInv";
  prefix.table_is_prefix = true;
  auto by_prefix = app_->IssueToken(prefix);
  ASSERT_TRUE(by_prefix.ok()) << by_prefix.status().ToString();
  EXPECT_TRUE(Connect(*by_prefix)->Get("acmeInvoices", "acme|1", "r").ok());
  tok::StoredPolicy readers;
  readers.id = "readers";
  readers.permissions = *tok::ParsePermissions("r");
  ASSERT_TRUE(admin_->SetTablePolicies("acmeOrders", {readers}).ok());
  tok::TokenSpec under = UserSpec("acme user 3");
  under.permissions.reset();
  under.policy_id = "readers";
  auto by_policy = app_->IssueToken(under);
  ASSERT_TRUE(by_policy.ok()) << by_policy.status().ToString();
  auto reader = Connect(*by_policy);
  EXPECT_TRUE(reader->Get("acmeOrders", "acme|1", "r").ok());
  EXPECT_EQ(reader->Insert("acmeOrders", Row("acme|1", "x")).status().code(),
            Code::kAuthorizationPermissionMismatch);

  // Logged at info with both identities, never the token text.
  const std::string log = server_->Log();
  EXPECT_NE(log.find("token issued by 'app-tier' for 'acme user 1'"), std::string::npos) << log;
  EXPECT_EQ(log.find(issued->substr(issued->find("&sig=") + 5)), std::string::npos);
  EXPECT_EQ(log.find(*issued), std::string::npos);
}

TEST_F(IssueTokenTest, OutOfScopeRequestsAreRefusedAndNothingIsIssued) {
  struct Case {
    const char* what;
    tok::TokenSpec spec;
    Code code;
  };
  std::vector<Case> cases;
  auto add = [&](const char* what, Code code, auto change) {
    tok::TokenSpec s = UserSpec(std::string("refused ") + what);
    change(s);
    cases.push_back({what, s, code});
  };
  add("other table", Code::kAuthorizationFailure, [](tok::TokenSpec& s) { s.table = "globexOrders"; });
  add("wider prefix", Code::kAuthorizationFailure, [](tok::TokenSpec& s) {
    s.table = "ac";
    s.table_is_prefix = true;
  });
  add("range past the end", Code::kAuthorizationFailure, [](tok::TokenSpec& s) { s.end_pk = "globex|1"; });
  add("range open below", Code::kAuthorizationFailure, [](tok::TokenSpec& s) { s.start_pk.reset(); });
  add("permission c", Code::kAuthorizationPermissionMismatch,
      [](tok::TokenSpec& s) { s.permissions = *tok::ParsePermissions("rc"); });
  add("later expiry", Code::kAuthorizationFailure,
      [this](tok::TokenSpec& s) { s.expiry = app_expiry_ + std::chrono::seconds(1); });
  add("no expiry", Code::kInvalidInput, [](tok::TokenSpec& s) { s.expiry.reset(); });
  add("other tenant", Code::kAuthorizationFailure, [](tok::TokenSpec& s) { s.tenant = "globex"; });
  add("missing policy", Code::kInvalidInput, [](tok::TokenSpec& s) {
    s.permissions.reset();
    s.policy_id = "nope";
  });
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    auto r = app_->IssueToken(c.spec);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status().ToString();
  }
  // A token without m, even for a scope inside its own.
  tok::TokenSpec no_admin = Spec("acme", true, "raud", "no-admin");
  auto plain = Connect(Issue(no_admin));
  auto r = plain->IssueToken(UserSpec("refused without m"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kAuthorizationPermissionMismatch) << r.status().ToString();
  // None was issued: no issuance logged for any refused identity.
  EXPECT_EQ(server_->Log().find("for 'refused"), std::string::npos) << server_->Log();
  // And a valid one after them still is.
  EXPECT_TRUE(app_->IssueToken(UserSpec()).ok());
}

// The app tier holds m (to issue) on a key range of tables it shares with
// other tenants (acmeOrders holds globex|1). Deleting a table, or replacing
// the policies every token on it resolves against, reaches every row: it
// needs a token without a key range. Before, the app tier deleted
// acmeOrders with globex's row in it.
TEST_F(IssueTokenTest, AKeyRangeWithMCannotDeleteTheTableOrChangeItsPolicies) {
  tok::StoredPolicy readers;
  readers.id = "readers";
  readers.permissions = *tok::ParsePermissions("r");
  ASSERT_TRUE(admin_->SetTablePolicies("acmeOrders", {readers}).ok());

  Status del = app_->DeleteTable("acmeOrders");
  EXPECT_EQ(del.code(), Code::kAuthorizationFailure) << del.ToString();
  EXPECT_NE(del.message().find("without a key range"), std::string::npos) << del.ToString();
  tok::StoredPolicy widened = readers;
  widened.permissions = *tok::ParsePermissions("raudm");
  EXPECT_EQ(app_->SetTablePolicies("acmeOrders", {widened}).code(), Code::kAuthorizationFailure);
  EXPECT_EQ(app_->SetTablePolicies("acmeOrders", {}).code(), Code::kAuthorizationFailure);
  // A token it issues with m on its range is refused the same way.
  tok::TokenSpec with_m = UserSpec("acme admin");
  with_m.permissions = *tok::ParsePermissions("rm");
  auto issued = app_->IssueToken(with_m);
  ASSERT_TRUE(issued.ok()) << issued.status().ToString();
  EXPECT_EQ(Connect(*issued)->DeleteTable("acmeOrders").code(), Code::kAuthorizationFailure);

  // Nothing changed: the other tenant's row, the table, the policy.
  EXPECT_TRUE(admin_->Get("acmeOrders", "globex|1", "r").ok());
  auto stored = admin_->GetTablePolicies("acmeOrders");
  ASSERT_TRUE(stored.ok()) << stored.status().ToString();
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].permissions, readers.permissions);
  // What a range with m is for still works: reading the policies, and
  // issuing under them.
  EXPECT_TRUE(app_->GetTablePolicies("acmeOrders").ok());
  tok::TokenSpec under = UserSpec("acme user 4");
  under.permissions.reset();
  under.policy_id = "readers";
  EXPECT_TRUE(app_->IssueToken(under).ok());
  // A token without a key range, m on the table, may do both.
  auto whole = Connect(Issue(Spec("acmeOrders", false, "m", "table-admin")));
  EXPECT_TRUE(whole->SetTablePolicies("acmeOrders", {}).ok());
  EXPECT_TRUE(whole->DeleteTable("acmeOrders").ok());
}

// `sidetable-cli token issue --via-sidecar`, under the CLI's --token.
TEST_F(IssueTokenTest, TheCliIssuesThroughTheSidecar) {
  tok::TokenSpec app = Spec("acme", true, "raudm", "cli-app");
  app.start_pk = "acme|";
  app.end_pk = "acme|~";
  const std::string app_token = Issue(app);
  static int n = 0;
  auto cli = [&](std::vector<std::string> tail, std::string* output) {
    std::vector<std::string> args = {SIDETABLE_CLI, "--endpoint", server_->endpoint(), "--token", app_token,
                                     "--retries", "0", "token", "issue"};
    args.insert(args.end(), tail.begin(), tail.end());
    const std::string log = dir_.Sub("cli" + std::to_string(n++) + ".log");
    pid_t pid = SpawnLogged(args, log, /*append=*/false);
    const int code = SignalAndWait(&pid, 0, 30);
    *output = ReadWholeFile(log);
    return code;
  };
  const std::vector<std::string> user = {"--via-sidecar", "--table", "acmeOrders", "--pk-start", "acme|1",
                                         "--pk-end", "acme|1", "--perms", "r", "--expiry", "30m",
                                         "--tenant", "acme", "--identity", "cli-user"};
  std::string out;
  ASSERT_EQ(cli(user, &out), 0) << out;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  auto parsed = tok::ParseToken(out);
  ASSERT_TRUE(parsed.ok()) << out;
  EXPECT_EQ(parsed->spec.identity, "cli-user");
  EXPECT_EQ(parsed->key_id, "k1");
  EXPECT_TRUE(Connect(out)->Get("acmeOrders", "acme|1", "r").ok());
  // Out of scope: refused by the sidecar, nothing printed but the error.
  std::vector<std::string> other = user;
  other[2] = "globexOrders";
  EXPECT_EQ(cli(other, &out), 1);
  EXPECT_TRUE(Contains(out, "AuthorizationFailure")) << out;
  EXPECT_FALSE(Contains(out, "sig=")) << out;
  // --via-sidecar signs with the sidecar's key: a key file is a usage error.
  std::vector<std::string> keyed = user;
  keyed.insert(keyed.end(), {"--key-file", dir_.Sub("k1.key"), "--key-id", "k1"});
  EXPECT_EQ(cli(keyed, &out), 2) << out;
}

TEST(IssueTokenAuthOff, IsRefusedWithInvalidInput) {
  TempDir dir;
  SidecarProcess server(SIDETABLE_BIN, dir.Sub("db"), {"--durability", "os"});
  ASSERT_TRUE(server.Start()) << server.Log();
  client::ClientOptions o;
  o.endpoint = server.endpoint();
  o.max_attempts = 1;
  auto c = client::Client::Connect(o);
  ASSERT_TRUE(c.ok());
  tok::TokenSpec s;
  s.table = "orders";
  s.permissions = *tok::ParsePermissions("r");
  s.expiry = std::chrono::time_point_cast<std::chrono::seconds>(std::chrono::system_clock::now()) +
             std::chrono::hours(1);
  s.tenant = "acme";
  s.identity = "someone";
  auto r = (*c)->IssueToken(s);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), Code::kInvalidInput) << r.status().ToString();
  EXPECT_NE(r.status().message().find("auth.mode: tokens"), std::string::npos) << r.status().ToString();
  c->reset();
  EXPECT_EQ(server.Stop(), 0) << server.Log();
}

}  // namespace
}  // namespace sidetable::testing
