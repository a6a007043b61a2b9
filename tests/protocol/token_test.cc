// Signed tokens (protocol/token.h): the text format and its one spelling,
// signatures and key rotation, validity windows, stored access policies,
// and every scope check. The fuzz target's corpus is replayed at the end.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "protocol/token.h"

namespace sidetable::token {
namespace {

using std::chrono::hours;
using std::chrono::seconds;

TimePoint At(const char* text) { return ParseTime(text).value(); }

std::string Key(char fill) { return std::string(32, fill); }

std::string KeyBytes(int first, int count) {
  std::string k;
  for (int i = 0; i < count; i++) k.push_back(static_cast<char>(first + i));
  return k;
}

TokenSpec Spec() {
  TokenSpec s;
  s.table = "orders";
  s.permissions = kAllPermissions;
  s.expiry = At("2030-01-01T00:00:00Z");
  s.tenant = "acme";
  s.identity = "acme-web";
  return s;
}

Token Issue(const TokenSpec& spec, const std::string& kid = "k1", const std::string& key = Key('a')) {
  Result<std::string> text = IssueToken(spec, kid, key);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  Result<Token> t = ParseToken(text.ok() ? *text : "");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return t.ok() ? *t : Token{};
}

Keyring Ring(const std::string& kid = "k1", const std::string& key = Key('a')) {
  Keyring r;
  EXPECT_TRUE(r.Add(kid, key).ok());
  return r;
}

const TimePoint kNow = At("2026-12-01T12:00:00Z");

// The same fields give the same bytes in client/python/tests/test_tokens.py
// (and through sidetable-cli): change both or neither.
constexpr const char* kVector1 =
    "v=1&kid=k1&tn=Orders&spk=acme%7C2026&srk=&epk=acme%7C2026&erk=z%20%C3%A9%26%3D%25&sp=raud"
    "&st=2026-01-01T00:00:00Z&se=2026-12-31T23:59:59Z&tenant=acme&caller=acme%20web%2F1"
    "&sig=7TVzIGTRcAcESgRW-j2Hqi-IZXmE7o-fl6CfEHqInmw";
constexpr const char* kVector2 =
    "v=1&kid=k2&tn=orders&tenant=acme&caller=svc&si=readers&sig=DuBizrHzaSUcgRGgCoZ70qqkvxBw8HGgMx4pQqy1jLE";

TEST(TokenFormat, CrossLanguageVectors) {
  TokenSpec s;
  s.table = "Orders";
  s.start_pk = "acme|2026";
  s.start_rk = "";  // an empty RowKey is a real bound, not an absent one
  s.end_pk = "acme|2026";
  s.end_rk = "z \xc3\xa9&=%";
  s.permissions = ParsePermissions("dura").value();
  s.start = At("2026-01-01T00:00:00Z");
  s.expiry = At("2026-12-31T23:59:59Z");
  s.tenant = "acme";
  s.identity = "acme web/1";
  Result<std::string> one = IssueToken(s, "k1", KeyBytes(0, 32));
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(*one, kVector1);

  TokenSpec p;
  p.table = "orders";
  p.tenant = "acme";
  p.identity = "svc";
  p.policy_id = "readers";
  Result<std::string> two = IssueToken(p, "k2", KeyBytes(32, 64));  // a key longer than 32 bytes
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  EXPECT_EQ(*two, kVector2);

  Result<Token> parsed = ParseToken(kVector1);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->key_id, "k1");
  EXPECT_EQ(parsed->spec.start_rk, std::optional<std::string>(""));
  EXPECT_EQ(*parsed->spec.end_rk, "z \xc3\xa9&=%");
  EXPECT_EQ(parsed->spec.identity, "acme web/1");
  EXPECT_EQ(PermissionString(*parsed->spec.permissions), "raud");
  EXPECT_TRUE(Ring("k1", KeyBytes(0, 32)).Verify(*parsed, At("2026-06-01T00:00:00Z")).ok());
}

TEST(TokenFormat, ParsedTokenRoundTripsToItsText) {
  TokenSpec s = Spec();
  s.table = "acme";
  s.table_is_prefix = true;
  s.end_pk = "acme|~";
  Result<std::string> text = IssueToken(s, "key.2024-01", Key('b'));
  ASSERT_TRUE(text.ok());
  Result<Token> t = ParseToken(*text);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(t->spec.table_is_prefix);
  EXPECT_FALSE(t->spec.start_pk.has_value());
  EXPECT_EQ(CanonicalString(t->key_id, t->spec) + "&sig=" + text->substr(text->size() - 43), *text);
}

TEST(TokenFormat, EverySecondSpellingIsRefused) {
  const std::string ok = IssueToken(Spec(), "k1", Key('a')).value();
  ASSERT_TRUE(ParseToken(ok).ok());
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string t = ok;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  const std::string sig = ok.substr(ok.find("&sig="));
  const std::vector<std::string> bad = {
      "",
      "&",
      ok + "&",
      "v=2" + ok.substr(3),
      replaced("kid=k1&", ""),                                  // no key id
      replaced("tn=orders", "tn=orders&tn=orders"),             // repeated
      replaced("v=1&kid=k1", "kid=k1&v=1"),                     // out of order
      replaced("tn=orders", "tn=or%64ers"),                     // %64 is 'd': a second spelling
      replaced("caller=acme-web", "caller=acme%2fweb"),         // lower-case hex
      replaced("caller=acme-web", "caller=acme/web"),           // unencoded
      replaced("caller=acme-web", "caller=acme%2"),             // cut escape
      replaced("sp=raudmc", "sp=cmduar"),                       // letters out of order
      replaced("sp=raudmc", "sp=rr"),
      replaced("sp=raudmc", "sp=rx"),
      replaced("sp=raudmc", "sp="),
      replaced("se=2030-01-01T00:00:00Z", "se=2030-02-30T00:00:00Z"),
      replaced("se=2030-01-01T00:00:00Z", "se=2030-01-01T00:00:00.5Z"),
      replaced("se=2030-01-01T00:00:00Z", "se=2030-01-01 00:00:00Z"),
      replaced("tenant=acme", "tenant="),
      replaced("tenant=acme", "tenant=ac%20me"),                // not a metrics label
      replaced("caller=acme-web", "caller="),
      replaced("caller=acme-web", "caller=a%0Ab"),              // a newline in a log line
      replaced("caller=acme-web", "caller=%FF"),                // not UTF-8
      replaced("tn=orders", "tn=1orders"),
      replaced("tn=orders", "tn=orders&tp=ord"),
      replaced("tn=orders", "tp=ord%7C"),
      replaced("tn=orders&", ""),
      replaced("tn=orders", "tn=orders&srk=a"),                 // srk without spk
      replaced("tn=orders", "tn=orders&erk=a"),
      replaced("tn=orders", "tn=orders&spk=b&epk=a"),           // empty range
      replaced("tn=orders", "tn=orders&spk=a&srk=z&epk=a&erk=y"),
      replaced("se=2030-01-01T00:00:00Z", "st=2030-01-01T00:00:00Z&se=2030-01-01T00:00:00Z"),
      replaced("sp=raudmc&", ""),                               // no permissions and no policy
      replaced("&se=2030-01-01T00:00:00Z", ""),                 // no expiry and no policy
      replaced("tenant=acme", "tenant=acme&who=x"),             // unknown key
      replaced(sig, ""),
      replaced(sig, sig.substr(0, sig.size() - 1)),
      replaced(sig, sig + "A"),
      replaced(sig, sig + "&tenant=x"),
      replaced(sig, "&sig=" + std::string(43, '!')),
      std::string(kMaxTokenLength + 1, 'a'),
  };
  for (size_t i = 0; i < bad.size(); i++) {
    Result<Token> t = ParseToken(bad[i]);
    ASSERT_FALSE(t.ok()) << i << ": " << bad[i];
    EXPECT_EQ(t.status().code(), Code::kInvalidInput) << bad[i];
  }
  // A policy belongs to one table: not to a prefix.
  TokenSpec p = Spec();
  p.table = "ord";
  p.table_is_prefix = true;
  p.policy_id = "p1";
  EXPECT_EQ(IssueToken(p, "k1", Key('a')).status().code(), Code::kInvalidInput);
}

// A refusal names the field, never its text: it is logged by the sidecar,
// and what was sent may be a secret by mistake. Before, a signing key file
// given as the token (base64: one pair, no '&') had 40 of its 44 characters
// echoed, and logged.
TEST(TokenFormat, MalformedTextIsNotEchoed) {
  const std::string key = "VF8cCn3rQG7JCMSQRJyaEv9AzCxe4Wmv7iTMxr12JVU=";
  for (const std::string& bad :
       {key, "v=1&" + key, key.substr(0, 40), "Bearer " + key.substr(0, 40),
        "v=1&kid=k1&" + key.substr(0, 40) + "=x"}) {
    Result<Token> t = ParseToken(bad);
    ASSERT_FALSE(t.ok()) << bad;
    EXPECT_EQ(t.status().code(), Code::kInvalidInput);
    EXPECT_EQ(t.status().message().find(key.substr(0, 8)), std::string::npos)
        << t.status().message();
    EXPECT_NE(t.status().message().find("field "), std::string::npos) << t.status().message();
  }
}

TEST(TokenFormat, TimesHaveOneSpelling) {
  EXPECT_EQ(FormatTime(At("2028-02-29T23:59:59Z")), "2028-02-29T23:59:59Z");
  EXPECT_EQ(At("1970-01-01T00:00:01Z").time_since_epoch().count(), 1);
  EXPECT_FALSE(ParseTime("2027-02-29T00:00:00Z").ok());
  EXPECT_FALSE(ParseTime("2027-01-01T24:00:00Z").ok());
  EXPECT_FALSE(ParseTime("2027-01-01T00:00:00+00:00").ok());
  EXPECT_FALSE(ParseTime("1969-12-31T23:59:59Z").ok());
}

TEST(TokenFormat, IssueRefusesAShortKeyAndAnInvalidSpec) {
  EXPECT_EQ(IssueToken(Spec(), "k1", std::string(31, 'a')).status().code(), Code::kInvalidInput);
  EXPECT_EQ(IssueToken(Spec(), "k 1", Key('a')).status().code(), Code::kInvalidInput);
  TokenSpec s = Spec();
  s.tenant = "";
  EXPECT_EQ(IssueToken(s, "k1", Key('a')).status().code(), Code::kInvalidInput);
}

TEST(TokenVerify, ExpiryIsExclusiveAndStartInclusive) {
  TokenSpec s = Spec();
  s.start = At("2026-12-01T00:00:00Z");
  s.expiry = At("2026-12-02T00:00:00Z");
  Token t = Issue(s);
  Keyring ring = Ring();
  EXPECT_TRUE(ring.Verify(t, *s.start).ok());
  EXPECT_TRUE(ring.Verify(t, *s.expiry - seconds(1)).ok());

  Status expired = ring.Verify(t, *s.expiry);
  EXPECT_EQ(expired.code(), Code::kAuthenticationFailed);
  EXPECT_NE(expired.message().find("expired at 2026-12-02T00:00:00Z"), std::string::npos) << expired.message();

  Status early = ring.Verify(t, *s.start - seconds(1));
  EXPECT_EQ(early.code(), Code::kAuthenticationFailed);
  EXPECT_NE(early.message().find("not valid before"), std::string::npos) << early.message();
}

TEST(TokenVerify, WrongKeyAndUnknownKeyIdAreRefusedApart) {
  Token t = Issue(Spec(), "k1", Key('a'));
  Status wrong = Ring("k1", Key('b')).Verify(t, kNow);
  EXPECT_EQ(wrong.code(), Code::kAuthenticationFailed);
  EXPECT_NE(wrong.message().find("signature does not match"), std::string::npos) << wrong.message();
  Status unknown = Ring("k9", Key('a')).Verify(t, kNow);
  EXPECT_EQ(unknown.code(), Code::kAuthenticationFailed);
  EXPECT_NE(unknown.message().find("unknown key id 'k1'"), std::string::npos) << unknown.message();
  EXPECT_EQ(Keyring().Verify(t, kNow).code(), Code::kAuthenticationFailed);
}

TEST(TokenVerify, RotationAcceptsBothKeysUntilTheOldIsRemoved) {
  Token old_token = Issue(Spec(), "k1", Key('a'));
  Token new_token = Issue(Spec(), "k2", Key('b'));
  Keyring ring;
  ASSERT_TRUE(ring.Add("k1", Key('a')).ok());
  EXPECT_TRUE(ring.Verify(old_token, kNow).ok());
  EXPECT_EQ(ring.Verify(new_token, kNow).code(), Code::kAuthenticationFailed);

  ASSERT_TRUE(ring.Add("k2", Key('b')).ok());
  EXPECT_TRUE(ring.Verify(old_token, kNow).ok());
  EXPECT_TRUE(ring.Verify(new_token, kNow).ok());
  EXPECT_EQ(ring.Add("k3", Key('c')).code(), Code::kInvalidInput);  // two at most

  EXPECT_TRUE(ring.Remove("k1"));
  EXPECT_FALSE(ring.Remove("k1"));
  EXPECT_EQ(ring.Verify(old_token, kNow).code(), Code::kAuthenticationFailed);
  EXPECT_TRUE(ring.Verify(new_token, kNow).ok());
}

TEST(TokenVerify, KeyringRefusesBadKeys) {
  Keyring ring;
  EXPECT_EQ(ring.Add("k1", std::string(31, 'a')).code(), Code::kInvalidInput);
  EXPECT_EQ(ring.Add("", Key('a')).code(), Code::kInvalidInput);
  EXPECT_EQ(ring.Add("k/1", Key('a')).code(), Code::kInvalidInput);
  ASSERT_TRUE(ring.Add("k1", Key('a')).ok());
  EXPECT_EQ(ring.Add("k1", Key('b')).code(), Code::kInvalidInput);
  EXPECT_EQ(ring.size(), 1u);
}

TEST(TokenVerify, TamperedSignatureIsRefused) {
  std::string text = *IssueToken(Spec(), "k1", Key('a'));
  size_t at = text.find("&sig=") + 5;
  text[at] = text[at] == 'A' ? 'B' : 'A';  // the first character: any value stays canonical
  Result<Token> t = ParseToken(text);
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(Ring().Verify(*t, kNow).code(), Code::kAuthenticationFailed);
}

TEST(TokenVerify, TamperedFieldsAreRefused) {
  TokenSpec s = Spec();
  s.permissions = ParsePermissions("r").value();
  s.start_pk = "acme";
  s.end_pk = "acme";
  std::string text = *IssueToken(s, "k1", Key('a'));
  Keyring ring = Ring();
  ASSERT_TRUE(ring.Verify(ParseToken(text).value(), kNow).ok());
  const std::vector<std::pair<std::string, std::string>> edits = {
      {"sp=r", "sp=raud"},          {"epk=acme", "epk=acmf"},     {"&spk=acme", ""},
      {"tenant=acme", "tenant=bob"}, {"caller=acme-web", "caller=root"}, {"tn=orders", "tn=Orders"},
      {"se=2030", "se=2031"},        {"kid=k1", "kid=k2"},
  };
  for (const auto& [from, to] : edits) {
    std::string t = text;
    t.replace(t.find(from), from.size(), to);
    Result<Token> parsed = ParseToken(t);
    ASSERT_TRUE(parsed.ok()) << t << ": " << parsed.status().ToString();
    Keyring both = Ring();
    ASSERT_TRUE(both.Add("k2", Key('a')).ok());  // even under a known id with the same key
    EXPECT_EQ(both.Verify(*parsed, kNow).code(), Code::kAuthenticationFailed) << from << " -> " << to;
  }
}

// Every permission letter against every operation, on the token's table and
// on another.
TEST(TokenScope, PermissionByOperationMatrix) {
  const Permission all[] = {Permission::kRead,   Permission::kAdd,   Permission::kUpdate,
                            Permission::kDelete, Permission::kAdmin, Permission::kChangeLog};
  for (const char* letters : {"r", "a", "u", "d", "m", "c", "raud", "rc", "raudmc"}) {
    TokenSpec s = Spec();
    s.permissions = ParsePermissions(letters).value();
    Token t = Issue(s);
    for (Permission p : all) {
      bool held = std::string(letters).find(PermissionString(static_cast<Permissions>(p))) != std::string::npos;
      Status point = CheckPoint(t, p, "orders", "pk", "rk");
      Status table = CheckTable(t, p, "Orders");
      if (held) {
        EXPECT_TRUE(point.ok()) << letters << " " << point.ToString();
        EXPECT_TRUE(table.ok()) << letters << " " << table.ToString();
      } else {
        EXPECT_EQ(point.code(), Code::kAuthorizationPermissionMismatch) << letters;
        EXPECT_EQ(table.code(), Code::kAuthorizationPermissionMismatch) << letters;
      }
      // Another table is out of scope whatever the permission.
      EXPECT_EQ(CheckPoint(t, p, "invoices", "pk", "rk").code(), Code::kAuthorizationFailure) << letters;
    }
    Result<KeyRange> q = ConfineQuery(t, "orders");
    EXPECT_EQ(q.ok(), std::string(letters).find('r') != std::string::npos) << letters;
    EXPECT_TRUE(MaySeeTable(t, "orders"));
    EXPECT_FALSE(MaySeeTable(t, "invoices"));
  }
}

TEST(TokenScope, KeyRangeEdgesAreInclusive) {
  TokenSpec s = Spec();
  s.start_pk = "b";
  s.start_rk = "m";
  s.end_pk = "d";
  s.end_rk = "p";
  Token t = Issue(s);
  auto allowed = [&](const char* pk, const char* rk) {
    return CheckPoint(t, Permission::kRead, "orders", pk, rk).ok();
  };
  EXPECT_TRUE(allowed("b", "m"));   // the lower edge itself
  EXPECT_FALSE(allowed("b", "l~"));
  EXPECT_FALSE(allowed("a", "z"));
  EXPECT_TRUE(allowed("c", ""));    // a partition between the edges: every RowKey
  EXPECT_TRUE(allowed("c", "\xef\xbf\xbf"));
  EXPECT_TRUE(allowed("d", "p"));   // the upper edge itself
  EXPECT_FALSE(allowed("d", "p "));
  EXPECT_FALSE(allowed("d\x01", ""));
  EXPECT_EQ(CheckPoint(t, Permission::kRead, "orders", "e", "").code(), Code::kAuthorizationFailure);

  // One partition, every row: spk == epk without RowKeys.
  TokenSpec one = Spec();
  one.start_pk = "acme";
  one.end_pk = "acme";
  Token p = Issue(one);
  EXPECT_TRUE(CheckPoint(p, Permission::kAdd, "orders", "acme", "").ok());
  EXPECT_TRUE(CheckPoint(p, Permission::kAdd, "orders", "acme", "\xf4\x8f\xbf\xbf").ok());
  EXPECT_FALSE(CheckPoint(p, Permission::kAdd, "orders", "acme ", "").ok());
  EXPECT_FALSE(CheckPoint(p, Permission::kAdd, "orders", "acm", "zzz").ok());

  // Only a lower bound.
  TokenSpec from = Spec();
  from.start_pk = "m";
  Token f = Issue(from);
  EXPECT_TRUE(CheckPoint(f, Permission::kRead, "orders", "m", "").ok());
  EXPECT_TRUE(CheckPoint(f, Permission::kRead, "orders", "zzzz", "").ok());
  EXPECT_FALSE(CheckPoint(f, Permission::kRead, "orders", "l", "zzzz").ok());
}

// Key ranges compare in storage order, Azure's ordinal UTF-16 order, the
// order a query's confinement scans in: U+E000..U+FFFF sort after the
// supplementary planes, the reverse of UTF-8 byte order. Before session 38
// the point checks compared bytes: a token of 'a' .. 'a'+U+10FFFF could
// write 'a'+U+FFFF, which its own queries (confined in storage order) showed
// outside its range, and one of 'a' .. 'a'+U+FFFF was refused a Get of a
// row its queries returned.
TEST(TokenScope, KeyRangeComparesInStorageOrder) {
  const std::string bmp_last = "a\xef\xbf\xbf";        // a U+FFFF
  const std::string private_use = "a\xee\x80\x80";     // a U+E000
  const std::string emoji = "a\xf0\x9f\x98\x80";       // a U+1F600 (D83D DE00)
  const std::string plane_last = "a\xf4\x8f\xbf\xbf";  // a U+10FFFF (DBFF DFFF)
  auto allowed = [](const Token& t, const std::string& pk) {
    return CheckPoint(t, Permission::kUpdate, "orders", pk, "r").ok();
  };
  TokenSpec to_bmp_last = Spec();
  to_bmp_last.start_pk = "a";
  to_bmp_last.end_pk = bmp_last;
  const Token wide = Issue(to_bmp_last);
  EXPECT_TRUE(allowed(wide, emoji));
  EXPECT_TRUE(allowed(wide, plane_last));
  EXPECT_TRUE(allowed(wide, plane_last + "z"));
  EXPECT_TRUE(allowed(wide, private_use));
  EXPECT_FALSE(allowed(wide, bmp_last + "z"));

  TokenSpec to_plane_last = Spec();
  to_plane_last.start_pk = "a";
  to_plane_last.end_pk = plane_last;
  const Token narrow = Issue(to_plane_last);
  EXPECT_TRUE(allowed(narrow, emoji));
  EXPECT_TRUE(allowed(narrow, plane_last));
  EXPECT_FALSE(allowed(narrow, private_use));
  EXPECT_FALSE(allowed(narrow, bmp_last));

  // RowKey bounds too.
  TokenSpec rows = Spec();
  rows.start_pk = rows.end_pk = "p";
  rows.start_rk = "a";
  rows.end_rk = plane_last;
  const Token r = Issue(rows);
  EXPECT_TRUE(CheckPoint(r, Permission::kRead, "orders", "p", emoji).ok());
  EXPECT_FALSE(CheckPoint(r, Permission::kRead, "orders", "p", bmp_last).ok());
}

TEST(TokenScope, PrefixScopes) {
  TokenSpec s = Spec();
  s.table = "acme";
  s.table_is_prefix = true;
  Token t = Issue(s);
  EXPECT_TRUE(CheckTable(t, Permission::kRead, "acmeOrders").ok());
  EXPECT_TRUE(CheckTable(t, Permission::kRead, "ACMEinvoices").ok());  // table names fold case
  EXPECT_TRUE(CheckTable(t, Permission::kRead, "acme").ok());
  EXPECT_EQ(CheckTable(t, Permission::kRead, "acm").code(), Code::kAuthorizationFailure);
  EXPECT_EQ(CheckTable(t, Permission::kRead, "bobacme").code(), Code::kAuthorizationFailure);
  EXPECT_TRUE(MaySeeTable(t, "AcmeX"));
  EXPECT_FALSE(MaySeeTable(t, "other"));

  // An exact name is not a prefix.
  Token exact = Issue(Spec());
  EXPECT_EQ(CheckTable(exact, Permission::kRead, "ordersArchive").code(), Code::kAuthorizationFailure);
  EXPECT_TRUE(CheckTable(exact, Permission::kRead, "ORDERS").ok());

  // The empty prefix: every table (an operator's token).
  TokenSpec any = Spec();
  any.table = "";
  any.table_is_prefix = true;
  Token a = Issue(any);
  EXPECT_TRUE(MaySeeTable(a, "anything"));
}

TEST(TokenScope, QueryIsConfinedToTheTokenRange) {
  TokenSpec s = Spec();
  s.permissions = ParsePermissions("r").value();
  s.start_pk = "tenant7|";
  s.end_pk = "tenant7|\x7f";
  s.end_rk = "2026";
  Token t = Issue(s);
  Result<KeyRange> r = ConfineQuery(t, "orders");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->lower && r->upper);
  EXPECT_EQ(r->lower->pk, "tenant7|");
  EXPECT_FALSE(r->lower->rk.has_value());
  EXPECT_EQ(r->upper->pk, "tenant7|\x7f");
  EXPECT_EQ(r->upper->rk, std::optional<std::string>("2026"));
  // What a filter like "PartitionKey ge 'tenant6'" would reach is cut by it.
  EXPECT_FALSE(r->Contains("tenant6|x", "a"));
  EXPECT_TRUE(r->Contains("tenant7|x", "a"));
  EXPECT_FALSE(r->Contains("tenant8|", ""));
  EXPECT_FALSE(r->Contains("tenant7|\x7f", "2027"));

