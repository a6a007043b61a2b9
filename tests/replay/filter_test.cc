// ReplayFilter (record and RowKey criteria, fingerprint) and
// ParseTimeArgument (ISO 8601, Unix seconds and milliseconds).
#include "tools/replay/filter.h"

#include <gtest/gtest.h>

#include <set>

namespace sidetable::replay {
namespace {

ChangeRecord Record(uint64_t lsn, ChangeKind kind = ChangeKind::kEntities) {
  ChangeRecord r;
  r.lsn = lsn;
  r.kind = kind;
  r.commit_time = kUnixEpochTicks + 1000 * kTicksPerSecond;
  r.table = "Employees";
  r.caller = "hr-app";
  if (kind == ChangeKind::kEntities || kind == ChangeKind::kArchiveRequested) {
    r.partition_key = "Sales";
    for (const char* rk : {"a", "c"}) {
      ChangeOp op;
      op.row_key = rk;
      op.kind = kind == ChangeKind::kEntities ? OpKind::kInsert : OpKind::kDelete;
      r.ops.push_back(op);
    }
  }
  if (kind == ChangeKind::kArchiveRequested) r.target_table = "Archive";
  return r;
}

TEST(ReplayFilterTest, EmptyFilterMatchesEverything) {
  ReplayFilter f;
  for (ChangeKind k : {ChangeKind::kEntities, ChangeKind::kTableCreated, ChangeKind::kTableDeleted,
                       ChangeKind::kArchiveRequested}) {
    EXPECT_TRUE(f.MatchesRecord(Record(1, k)));
    EXPECT_TRUE(f.Matches(Record(1, k)));
  }
  EXPECT_TRUE(f.MatchesRowKey(""));
  EXPECT_TRUE(f.MatchesRowKey("\xF4\x8F\xBF\xBF"));  // U+10FFFF
}

TEST(ReplayFilterTest, TableComparesCaseInsensitively) {
  ReplayFilter f;
  f.table = "eMPLOYEES";
  EXPECT_TRUE(f.MatchesRecord(Record(1)));
  f.table = "Employee";
  EXPECT_FALSE(f.MatchesRecord(Record(1)));
  f.table = "Employeess";
  EXPECT_FALSE(f.MatchesRecord(Record(1)));
}

TEST(ReplayFilterTest, PartitionKeyAndCallerAreExact) {
  ReplayFilter f;
  f.pk = "Sales";
  EXPECT_TRUE(f.MatchesRecord(Record(1)));
  f.pk = "sales";
  EXPECT_FALSE(f.MatchesRecord(Record(1)));
  f.pk = "";
  EXPECT_FALSE(f.MatchesRecord(Record(1)));

  ReplayFilter c;
  c.caller = "hr-app";
  EXPECT_TRUE(c.MatchesRecord(Record(1)));
  c.caller = "HR-APP";
  EXPECT_FALSE(c.MatchesRecord(Record(1)));
  // "" matches only writes without a caller.
  c.caller = "";
  EXPECT_FALSE(c.MatchesRecord(Record(1)));
  ChangeRecord anonymous = Record(1);
  anonymous.caller = "";
  EXPECT_TRUE(c.MatchesRecord(anonymous));
  EXPECT_TRUE(ReplayFilter{}.MatchesRecord(anonymous));
}

TEST(ReplayFilterTest, TimeWindowIsHalfOpen) {
  const int64_t t = Record(1).commit_time;
  ReplayFilter f;
  f.since = t;
  EXPECT_TRUE(f.MatchesRecord(Record(1)));
  f.since = t + 1;
  EXPECT_FALSE(f.MatchesRecord(Record(1)));
  f.since.reset();
  f.until = t + 1;
  EXPECT_TRUE(f.MatchesRecord(Record(1)));
  f.until = t;
  EXPECT_FALSE(f.MatchesRecord(Record(1)));
  f.since = t;
  f.until = t;  // empty window
  EXPECT_FALSE(f.MatchesRecord(Record(1)));
}

TEST(ReplayFilterTest, LsnRangeIsInclusiveAndZeroIsUnbounded) {
  ReplayFilter f;
  f.from_lsn = 5;
  EXPECT_FALSE(f.MatchesRecord(Record(4)));
  EXPECT_TRUE(f.MatchesRecord(Record(5)));
  EXPECT_TRUE(f.MatchesRecord(Record(UINT64_MAX)));
  f.to_lsn = 7;
  EXPECT_TRUE(f.MatchesRecord(Record(7)));
  EXPECT_FALSE(f.MatchesRecord(Record(8)));
  f.from_lsn = 0;
  EXPECT_TRUE(f.MatchesRecord(Record(1)));
}

TEST(ReplayFilterTest, RowKeyRangeIsHalfOpenInUtf16Order) {
  ReplayFilter f;
  f.rk_from = "b";
  f.rk_to = "d";
  EXPECT_FALSE(f.MatchesRowKey("a"));
  EXPECT_FALSE(f.MatchesRowKey(""));
  EXPECT_TRUE(f.MatchesRowKey("b"));
  EXPECT_TRUE(f.MatchesRowKey("c"));
  EXPECT_TRUE(f.MatchesRowKey("czzz"));
  EXPECT_FALSE(f.MatchesRowKey("d"));
  EXPECT_FALSE(f.MatchesRowKey("da"));

  // U+1F600 (a surrogate pair, D83D DE00) sorts before U+FF61 in UTF-16,
  // although its UTF-8 bytes (F0 ...) sort after U+FF61's (EF ...).
  const std::string emoji = "\xF0\x9F\x98\x80", halfwidth = "\xEF\xBD\xA1";
  ReplayFilter u;
  u.rk_from = halfwidth;
  EXPECT_FALSE(u.MatchesRowKey(emoji));
  EXPECT_TRUE(u.MatchesRowKey(halfwidth));
  u.rk_from.reset();
  u.rk_to = halfwidth;
  EXPECT_TRUE(u.MatchesRowKey(emoji));
}

TEST(ReplayFilterTest, MatchesNeedsOneOperationInTheRowKeyRange) {
  ReplayFilter f;
  f.rk_from = "b";
  f.rk_to = "c";  // the record's ops are "a" and "c"
  EXPECT_TRUE(f.MatchesRecord(Record(1)));
  EXPECT_FALSE(f.Matches(Record(1)));
  EXPECT_FALSE(f.Matches(Record(1, ChangeKind::kArchiveRequested)));
  f.rk_to = "d";
  EXPECT_TRUE(f.Matches(Record(1)));
  EXPECT_TRUE(f.Matches(Record(1, ChangeKind::kArchiveRequested)));
  // Record criteria still apply.
  f.caller = "someone-else";
  EXPECT_FALSE(f.Matches(Record(1)));
}

TEST(ReplayFilterTest, TableEventsPassOnlyWithoutKeyCriteria) {
  for (ChangeKind k : {ChangeKind::kTableCreated, ChangeKind::kTableDeleted}) {
    ReplayFilter f;
    f.table = "employees";
    f.caller = "hr-app";
    EXPECT_TRUE(f.Matches(Record(1, k)));
    ReplayFilter with_pk = f;
    with_pk.pk = "Sales";
    EXPECT_FALSE(with_pk.Matches(Record(1, k)));
    // A RowKey range also names rows, which a table event has none of.
    ReplayFilter with_rk = f;
    with_rk.rk_from = "a";
    EXPECT_FALSE(with_rk.Matches(Record(1, k)));
    with_rk.rk_from.reset();
    with_rk.rk_to = "z";
    EXPECT_FALSE(with_rk.Matches(Record(1, k)));
    ReplayFilter other_caller = f;
    other_caller.caller = "x";
    EXPECT_FALSE(other_caller.Matches(Record(1, k)));
  }
}

TEST(ReplayFilterTest, FingerprintDistinguishesEveryCriterion) {
  std::vector<ReplayFilter> filters(1);
  auto add = [&](auto change) {
    ReplayFilter f;
    change(f);
    filters.push_back(f);
  };
  add([](ReplayFilter& f) { f.table = "T"; });
  add([](ReplayFilter& f) { f.pk = ""; });
  add([](ReplayFilter& f) { f.pk = "a"; });
  add([](ReplayFilter& f) { f.rk_from = "a"; });
  add([](ReplayFilter& f) { f.rk_to = "a"; });
  add([](ReplayFilter& f) { f.caller = ""; });
  add([](ReplayFilter& f) { f.caller = "a"; });
  add([](ReplayFilter& f) { f.since = 1; });
  add([](ReplayFilter& f) { f.until = 1; });
  add([](ReplayFilter& f) { f.from_lsn = 1; });
  add([](ReplayFilter& f) { f.to_lsn = 1; });
  // Values holding the separators cannot forge another filter's text.
  for (const char* forged : {"a;rkFrom=b", "a;rkFrom=:b", "a;rkFrom=1:b"}) {
    add([&](ReplayFilter& f) { f.pk = forged; });
  }
  add([](ReplayFilter& f) {
    f.pk = "a";
    f.rk_from = "b";
  });
  std::set<std::string> seen;
  for (const auto& f : filters) EXPECT_TRUE(seen.insert(f.Fingerprint()).second) << f.Fingerprint();

  ReplayFilter a, b;
  a.table = "Employees";
  b.table = "EMPLOYEES";
  EXPECT_EQ(a.Fingerprint(), b.Fingerprint());
  EXPECT_EQ(ReplayFilter{}.Fingerprint(), "");
}

TEST(ParseTimeArgumentTest, IsoUnixSecondsAndMillisecondsAgree) {
  const int64_t want = *ParseDateTime("2025-11-30T10:00:00Z");
  EXPECT_EQ(ParseTimeArgument("2025-11-30T10:00:00Z"), want);
  EXPECT_EQ(ParseTimeArgument("1764496800s"), want);
  EXPECT_EQ(ParseTimeArgument("1764496800000ms"), want);
  EXPECT_EQ(ParseTimeArgument("1764496800123ms"), want + 123 * 10'000);
  EXPECT_EQ(ParseTimeArgument("2025-11-30T10:00:00.1234567Z"), want + 1'234'567);
  EXPECT_EQ(ParseTimeArgument("2025-11-30T10:00:00+00:00"), want);
  EXPECT_EQ(ParseTimeArgument("0s"), kUnixEpochTicks);
  EXPECT_EQ(ParseTimeArgument("0ms"), kUnixEpochTicks);
  EXPECT_EQ(ParseTimeArgument("1970-01-01T00:00:00Z"), kUnixEpochTicks);
}

TEST(ParseTimeArgumentTest, RejectsGarbage) {
  for (const char* bad : {"", "s", "ms", "abc", "12", "12x", "12 s", " 12s", "12s ", "1.5s", "12S",
                          "12MS", "12sec", "12m", "-5s", "-0s", "+5s", "0x10s", "12mss", "12ss",
                          "2025-11-30", "2025-11-30T10:00:00", "2025-11-30T10:00:00+01:00",
                          "2025-13-30T10:00:00Z", "2025-11-30T10:00:00Zs"}) {
    EXPECT_EQ(ParseTimeArgument(bad), std::nullopt) << '"' << bad << '"';
  }
}

TEST(ParseTimeArgumentTest, RejectsTimesBeyondTheDateTimeRange) {
  // The last whole second and millisecond before 10000-01-01 still parse.
  EXPECT_EQ(ParseTimeArgument("253402300799s"), kMaxDateTimeTicks - (kTicksPerSecond - 1));
  EXPECT_EQ(ParseTimeArgument("253402300799999ms"), kMaxDateTimeTicks - 9'999);
  EXPECT_EQ(ParseTimeArgument("253402300800s"), std::nullopt);
  EXPECT_EQ(ParseTimeArgument("253402300800000ms"), std::nullopt);
  // Beyond int64 and beyond uint64: no wrap-around.
  EXPECT_EQ(ParseTimeArgument("9223372036854775807s"), std::nullopt);
  EXPECT_EQ(ParseTimeArgument("18446744073709551615ms"), std::nullopt);
  EXPECT_EQ(ParseTimeArgument("99999999999999999999999s"), std::nullopt);
}

}  // namespace
}  // namespace sidetable::replay