  EXPECT_EQ(ConfineQuery(t, "invoices").status().code(), Code::kAuthorizationFailure);
  TokenSpec w = Spec();
  w.permissions = ParsePermissions("aud").value();
  EXPECT_EQ(ConfineQuery(Issue(w), "orders").status().code(), Code::kAuthorizationPermissionMismatch);
  Result<KeyRange> whole = ConfineQuery(Issue(Spec()), "orders");
  ASSERT_TRUE(whole.ok());
  EXPECT_TRUE(whole->unbounded());
}

TokenSpec PolicySpec(const std::string& id) {
  TokenSpec s = Spec();
  s.permissions.reset();
  s.expiry.reset();
  s.policy_id = id;
  return s;
}

StoredPolicy Policy(const std::string& id, const char* letters, const char* expiry) {
  StoredPolicy p;
  p.id = id;
  p.permissions = ParsePermissions(letters).value();
  p.expiry = At(expiry);
  return p;
}

TEST(TokenPolicy, PolicyFillsTheTokenAndChangesIt) {
  Token t = Issue(PolicySpec("writers"));
  Keyring ring = Ring();
  // Unresolved, a policy token is refused and holds nothing.
  EXPECT_EQ(ring.Verify(t, kNow).code(), Code::kAuthenticationFailed);
  EXPECT_EQ(CheckPoint(t, Permission::kRead, "orders", "a", "b").code(), Code::kAuthorizationPermissionMismatch);

  std::vector<StoredPolicy> policies = {Policy("readers", "r", "2030-01-01T00:00:00Z"),
                                        Policy("writers", "raud", "2027-01-01T00:00:00Z")};
  ASSERT_TRUE(ValidatePolicies(policies).ok());
  Result<Token> r = ResolvePolicy(t, policies);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(ring.Verify(*r, kNow).ok());
  EXPECT_TRUE(CheckPoint(*r, Permission::kDelete, "orders", "a", "b").ok());
  EXPECT_EQ(ring.Verify(*r, At("2027-01-01T00:00:00Z")).code(), Code::kAuthenticationFailed);

  // The operator narrows the policy: every token under it loses delete at once.
  policies[1].permissions = ParsePermissions("r").value();
  r = ResolvePolicy(t, policies);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(CheckPoint(*r, Permission::kDelete, "orders", "a", "b").code(), Code::kAuthorizationPermissionMismatch);
  // ... or moves its expiry into the past.
  policies[1].expiry = kNow - hours(1);
  r = ResolvePolicy(t, policies);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ring.Verify(*r, kNow).code(), Code::kAuthenticationFailed);
}

TEST(TokenPolicy, RemovedPolicyRevokesItsTokens) {
  Token t = Issue(PolicySpec("writers"));
  std::vector<StoredPolicy> policies = {Policy("writers", "raud", "2030-01-01T00:00:00Z")};
  ASSERT_TRUE(ResolvePolicy(t, policies).ok());
  policies.clear();
  Status s = ResolvePolicy(t, policies).status();
  EXPECT_EQ(s.code(), Code::kAuthenticationFailed);
  EXPECT_NE(s.message().find("'writers' does not exist"), std::string::npos) << s.message();
  // Renamed: the same.
  policies = {Policy("writers2", "raud", "2030-01-01T00:00:00Z")};
  EXPECT_EQ(ResolvePolicy(t, policies).status().code(), Code::kAuthenticationFailed);
}

TEST(TokenPolicy, EachFieldFromTheTokenOrThePolicyNeverBoth) {
  // The token gives the expiry, the policy the permissions.
  TokenSpec s = PolicySpec("p");
  s.expiry = At("2030-01-01T00:00:00Z");
  Token t = Issue(s);
  StoredPolicy p;
  p.id = "p";
  p.permissions = ParsePermissions("r").value();
  Result<Token> r = ResolvePolicy(t, std::vector<StoredPolicy>{p});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(EffectivePermissions(*r), static_cast<Permissions>(Permission::kRead));
  EXPECT_EQ(EffectiveExpiry(*r), s.expiry);
  EXPECT_TRUE(Ring().Verify(*r, kNow).ok());

  // Both give an expiry: the service's 400.
  p.expiry = At("2029-01-01T00:00:00Z");
  EXPECT_EQ(ResolvePolicy(t, std::vector<StoredPolicy>{p}).status().code(), Code::kInvalidInput);
  // Neither gives permissions.
  StoredPolicy bare;
  bare.id = "p";
  EXPECT_EQ(ResolvePolicy(t, std::vector<StoredPolicy>{bare}).status().code(), Code::kAuthenticationFailed);
  // A token without si ignores the table's policies.
  Token plain = Issue(Spec());
  Result<Token> same = ResolvePolicy(plain, std::vector<StoredPolicy>{p});
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->policy.has_value());
}

TEST(TokenPolicy, AtMostFiveUniquePoliciesPerTable) {
  std::vector<StoredPolicy> ps;
  for (int i = 0; i < 5; i++) ps.push_back(Policy("p" + std::to_string(i), "r", "2030-01-01T00:00:00Z"));
  EXPECT_TRUE(ValidatePolicies(ps).ok());
  ps.push_back(Policy("p5", "r", "2030-01-01T00:00:00Z"));
  EXPECT_EQ(ValidatePolicies(ps).code(), Code::kInvalidInput);
  ps.resize(2);
  ps[1].id = "p0";
  EXPECT_EQ(ValidatePolicies(ps).code(), Code::kInvalidInput);
  ps[1].id = std::string(65, 'x');
  EXPECT_EQ(ValidatePolicies(ps).code(), Code::kInvalidInput);
  ps[1].id = "p1";
  ps[1].start = At("2031-01-01T00:00:00Z");
  EXPECT_EQ(ValidatePolicies(ps).code(), Code::kInvalidInput);
}

// ---- delegation: CheckDelegation (the IssueToken operation) -----------------

// An app tier's token: m and raud on tables "acme*", partitions b..d (from
// RowKey m of b to RowKey p of d), tenant acme, until 2030.
Token Issuer() {
  TokenSpec s = Spec();
  s.table = "acme";
  s.table_is_prefix = true;
  s.start_pk = "b";
  s.start_rk = "m";
  s.end_pk = "d";
  s.end_rk = "p";
  s.permissions = ParsePermissions("raudm").value();
  s.identity = "app-tier";
  return Issue(s);
}

// Exactly the issuer's scope, minus m, for another identity.
TokenSpec Wanted() {
  TokenSpec s = Spec();
  s.table = "acmeOrders";
  s.start_pk = "b";
  s.start_rk = "m";
  s.end_pk = "d";
  s.end_rk = "p";
  s.permissions = ParsePermissions("r").value();
  s.identity = "acme user 7";
  return s;
}

// A policy with either field left out (nullptr).
StoredPolicy Pol(const std::string& id, const char* letters, const char* expiry) {
  StoredPolicy p;
  p.id = id;
  if (letters) p.permissions = ParsePermissions(letters).value();
  if (expiry) p.expiry = At(expiry);
  return p;
}

Code Delegate(const Token& issuer, const TokenSpec& wanted, std::vector<StoredPolicy> policies = {}) {
  return CheckDelegation(issuer, wanted, policies).code();
}

TEST(TokenDelegation, WithinScopeIsAllowed) {
  EXPECT_EQ(Delegate(Issuer(), Wanted()), Code::kOk);
  TokenSpec w = Wanted();
  w.permissions = ParsePermissions("raudm").value();  // all of the issuer's, m included
  w.expiry = At("2030-01-01T00:00:00Z");               // the issuer's own expiry
  w.start = At("2029-01-01T00:00:00Z");                // a start is optional
  EXPECT_EQ(Delegate(Issuer(), w), Code::kOk);
}

TEST(TokenDelegation, NeedsTheAdminPermission) {
  TokenSpec s = Issuer().spec;
  s.permissions = ParsePermissions("raud").value();
  EXPECT_EQ(Delegate(Issue(s), Wanted()), Code::kAuthorizationPermissionMismatch);
}

TEST(TokenDelegation, TableMustBeInsideTheIssuersTableScope) {
  TokenSpec w = Wanted();
  w.table = "ACMEorders";  // case-insensitive, as table names are
  EXPECT_EQ(Delegate(Issuer(), w), Code::kOk);
  w.table = "globexOrders";
  EXPECT_EQ(Delegate(Issuer(), w), Code::kAuthorizationFailure);
  // A prefix inside the issuer's prefix, and not a shorter one.
  w.table = "AcmeOr";
  w.table_is_prefix = true;
  EXPECT_EQ(Delegate(Issuer(), w), Code::kOk);
  w.table = "acm";
  EXPECT_EQ(Delegate(Issuer(), w), Code::kAuthorizationFailure);
  w.table = "";
  EXPECT_EQ(Delegate(Issuer(), w), Code::kAuthorizationFailure);
  // An exact-table issuer: that table only, never a prefix (even its name).
  TokenSpec exact = Issuer().spec;
  exact.table = "acmeOrders";
  exact.table_is_prefix = false;
  const Token e = Issue(exact);
  w.table = "acmeOrders";
  EXPECT_EQ(Delegate(e, w), Code::kAuthorizationFailure);
  w.table_is_prefix = false;
  EXPECT_EQ(Delegate(e, w), Code::kOk);
  w.table = "acmeOrders2";
  EXPECT_EQ(Delegate(e, w), Code::kAuthorizationFailure);
}

TEST(TokenDelegation, KeyRangeMustBeInsideTheIssuersRange) {
  const Token issuer = Issuer();  // (b, m) .. (d, p)
  auto with = [](std::optional<std::string> spk, std::optional<std::string> srk, std::optional<std::string> epk,
                 std::optional<std::string> erk) {
    TokenSpec w = Wanted();
    w.start_pk = std::move(spk);
    w.start_rk = std::move(srk);
    w.end_pk = std::move(epk);
    w.end_rk = std::move(erk);
    return w;
  };
  EXPECT_EQ(Delegate(issuer, with("c", std::nullopt, "c", std::nullopt)), Code::kOk);  // partition c
  EXPECT_EQ(Delegate(issuer, with("b", "n", "d", "o")), Code::kOk);
  // Lower side: before (b, m), or the whole of partition b, or open.
  EXPECT_EQ(Delegate(issuer, with("b", "l", "c", std::nullopt)), Code::kAuthorizationFailure);
  EXPECT_EQ(Delegate(issuer, with("b", std::nullopt, "c", std::nullopt)), Code::kAuthorizationFailure);
  EXPECT_EQ(Delegate(issuer, with("a", "z", "c", std::nullopt)), Code::kAuthorizationFailure);
  EXPECT_EQ(Delegate(issuer, with(std::nullopt, std::nullopt, "c", std::nullopt)), Code::kAuthorizationFailure);
  // Upper side: after (d, p), or the whole of partition d, or open.
  EXPECT_EQ(Delegate(issuer, with("c", std::nullopt, "d", "q")), Code::kAuthorizationFailure);
  EXPECT_EQ(Delegate(issuer, with("c", std::nullopt, "d", std::nullopt)), Code::kAuthorizationFailure);
  EXPECT_EQ(Delegate(issuer, with("c", std::nullopt, "e", "")), Code::kAuthorizationFailure);
  EXPECT_EQ(Delegate(issuer, with("c", std::nullopt, std::nullopt, std::nullopt)), Code::kAuthorizationFailure);
  // An issuer open on a side allows any bound there, and open.
  TokenSpec open = Issuer().spec;
  open.start_pk = open.start_rk = open.end_pk = open.end_rk = std::nullopt;
  EXPECT_EQ(Delegate(Issue(open), with(std::nullopt, std::nullopt, std::nullopt, std::nullopt)), Code::kOk);
  EXPECT_EQ(Delegate(Issue(open), with("a", std::nullopt, "z", std::nullopt)), Code::kOk);
  // Partition bounds without RowKeys inside partition bounds.
  TokenSpec part = Issuer().spec;
  part.start_rk = part.end_rk = std::nullopt;  // all of b .. all of d
  EXPECT_EQ(Delegate(Issue(part), with("b", std::nullopt, "d", std::nullopt)), Code::kOk);
  EXPECT_EQ(Delegate(Issue(part), with("b", "", "d", "zzz")), Code::kOk);
}

// The same storage order as the point checks (TokenScope.KeyRangeComparesInStorageOrder):
// in bytes 'a'+U+FFFF lies inside 'a' .. 'a'+U+10FFFF, in storage order it
// does not, and before session 38 such a token could be issued.
TEST(TokenDelegation, KeyRangeComparesInStorageOrder) {
  TokenSpec s = Issuer().spec;
  s.start_pk = "a";
  s.start_rk = std::nullopt;
  s.end_pk = "a\xf4\x8f\xbf\xbf";  // a U+10FFFF
  s.end_rk = std::nullopt;
  const Token issuer = Issue(s);
  TokenSpec w = Wanted();
  w.start_rk = w.end_rk = std::nullopt;
  w.start_pk = w.end_pk = "a\xef\xbf\xbf";  // a U+FFFF: after a U+10FFFF
  EXPECT_EQ(Delegate(issuer, w), Code::kAuthorizationFailure);
  w.start_pk = w.end_pk = "a\xf0\x9f\x98\x80";  // a U+1F600: inside
  EXPECT_EQ(Delegate(issuer, w), Code::kOk);
  w.start_pk = "a";
  w.start_rk = "\xef\xbf\xbf";
  w.end_pk = "a\xf4\x8f\xbf\xbf";
  w.end_rk = "\xf0\x9f\x98\x80";  // RowKey bounds compare the same way
  EXPECT_EQ(Delegate(issuer, w), Code::kOk);
}

TEST(TokenDelegation, PermissionsMustBeASubset) {
  TokenSpec w = Wanted();
  w.permissions = ParsePermissions("raud").value();
  EXPECT_EQ(Delegate(Issuer(), w), Code::kOk);
  w.permissions = ParsePermissions("rc").value();  // c: the issuer lacks it
  EXPECT_EQ(Delegate(Issuer(), w), Code::kAuthorizationPermissionMismatch);
  // The issuer's effective permissions: from its stored policy.
  TokenSpec via = Issuer().spec;
  via.table = "acmeOrders";
  via.table_is_prefix = false;
  via.permissions = std::nullopt;
  via.policy_id = "admins";
  Result<Token> issuer = ResolvePolicy(Issue(via), std::vector<StoredPolicy>{Pol("admins", "rm", nullptr)});
  ASSERT_TRUE(issuer.ok()) << issuer.status().ToString();
  w.permissions = ParsePermissions("r").value();
  EXPECT_EQ(Delegate(*issuer, w), Code::kOk);
  w.permissions = ParsePermissions("ra").value();
  EXPECT_EQ(Delegate(*issuer, w), Code::kAuthorizationPermissionMismatch);
}

TEST(TokenDelegation, ExpiryIsRequiredAndNotAfterTheIssuers) {
  TokenSpec w = Wanted();
  w.expiry = At("2030-01-01T00:00:01Z");
  EXPECT_EQ(Delegate(Issuer(), w), Code::kAuthorizationFailure);
  w.expiry = std::nullopt;
  EXPECT_EQ(Delegate(Issuer(), w), Code::kInvalidInput);
  // The issuer's effective expiry: from its stored policy.
  TokenSpec via = Issuer().spec;
  via.table = "acmeOrders";
  via.table_is_prefix = false;
  via.expiry = std::nullopt;
  via.policy_id = "admins";
  Result<Token> issuer =
      ResolvePolicy(Issue(via), std::vector<StoredPolicy>{Pol("admins", nullptr, "2027-01-01T00:00:00Z")});
  ASSERT_TRUE(issuer.ok()) << issuer.status().ToString();
  w.expiry = At("2027-01-01T00:00:00Z");
  EXPECT_EQ(Delegate(*issuer, w), Code::kOk);
  w.expiry = At("2027-01-01T00:00:01Z");
  EXPECT_EQ(Delegate(*issuer, w), Code::kAuthorizationFailure);
}

TEST(TokenDelegation, TenantMustBeTheIssuers) {
  TokenSpec w = Wanted();
  w.tenant = "globex";
  EXPECT_EQ(Delegate(Issuer(), w), Code::kAuthorizationFailure);
  w.tenant = "ACME";  // labels are exact
  EXPECT_EQ(Delegate(Issuer(), w), Code::kAuthorizationFailure);
  // An issuer without a tenant (not issuable today, but the rule says so).
  Token any = Issuer();
  any.spec.tenant.clear();
  EXPECT_EQ(Delegate(any, w), Code::kOk);
}

TEST(TokenDelegation, StoredPolicyMustExistOnTheTable) {
  TokenSpec w = Wanted();
  w.permissions = std::nullopt;
  w.policy_id = "readers";
  EXPECT_EQ(Delegate(Issuer(), w), Code::kInvalidInput);
  EXPECT_EQ(Delegate(Issuer(), w, {Pol("writers", "r", nullptr)}), Code::kInvalidInput);
  EXPECT_EQ(Delegate(Issuer(), w, {Pol("readers", "r", nullptr)}), Code::kOk);
  // The policy's permissions count: wider than the issuer's is refused.
  EXPECT_EQ(Delegate(Issuer(), w, {Pol("readers", "rc", nullptr)}), Code::kAuthorizationPermissionMismatch);
  // A policy giving the expiry too: the token's own se and the policy's clash.
  EXPECT_EQ(Delegate(Issuer(), w, {Pol("readers", "r", "2029-01-01T00:00:00Z")}), Code::kInvalidInput);
}

TEST(TokenKeys, DecodeKeyAcceptsBase64Only) {
  const std::string raw = KeyBytes(0, 32);
  EXPECT_EQ(DecodeKey("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n").value(), raw);
  EXPECT_EQ(DecodeKey("  AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8").value(), raw);
  EXPECT_EQ(DecodeKey("-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_-_").value().size(), 36u);
  EXPECT_EQ(DecodeKey("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHg==").status().code(), Code::kInvalidInput);  // 31
  EXPECT_FALSE(DecodeKey("not base64 at all!").ok());
  EXPECT_FALSE(DecodeKey("").ok());
}

TEST(TokenKeys, KeyFileMustBePrivate) {
  std::string path = ::testing::TempDir() + "/token_test.key";
  {
    std::ofstream out(path);
    out << "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\n";
  }
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  Result<std::string> open = LoadKeyFile(path);
  ASSERT_FALSE(open.ok());
  EXPECT_NE(open.status().message().find("chmod 600"), std::string::npos);
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  Result<std::string> key = LoadKeyFile(path);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  EXPECT_EQ(*key, KeyBytes(0, 32));
  std::filesystem::remove(path);
  EXPECT_FALSE(LoadKeyFile(path).ok());
}

}  // namespace
}  // namespace sidetable::token

// The token fuzz target's entry point on its seed corpus and mutations of it
// (the libFuzzer run is scripts/fuzz.sh).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace sidetable::token {
namespace {

TEST(TokenFuzzReplay, SeedsAndMutationsNeverCrash) {
  std::vector<std::string> seeds;
  for (const auto& f : std::filesystem::directory_iterator(ST_TOKEN_CORPUS_DIR)) {
    std::ifstream in(f.path(), std::ios::binary);
    seeds.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  ASSERT_GE(seeds.size(), 4u);
  std::mt19937 rng(15);
  size_t accepted = 0;
  for (const auto& seed : seeds) {
    ASSERT_TRUE(ParseToken(seed).ok()) << "seed must be valid: " << seed;
    for (int i = 0; i < 2000; i++) {
      std::string f = seed;
      for (int k = 0; k < 1 + static_cast<int>(rng() % 3); k++) f[rng() % f.size()] = static_cast<char>(rng());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(f.data()), f.size());
      accepted += ParseToken(f).ok();
    }
  }
  EXPECT_GT(accepted, 0u);  // some mutations stay valid (a changed letter in a value)
}

}  // namespace
}  // namespace sidetable::token
