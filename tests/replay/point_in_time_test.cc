// PointInTime against a live engine: the state rebuilt at a cut equals the
// state the table had at that moment.
//
// One seeded random workload (ST_SEED=<n> replays a failing seed) runs on an
// in-process Engine with an injected clock: ~3000 EGTs of every operation
// kind (single and multi-operation, some deliberately failing), every Edm
// type, non-ASCII keys, archive requests, interleaved writes to a second
// table, and a DeleteTable + CreateTable of the main table in the middle.
// At ~40 random moments the live state of both tables is captured with a
// full scan (entities, ETags, timestamps) together with the last LSN. The
// change log read back afterwards must rebuild every captured state exactly:
// by LSN, by commit time, restricted to key ranges, and across checkpoint
// save/load at any point of the feed. A replay that starts after the table's
// creation must say the history is incomplete rather than return a state.
#include "tools/replay/point_in_time.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/engine.h"
#include "testing/random_keys.h"
#include "testing/temp_dir.h"

namespace sidetable::replay {
namespace {

using sidetable::testing::RandomKeys;
using sidetable::testing::TempDir;
using sidetable::testing::ToUtf16;

constexpr int kSteps = 3000;
constexpr int kRandomPoints = 36;  // plus the fixed ones around the table events
constexpr int64_t kClockStep = 10;

// ---- the workload ---------------------------------------------------------

struct Snapshot {
  bool exists = false;
  std::vector<Entity> entities;  // in the engine's scan order
};

struct Point {
  uint64_t lsn = 0;  // the newest committed LSN when captured
  std::string what;
  Snapshot main, other;
};

struct Workload {
  uint64_t seed = 0;
  std::string error;  // non-empty: building the workload failed
  std::vector<ChangeRecord> records;  // the whole change log; records[i].lsn == i + 1
  std::vector<Point> points;
  std::vector<std::string> pks, rks;  // the key pools the workload drew from
  uint64_t first_create = 0, deleted = 0, second_create = 0;  // LSNs of Main's table events

  uint64_t last_lsn() const { return records.size(); }
  int64_t CommitTime(uint64_t lsn) const { return records[lsn - 1].commit_time; }
};

const char* const kMainNames[] = {"Main", "main", "MAIN", "mAiN"};
const char* const kOtherNames[] = {"Other", "OTHER", "oTHER"};
const char* const kPropertyNames[] = {"Name", "count", "Price", "_x", "Gr\xC3\xB6\xC3\x9F" "e",
                                      "v2", "flag", "when", "id", "blob", "\xE6\x97\xA5\xE4\xBB\x98"};

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

uint64_t ChooseSeed() {
  if (const char* s = std::getenv("ST_SEED")) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

class Generator {
 public:
  explicit Generator(Workload* w) : w_(w), rng_(w->seed), keys_(w->seed * 0x9E3779B97F4A7C15ull + 1) {}

  // Returns "" or what went wrong.
  std::string Run() {
    TempDir dir;
    if (dir.path().empty()) return "no temp dir";
    now_ = std::make_shared<std::atomic<int64_t>>(*ParseDateTime("2026-03-01T12:00:00Z"));
    EngineOptions o;
    o.durability = Durability::kOs;
    o.block_cache_bytes = 8 << 20;
    o.write_buffer_bytes = 4 << 20;
    auto clock = now_;
    o.clock = [clock] { return clock->fetch_add(kClockStep); };
    auto opened = Engine::Open(o, dir.Sub("db"));
    if (!opened.ok()) return "open: " + opened.status().ToString();
    engine_ = std::move(opened).value();
    MakeKeyPools();
    std::string err = Script();
    if (err.empty()) err = ReadLog();
    engine_.reset();
    return err;
  }

 private:
  void MakeKeyPools() {
    std::set<std::string> seen;
    for (const char* k : {"", "p"}) {
      w_->pks.push_back(k);
      seen.insert(k);
    }
    for (int guard = 0; w_->pks.size() < 6 && guard < 1000; guard++) {
      std::string k = keys_.Next(5);
      if (seen.insert(k).second) w_->pks.push_back(k);
    }
    seen.clear();
    // BMP characters above the surrogates sort after supplementary ones in
    // UTF-16 order: keep both kinds in the pool.
    for (const char* k : {"", "a", "ab", "\xEF\xBC\x81", "\xF0\x9F\x98\x80", "z"}) {
      w_->rks.push_back(k);
      seen.insert(k);
    }
    for (int guard = 0; w_->rks.size() < 40 && guard < 1000; guard++) {
      std::string k = keys_.Next(6);
      if (seen.insert(k).second) w_->rks.push_back(k);
    }
  }

  template <typename T, size_t N>
  const T& Pick(const T (&a)[N]) {
    return a[rng_() % N];
  }
  const std::string& Pick(const std::vector<std::string>& v) { return v[rng_() % v.size()]; }

  Value RandomValue() {
    switch (rng_() % 8) {
      case 0: {
        std::string s = keys_.Next(10);
        if (rng_() % 3 == 0) s += "\"quoted\" \\ back\nnew line\t\x01\xC3\xA9";
        return Value::String(s);
      }
      case 1: {
        std::string b(rng_() % 24, '\0');
        for (auto& c : b) c = static_cast<char>(rng_());
        return Value::Binary(b);
      }
      case 2: return Value::Boolean(rng_() % 2 == 0);
      case 3: {
        const int64_t edges[] = {kMinDateTimeTicks, kMaxDateTimeTicks, kUnixEpochTicks};
        if (rng_() % 4 == 0) return Value::DateTime(Pick(edges));
        return Value::DateTime(kMinDateTimeTicks +
                               static_cast<int64_t>(rng_() % static_cast<uint64_t>(kMaxDateTimeTicks - kMinDateTimeTicks)));
      }
      case 4: {
        const double edges[] = {0.0,
                                -0.0,
                                2.0,
                                -17.0,
                                0.1,
                                1e308,
                                -2.5e-308,
                                5e-324,
                                std::numeric_limits<double>::quiet_NaN(),
                                std::numeric_limits<double>::infinity(),
                                -std::numeric_limits<double>::infinity()};
        if (rng_() % 2 == 0) return Value::Double(Pick(edges));
        std::uniform_real_distribution<double> d(-1e6, 1e6);
        return Value::Double(d(rng_));
      }
      case 5: {
        Guid g;
        for (auto& b : g) b = static_cast<uint8_t>(rng_());
        return Value::MakeGuid(g);
      }
      case 6: {
        const int32_t edges[] = {0, -1, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
        return Value::Int32(rng_() % 3 == 0 ? Pick(edges) : static_cast<int32_t>(rng_()));
      }
      default: {
        const int64_t edges[] = {0, -1, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                                 int64_t{1} << 53};
        return Value::Int64(rng_() % 3 == 0 ? Pick(edges) : static_cast<int64_t>(rng_()));
      }
    }
  }

  Entity RandomEntity(const std::string& pk, const std::string& rk) {
    Entity e;
    e.partition_key = pk;
    e.row_key = rk;
    const size_t n = rng_() % 6;
    for (size_t i = 0; i < n; i++) e.Set(Pick(kPropertyNames), RandomValue());
    return e;
  }

  void MaybeMoveClock() {
    const uint64_t r = rng_() % 100;
    if (r < 5) now_->fetch_add(static_cast<int64_t>(rng_() % (5 * kTicksPerSecond)));
    else if (r < 7) now_->fetch_sub(static_cast<int64_t>(rng_() % 100));  // a backwards step
  }

  // One EGT on table t (0 = Main, 1 = Other); some deliberately fail.
  std::string WriteEgt(int t) {
    const std::string table = t == 0 ? Pick(kMainNames) : Pick(kOtherNames);
    const std::string pk = Pick(w_->pks);
    const size_t n = rng_() % 2 == 0 ? 1 : 2 + rng_() % 4;
    std::vector<std::string> rks = w_->rks;
    std::shuffle(rks.begin(), rks.end(), rng_);
    rks.resize(n);
    Batch b(table);
    if (rng_() % 3 == 0) b.SetCaller("app-" + std::to_string(rng_() % 3));
    bool expect_ok = true;
    std::vector<std::pair<std::string, bool>> effects;  // rk, present after
    for (const std::string& rk : rks) {
      const bool present = live_[t].count({pk, rk}) > 0;
      const bool fail = rng_() % 60 == 0;
      OpKind kind;
      std::string if_match;
      if (present) {
        const OpKind ok_kinds[] = {OpKind::kUpdate, OpKind::kMerge, OpKind::kDelete, OpKind::kInsertOrReplace,
                                   OpKind::kInsertOrMerge};
        kind = fail ? OpKind::kInsert : Pick(ok_kinds);
        if (kind == OpKind::kUpdate || kind == OpKind::kMerge || kind == OpKind::kDelete) {
          if_match = "*";
          if (rng_() % 3 == 0) {
            auto cur = engine_->Get(table, pk, rk);
            if (!cur.ok()) return "get before a conditional write: " + cur.status().ToString();
            if_match = cur->etag;
          }
          if (rng_() % 80 == 0) {
            if_match = "W/\"0\"";  // no entity ever has version 0
            expect_ok = false;
          }
        }
      } else {
        const OpKind ok_kinds[] = {OpKind::kInsert, OpKind::kInsertOrReplace, OpKind::kInsertOrMerge};
        const OpKind bad_kinds[] = {OpKind::kUpdate, OpKind::kMerge, OpKind::kDelete};
        kind = fail ? Pick(bad_kinds) : Pick(ok_kinds);
        if (fail) if_match = "*";
      }
      if (fail) expect_ok = false;
      if (kind == OpKind::kDelete) b.Delete(pk, rk, if_match);
      else b.Add(kind, RandomEntity(pk, rk), if_match);
      effects.emplace_back(rk, kind != OpKind::kDelete);
      kinds_used_.insert(kind);
    }
    const uint64_t before = engine_->Stats().last_lsn;
    auto r = engine_->Execute(b);
    if (r.ok() != expect_ok) {
      return "EGT on " + table + " expected to " + (expect_ok ? "succeed" : "fail") + ": " +
             (r.ok() ? std::string("it succeeded") : r.status().ToString());
    }
    if (!r.ok()) {
      if (engine_->Stats().last_lsn != before) return "a failed EGT committed";
      return "";
    }
    if (r->lsn != before + 1) return "EGT LSN " + std::to_string(r->lsn) + " after " + std::to_string(before);
    for (const auto& [rk, present] : effects) {
      if (present) live_[t].insert({pk, rk});
      else live_[t].erase({pk, rk});
    }
    return "";
  }

  std::string Archive() {
    const std::string pk = Pick(w_->pks);
    std::vector<std::string> rks = w_->rks;
    std::shuffle(rks.begin(), rks.end(), rng_);
    rks.resize(1 + rng_() % 3);
    const uint64_t before = engine_->Stats().last_lsn;
    auto r = engine_->RequestArchive(Pick(kMainNames), pk, rks, "Archive", "archiver");
    if (!r.ok()) return "archive request: " + r.status().ToString();
    if (*r != before + 1) return "archive request LSN";
    return "";
  }

  std::string Step() {
    MaybeMoveClock();
    const uint64_t r = rng_() % 100;
    if (r < 2) return Archive();
    return WriteEgt(r < 27 ? 1 : 0);
  }

  static std::string ScanTable(const Engine& e, const std::string& table, Snapshot* out) {
    auto cur = e.Scan(table, ScanBounds{}, nullptr);
    if (!cur.ok()) {
      if (cur.status().code() == Code::kTableNotFound) return "";
      return "scan: " + cur.status().ToString();
    }
    out->exists = true;
    for (; (*cur)->Valid(); (*cur)->Next()) {
      Entity en;
      Status s = (*cur)->Read(&en);
      if (!s.ok()) return "scan read: " + s.ToString();
      out->entities.push_back(std::move(en));
    }
    Status s = (*cur)->status();
    return s.ok() ? "" : "scan: " + s.ToString();
  }

  std::string Capture(std::string what) {
    Point p;
    p.lsn = engine_->Stats().last_lsn;
    p.what = std::move(what);
    std::string err = ScanTable(*engine_, "Main", &p.main);
    if (err.empty()) err = ScanTable(*engine_, "Other", &p.other);
    if (!err.empty()) return err;
    if (p.main.exists != main_exists_) return "Main exists=" + std::to_string(p.main.exists) + " at " + p.what;
    if (p.main.entities.size() != live_[0].size() || p.other.entities.size() != live_[1].size()) {
      return "the key model and the engine disagree at " + p.what;
    }
    w_->points.push_back(std::move(p));
    return "";
  }

#define GEN_TRY(expr)                  \
  do {                                 \
    std::string err_ = (expr);         \
    if (!err_.empty()) return err_;    \
  } while (0)
#define GEN_STATUS(expr, what)                                      \
  do {                                                              \
    Status st_ = (expr);                                            \
    if (!st_.ok()) return std::string(what) + ": " + st_.ToString(); \
  } while (0)

  std::string Steps(int n) {
    for (int i = 0; i < n; i++) {
      GEN_TRY(Step());
      if (rng_() % kSteps < static_cast<uint64_t>(kRandomPoints)) {
        GEN_TRY(Capture("random point after step " + std::to_string(i)));
      }
    }
    return "";
  }

  std::string Script() {
    GEN_STATUS(engine_->CreateTable("Other"), "create Other");
    for (int i = 0; i < 12; i++) GEN_TRY(WriteEgt(1));
    GEN_TRY(Capture("before Main was first created"));
    GEN_STATUS(engine_->CreateTable("Main"), "create Main");
    w_->first_create = engine_->Stats().last_lsn;
    main_exists_ = true;
    GEN_TRY(Capture("Main just created"));
    GEN_TRY(Steps(kSteps / 2));
    GEN_TRY(Capture("just before Main was deleted"));
    GEN_STATUS(engine_->DeleteTable("mAIN"), "delete Main");
    w_->deleted = engine_->Stats().last_lsn;
    main_exists_ = false;
    live_[0].clear();
    GEN_TRY(Capture("Main just deleted"));
    {
      const uint64_t before = engine_->Stats().last_lsn;
      auto r = engine_->Execute(std::move(Batch("Main").InsertOrReplace(RandomEntity("p", "a"))));
      if (r.ok() || r.status().code() != Code::kTableNotFound) return "a write to the deleted table did not fail";
      if (engine_->Stats().last_lsn != before) return "a write to the deleted table committed";
    }
    for (int i = 0; i < 6; i++) GEN_TRY(WriteEgt(1));
    GEN_TRY(Capture("Main still deleted"));
    GEN_STATUS(engine_->CreateTable("main"), "re-create Main");
    w_->second_create = engine_->Stats().last_lsn;
    main_exists_ = true;
    GEN_TRY(Capture("Main just re-created"));
    GEN_TRY(Steps(kSteps - kSteps / 2));
    GEN_TRY(Capture("the end"));
    if (kinds_used_.size() != 6) return "the workload did not use every operation kind";
    return "";
  }

  std::string ReadLog() {
    const uint64_t last = engine_->Stats().last_lsn;
    uint64_t from = 1;
    for (int guard = 0; from <= last && guard < 100000; guard++) {
      auto page = engine_->ReadChanges(from, 257);
      if (!page.ok()) return "read changes: " + page.status().ToString();
      if (page->first_available_lsn != 1) return "the change log was trimmed";
      if (page->records.empty()) return "the change log ends at " + std::to_string(from);
      for (ChangeRecord& r : page->records) {
        if (r.lsn != w_->records.size() + 1) return "change log gap at " + std::to_string(r.lsn);
        w_->records.push_back(std::move(r));
      }
      from = w_->records.size() + 1;
    }
    if (w_->records.size() != last) return "read " + std::to_string(w_->records.size()) + " records of " +
                                           std::to_string(last);
    return "";
  }

#undef GEN_TRY
#undef GEN_STATUS

  Workload* w_;
  std::mt19937_64 rng_;
  RandomKeys keys_;
  std::shared_ptr<std::atomic<int64_t>> now_;
  std::unique_ptr<Engine> engine_;
  std::set<std::pair<std::string, std::string>> live_[2];
  std::set<OpKind> kinds_used_;
  bool main_exists_ = false;
};

const Workload& TheWorkload() {
  static const Workload* w = [] {
    auto* w = new Workload;
    w->seed = ChooseSeed();
    std::printf("point_in_time_test: workload seed %llu (ST_SEED=%llu to repeat)\n",
                static_cast<unsigned long long>(w->seed), static_cast<unsigned long long>(w->seed));
    w->error = Generator(w).Run();
    return w;
  }();
  return *w;
}

#define USE_WORKLOAD(w)                                                         \
  const Workload& w = TheWorkload();                                            \
  SCOPED_TRACE("workload seed " + std::to_string(w.seed) + " (ST_SEED to repeat)"); \
  ASSERT_EQ(w.error, "")

// ---- comparing states -----------------------------------------------------

std::string Show(const Entity& e) {
  std::string s = "(" + e.partition_key + "," + e.row_key + ") " + e.etag + " ts=" + std::to_string(e.timestamp);
  for (const auto& p : e.properties) {
    s += " " + p.name + ":" + std::string(EdmTypeName(p.value.type())) + "=" + p.value.ToString();
  }
  return s;
}

bool SameEntity(const Entity& a, const Entity& b) {
  return a.partition_key == b.partition_key && a.row_key == b.row_key && a.etag == b.etag &&
         a.timestamp == b.timestamp && a.properties == b.properties;
}

::testing::AssertionResult SameState(const std::vector<Entity>& want, const EntityMap& got) {
  size_t i = 0;
  auto it = got.begin();
  for (; i < want.size() && it != got.end(); ++i, ++it) {
    if (it->first.first != it->second.partition_key || it->first.second != it->second.row_key) {
      return ::testing::AssertionFailure() << "map key differs from its entity: " << Show(it->second);
    }
    if (!SameEntity(want[i], it->second)) {
      return ::testing::AssertionFailure() << "entity #" << i << " of " << want.size() << "\n  want "
                                           << Show(want[i]) << "\n  got  " << Show(it->second);
    }
  }
  if (i < want.size()) {
    return ::testing::AssertionFailure() << "rebuilt " << got.size() << " entities, want " << want.size()
                                         << "; first missing " << Show(want[i]);
  }
  if (it != got.end()) {
    return ::testing::AssertionFailure() << "rebuilt " << got.size() << " entities, want " << want.size()
                                         << "; first extra " << Show(it->second);
  }
  return ::testing::AssertionSuccess();
}

std::vector<Entity> Values(const EntityMap& m) {
  std::vector<Entity> out;
  for (const auto& [k, e] : m) out.push_back(e);
  return out;
}

::testing::AssertionResult HasState(const PointInTime& p, const Snapshot& want) {
  auto s = p.State();
  if (!want.exists) {
    if (s.ok()) {
      return ::testing::AssertionFailure() << "the table did not exist, but State() gave " << (*s)->size()
                                           << " entities";
    }
    if (s.status().code() != Code::kTableNotFound) {
      return ::testing::AssertionFailure() << "want TableNotFound, got " << s.status().ToString();
    }
    return ::testing::AssertionSuccess();
  }
  if (!s.ok()) return ::testing::AssertionFailure() << "State(): " << s.status().ToString();
  return SameState(want.entities, **s);
}

void FeedAll(PointInTime* p, const std::vector<ChangeRecord>& records, size_t from_index = 0) {
  for (size_t i = from_index; i < records.size(); i++) p->Apply(records[i]);
}

bool InRangeOracle(const Entity& e, const ReplayFilter& f) {
  if (f.pk && *f.pk != e.partition_key) return false;
  const std::u16string rk = ToUtf16(e.row_key);
  if (f.rk_from && rk < ToUtf16(*f.rk_from)) return false;
  if (f.rk_to && !(rk < ToUtf16(*f.rk_to))) return false;
  return true;
}

Snapshot Restrict(const Snapshot& s, const ReplayFilter& f) {
  Snapshot out;
  out.exists = s.exists;
  for (const Entity& e : s.entities) {
    if (InRangeOracle(e, f)) out.entities.push_back(e);
  }
  return out;
}

// ---- the workload itself --------------------------------------------------

// The properties below are only as strong as the workload: prove it has the
// shape the tests rely on.
TEST(PointInTimeLiveTest, WorkloadCoversWhatTheTestsNeed) {
  USE_WORKLOAD(w);
  EXPECT_GE(w.records.size(), static_cast<size_t>(kSteps * 9 / 10));
  EXPECT_GE(w.points.size(), 25u);
  ASSERT_GT(w.first_create, 1u);
  ASSERT_GT(w.deleted, w.first_create);
  ASSERT_GT(w.second_create, w.deleted + 1);
  std::set<OpKind> kinds;
  size_t multi = 0, archive = 0, other = 0, non_ascii_keys = 0;
  std::set<EdmType> types;
  for (const ChangeRecord& r : w.records) {
    if (r.kind == ChangeKind::kArchiveRequested) archive++;
    if (r.kind != ChangeKind::kEntities) continue;
    if (Lower(r.table) == "other") other++;
    if (r.ops.size() > 1) multi++;
    for (const ChangeOp& op : r.ops) {
      kinds.insert(op.kind);
      if (op.after) {
        for (const auto& p : op.after->properties) types.insert(p.value.type());
      }
      for (unsigned char c : r.partition_key + op.row_key) {
        if (c >= 0x80) {
          non_ascii_keys++;
          break;
        }
      }
    }
  }
  EXPECT_EQ(kinds.size(), 6u);
  EXPECT_EQ(types.size(), 8u);
  EXPECT_GT(multi, 500u);
  EXPECT_GT(archive, 10u);
  EXPECT_GT(other, 300u);
  EXPECT_GT(non_ascii_keys, 500u);
  size_t first = 0, gone = 0, second = 0, big = 0;
  for (const Point& p : w.points) {
    if (p.lsn < w.first_create || (p.lsn >= w.deleted && p.lsn < w.second_create)) {
      gone++;
      EXPECT_FALSE(p.main.exists) << p.what;
    } else {
      (p.lsn < w.deleted ? first : second)++;
      EXPECT_TRUE(p.main.exists) << p.what;
    }
    if (p.main.entities.size() > 50) big++;
  }
  EXPECT_GE(gone, 3u);
  EXPECT_GE(first, 5u);
  EXPECT_GE(second, 5u);
  EXPECT_GE(big, 5u);
}

// ---- the key property -----------------------------------------------------

TEST(PointInTimeLiveTest, StateAtLsnCutEqualsTheLiveState) {
  USE_WORKLOAD(w);
  std::mt19937_64 rng(w.seed + 1);
  for (const Point& pt : w.points) {
    SCOPED_TRACE("cut at LSN " + std::to_string(pt.lsn) + ": " + pt.what);
    for (int t = 0; t < 2; t++) {
      const std::string table = t == 0 ? kMainNames[rng() % 4] : kOtherNames[rng() % 3];
      PointInTime p(table, ReplayFilter{}, Cut{pt.lsn, std::nullopt});
      FeedAll(&p, w.records);
      EXPECT_EQ(p.past_cut(), pt.lsn < w.last_lsn());
      EXPECT_EQ(p.last_applied_lsn(), pt.lsn);
      EXPECT_TRUE(HasState(p, t == 0 ? pt.main : pt.other)) << "table " << table;
    }
  }
}

TEST(PointInTimeLiveTest, StateAtTimeCutEqualsTheLiveState) {
  USE_WORKLOAD(w);
  std::mt19937_64 rng(w.seed + 2);
  size_t wide_gaps = 0;
  for (const Point& pt : w.points) {
    const int64_t at = w.CommitTime(pt.lsn);
    const int64_t next = pt.lsn < w.last_lsn() ? w.CommitTime(pt.lsn + 1) : at + 1000 * kTicksPerSecond;
    ASSERT_LT(at, next) << "commit times must strictly increase";
    if (next - at > 1) wide_gaps++;
    // Both ends of [commit_time(L), commit_time(L+1)) and a point inside.
    for (int64_t t : {at, at + static_cast<int64_t>(rng() % static_cast<uint64_t>(next - at)), next - 1}) {
      SCOPED_TRACE("cut at time " + std::to_string(t) + " (LSN " + std::to_string(pt.lsn) + " committed at " +
                   std::to_string(at) + ", the next at " + std::to_string(next) + "): " + pt.what);
      // The time alone, then with an LSN bound that is not the binding one.
      for (uint64_t lsn_bound : {uint64_t{0}, w.last_lsn() + 7}) {
        PointInTime p(kMainNames[rng() % 4], ReplayFilter{}, Cut{lsn_bound, t});
        FeedAll(&p, w.records);
        EXPECT_EQ(p.last_applied_lsn(), pt.lsn);
        EXPECT_EQ(p.past_cut(), pt.lsn < w.last_lsn());
        EXPECT_TRUE(HasState(p, pt.main));
      }
      // Time and LSN bounds together, the LSN binding.
      PointInTime p("Other", ReplayFilter{}, Cut{pt.lsn, at + 1000 * kTicksPerSecond});
      FeedAll(&p, w.records);
      EXPECT_EQ(p.last_applied_lsn(), pt.lsn);
      EXPECT_TRUE(HasState(p, pt.other));
    }
  }
  EXPECT_GT(wide_gaps, 5u) << "the clock gave no room for a cut between two commits";
  // Before the first commit nothing is applied and no table exists.
  PointInTime p("Other", ReplayFilter{}, Cut{0, w.CommitTime(1) - 1});
  FeedAll(&p, w.records);
  EXPECT_TRUE(p.past_cut());
  EXPECT_EQ(p.last_applied_lsn(), 0u);
  auto s = p.State();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), Code::kTableNotFound) << s.status().ToString();
}

TEST(PointInTimeLiveTest, KeyRangeEqualsTheLiveStateRestricted) {
  USE_WORKLOAD(w);
  std::mt19937_64 rng(w.seed + 3);
  RandomKeys keys(w.seed + 4);
  auto key = [&](const std::vector<std::string>& pool) { return rng() % 5 == 0 ? keys.Next(4) : pool[rng() % pool.size()]; };
  size_t proper_subsets = 0, checks = 0;
  for (const Point& pt : w.points) {
    for (int i = 0; i < 6; i++) {
      ReplayFilter range;
      if (rng() % 10 < 7) range.pk = key(w.pks);
      if (rng() % 10 < 6) range.rk_from = key(w.rks);
      if (rng() % 10 < 6) range.rk_to = key(w.rks);
      // Fields other than the key range are ignored.
      range.table = "Other";
      range.caller = "nobody";
      range.from_lsn = w.last_lsn() + 1;
      SCOPED_TRACE("cut at LSN " + std::to_string(pt.lsn) + ": " + pt.what + "; range pk=" +
                   (range.pk ? "'" + *range.pk + "'" : "-") + " rk=[" + range.rk_from.value_or("-") + ", " +
                   range.rk_to.value_or("-") + ")");
      const Snapshot want = Restrict(pt.main, range);
      if (!want.entities.empty() && want.entities.size() < pt.main.entities.size()) proper_subsets++;
      checks++;
      PointInTime p(kMainNames[rng() % 4], range, Cut{pt.lsn, std::nullopt});
      FeedAll(&p, w.records);
      EXPECT_TRUE(HasState(p, want));
    }
  }
  EXPECT_GT(proper_subsets, checks / 5) << "the ranges hardly ever restricted anything";
}

// What State() must say when the replay reads the records from LSN `start`
// on and cuts at LSN `cut`: a state only when Main's latest creation is in
// what was read; otherwise "it did not exist" when a deletion was read or
// nothing of the table was; otherwise (changes of a table whose creation
// was not read) "the history is incomplete".
enum class Expect { kState, kTableNotFound, kIncomplete };

Expect Oracle(const Workload& w, uint64_t start, uint64_t cut) {
  std::optional<ChangeKind> event;
  bool orphan = false;
  for (uint64_t lsn = start; lsn <= cut; lsn++) {
    const ChangeRecord& r = w.records[lsn - 1];
    if (Lower(r.table) != "main") continue;
    if (r.kind == ChangeKind::kTableCreated || r.kind == ChangeKind::kTableDeleted) event = r.kind;
    else if (r.kind == ChangeKind::kEntities && !event) orphan = true;
  }
  if (event) return *event == ChangeKind::kTableCreated ? Expect::kState : Expect::kTableNotFound;
  return orphan ? Expect::kIncomplete : Expect::kTableNotFound;
}

TEST(PointInTimeLiveTest, IncompleteHistoryIsReportedNeverGuessed) {
  USE_WORKLOAD(w);
  std::mt19937_64 rng(w.seed + 5);
  size_t incomplete = 0, rebuilt_from_a_later_start = 0;
  for (const Point& pt : w.points) {
    std::vector<uint64_t> starts = {1,           2,         w.first_create, w.first_create + 1, w.deleted,
                                    w.deleted + 1, w.second_create, w.second_create + 1, pt.lsn, pt.lsn + 1};
    for (int i = 0; i < 4; i++) starts.push_back(1 + rng() % pt.lsn);
    for (uint64_t start : starts) {
      if (start > pt.lsn + 1 || start > w.last_lsn()) continue;
      SCOPED_TRACE("replay from LSN " + std::to_string(start) + ", cut at LSN " + std::to_string(pt.lsn) + ": " +
                   pt.what);
      PointInTime p("Main", ReplayFilter{}, Cut{pt.lsn, std::nullopt});
      FeedAll(&p, w.records, start - 1);
      auto s = p.State();
      switch (Oracle(w, start, pt.lsn)) {
        case Expect::kState:
          if (start > w.first_create) rebuilt_from_a_later_start++;
          EXPECT_TRUE(HasState(p, pt.main));
          break;
        case Expect::kTableNotFound:
          ASSERT_FALSE(s.ok()) << "a state of " << (*s)->size() << " entities";
          EXPECT_EQ(s.status().code(), Code::kTableNotFound) << s.status().ToString();
          break;
        case Expect::kIncomplete:
          incomplete++;
          ASSERT_FALSE(s.ok()) << "a state of " << (*s)->size() << " entities from an incomplete history";
          EXPECT_EQ(s.status().code(), Code::kResourceNotFound) << s.status().ToString();
          EXPECT_NE(s.status().message().find("incomplete"), std::string::npos) << s.status().message();
          break;
      }
    }
  }
  EXPECT_GT(incomplete, 10u);
  EXPECT_GT(rebuilt_from_a_later_start, 3u);
}

// ---- checkpoints ----------------------------------------------------------

struct Outcome {
  Code code = Code::kOk;
  std::vector<Entity> state;
  bool past_cut = false;
  uint64_t last_applied = 0;
  std::string meta, state_text;
};

Outcome Observe(const PointInTime& p) {
  Outcome o;
  auto s = p.State();
  o.code = s.ok() ? Code::kOk : s.status().code();
  if (s.ok()) o.state = Values(**s);
  o.past_cut = p.past_cut();
  o.last_applied = p.last_applied_lsn();
  o.meta = p.SaveMeta();
  o.state_text = p.SaveState();
  return o;
}

TEST(PointInTimeLiveTest, CheckpointResumeEqualsAnUninterruptedRun) {
  USE_WORKLOAD(w);
  std::mt19937_64 rng(w.seed + 6);
  const uint64_t mid_first = (w.first_create + w.deleted) / 2;
  const uint64_t mid_second = (w.second_create + w.last_lsn()) / 2;
  struct Case {
    Cut cut;
    uint64_t start;
    ReplayFilter range;
  };
  std::vector<Case> cases;
  cases.push_back({Cut{}, 1, {}});                                          // the end
  cases.push_back({Cut{mid_first, std::nullopt}, 1, {}});                   // first incarnation
  cases.push_back({Cut{w.deleted + 2, std::nullopt}, 1, {}});               // deleted
  cases.push_back({Cut{0, w.CommitTime(mid_second)}, 1, {}});               // by time
  cases.push_back({Cut{}, w.first_create + 1, {}});                         // partial history, re-created later
  cases.push_back({Cut{mid_first, std::nullopt}, w.first_create + 1, {}});  // partial history: incomplete
  {
    ReplayFilter range;
    range.pk = w.pks[rng() % w.pks.size()];
    range.rk_from = "a";
    cases.push_back({Cut{}, 1, range});
  }
  size_t with_entities = 0;
  for (const Case& c : cases) {
    const std::string label = "cut lsn=" + std::to_string(c.cut.lsn) +
                              " time=" + (c.cut.time ? std::to_string(*c.cut.time) : "-") +
                              " start=" + std::to_string(c.start);
    PointInTime whole("Main", c.range, c.cut);
    FeedAll(&whole, w.records, c.start - 1);
    const Outcome want = Observe(whole);
    if (!want.state.empty()) with_entities++;
    // Split points: the ends, around each table event and random ones.
    std::vector<uint64_t> splits = {c.start - 1, w.last_lsn()};
    for (uint64_t e : {w.first_create, w.deleted, w.second_create}) {
      splits.push_back(e - 1);
      splits.push_back(e);
    }
    if (c.cut.lsn) splits.push_back(c.cut.lsn);
    for (int i = 0; i < 6; i++) splits.push_back(rng() % (w.last_lsn() + 1));
    for (uint64_t split : splits) {
      if (split + 1 < c.start || split > w.last_lsn()) continue;
      // Two generations of checkpoint: at `split` and again halfway after it.
      const uint64_t split2 = split + (w.last_lsn() - split) / 2;
      SCOPED_TRACE(label + ", checkpoints after LSN " + std::to_string(split) + " and " + std::to_string(split2));
      PointInTime first("Main", c.range, c.cut);
      for (uint64_t lsn = c.start; lsn <= split; lsn++) first.Apply(w.records[lsn - 1]);
      PointInTime second("mAIN", c.range, c.cut);
      ASSERT_TRUE(second.Load(first.SaveMeta(), first.SaveState()).ok());
      EXPECT_EQ(second.SaveMeta(), first.SaveMeta());
      EXPECT_EQ(second.SaveState(), first.SaveState());
      for (uint64_t lsn = std::max(split + 1, c.start); lsn <= split2; lsn++) second.Apply(w.records[lsn - 1]);
      PointInTime third("main", c.range, c.cut);
      ASSERT_TRUE(third.Load(second.SaveMeta(), second.SaveState()).ok());
      for (uint64_t lsn = std::max(split2 + 1, c.start); lsn <= w.last_lsn(); lsn++) {
        third.Apply(w.records[lsn - 1]);
      }
      const Outcome got = Observe(third);
      EXPECT_EQ(got.code, want.code);
      EXPECT_EQ(got.past_cut, want.past_cut);
      EXPECT_EQ(got.last_applied, want.last_applied);
      EXPECT_EQ(got.meta, want.meta);
      EXPECT_EQ(got.state_text, want.state_text);
      EntityMap want_map;
      for (const Entity& e : want.state) want_map[{e.partition_key, e.row_key}] = e;
      EXPECT_TRUE(SameState(got.state, want_map));
    }
  }
  EXPECT_GE(with_entities, 4u);
  // And the uninterrupted runs themselves say what they must.
  PointInTime end("Main", ReplayFilter{}, Cut{});
  FeedAll(&end, w.records);
  EXPECT_TRUE(HasState(end, w.points.back().main));
}

// A checkpoint of a run over the first incarnation with entities in it.
struct Saved {
  std::string meta, state;
  size_t entities = 0;
};

Saved SaveMidRun(const Workload& w) {
  PointInTime p("Main", ReplayFilter{}, Cut{});
  for (uint64_t lsn = 1; lsn < w.deleted; lsn++) p.Apply(w.records[lsn - 1]);
  auto s = p.State();
  Saved out{p.SaveMeta(), p.SaveState(), s.ok() ? (*s)->size() : 0};
  return out;
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  if (at == std::string::npos) return "<" + from + " not found>";
  return s.replace(at, from.size(), to);
}

std::string DropLastLine(const std::string& state) {
  const size_t nl = state.rfind('\n', state.size() - 2);
  return nl == std::string::npos ? "" : state.substr(0, nl + 1);
}

// A shard claim (scale-out) carries no LSN, table or rows. The replay
// sources consume claims, but one fed to the builder must change nothing:
// not the state, not the last applied LSN, not the cut.
// Table "Main" (id 7) created at LSN 1, time 100: the unit cases' start.
ChangeRecord MainCreated() {
  ChangeRecord created;
  created.lsn = 1;
  created.commit_time = 100;
  created.kind = ChangeKind::kTableCreated;
  created.table = "Main";
  created.table_id = 7;
  return created;
}

TEST(PointInTimeUnitTest, AShardClaimChangesNothing) {
  auto entity_record = [](uint64_t lsn, int64_t time, const std::string& rk) {
    ChangeRecord r;
    r.lsn = lsn;
    r.commit_time = time;
    r.table = "Main";
    r.table_id = 7;
    r.partition_key = "p";
    ChangeOp op;
    op.row_key = rk;
    op.kind = OpKind::kInsert;
    op.version = lsn;
    op.etag = "W/\"" + std::to_string(lsn) + "\"";
    Entity e;
    e.partition_key = "p";
    e.row_key = rk;
    e.etag = op.etag;
    e.timestamp = time;
    op.after = e;
    r.ops.push_back(op);
    return r;
  };
  const ChangeRecord created = MainCreated();
  ChangeRecord claim;
  claim.kind = ChangeKind::kShardClaimed;
  claim.epoch = 2;
  claim.shard = 0;
  claim.commit_time = 1000;  // after the time cut below

  PointInTime p("Main", ReplayFilter{}, Cut{0, 500});
  p.Apply(created);
  p.Apply(entity_record(2, 200, "a"));
  p.Apply(claim);
  EXPECT_EQ(p.last_applied_lsn(), 2u);
  EXPECT_FALSE(p.past_cut()) << "a claim is not a record past the cut";
  p.Apply(entity_record(3, 300, "b"));  // still before the cut: applied
  EXPECT_EQ(p.last_applied_lsn(), 3u);
  auto state = p.State();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ((*state)->size(), 2u);
}

// A scale-out service's records (docs/scale-out.md, "Table events in a
// cluster"): its TableCreated is read since session 45, but each owner
// numbers its own commits and each member has its own table ids, so the
// order read puts a creation stamped with epoch 3 after a row another
// member wrote at epoch 2. Taken as it came, the creation dropped that row
// and the rebuild answered without it; now the table is refused, also
// after a resume from the checkpoint.
TEST(PointInTimeUnitTest, AScaleOutServicesTableIsRefusedNotRebuiltWithoutSomeRows) {
  auto row = [](uint64_t lsn, uint64_t epoch, uint32_t table_id, const std::string& rk) {
    ChangeRecord r;
    r.lsn = lsn;
    r.epoch = epoch;
    r.commit_time = static_cast<int64_t>(100 + lsn);
    r.table = "Main";
    r.table_id = table_id;
    r.partition_key = rk;
    ChangeOp op;
    op.row_key = rk;
    op.kind = OpKind::kInsert;
    op.version = epoch << 40 | lsn;
    Entity e;
    e.partition_key = rk;
    e.row_key = rk;
    op.after = e;
    r.ops.push_back(op);
    return r;
  };
  ChangeRecord created = MainCreated();
  created.epoch = 3;
  PointInTime p("Main", ReplayFilter{}, Cut{});
  p.Apply(row(5, 2, 9, "a"));  // another member's row (its own table id), lower epoch
  p.Apply(created);
  p.Apply(row(2, 3, 7, "b"));
  auto state = p.State();
  ASSERT_FALSE(state.ok()) << "rebuilt with " << (*state)->size()
                           << " row(s): the row of shard epoch 2 is lost";
  EXPECT_EQ(state.status().code(), Code::kResourceNotFound);
  EXPECT_NE(state.status().message().find("scale-out"), std::string::npos)
      << state.status().ToString();

  PointInTime resumed("Main", ReplayFilter{}, Cut{});
  ASSERT_TRUE(resumed.Load(p.SaveMeta(), p.SaveState()).ok());
  EXPECT_EQ(resumed.State().status().code(), Code::kResourceNotFound);

  PointInTime plain("Main", ReplayFilter{}, Cut{});
  plain.Apply(MainCreated());
  plain.Apply(row(2, 0, 7, "b"));
  ASSERT_TRUE(plain.State().ok()) << "outside a cluster: rebuilt as before";
}

// A source whose history is whole only from some LSN on (a topic of one
// table one of whose partitions lost messages to retention): a table created
// before that may have lost changes, so State() refuses it, also after a
// resume from the checkpoint (found from outside in session 42: the rebuild
// gave the table without the lost entities, exit 0).
TEST(PointInTimeUnitTest, ATableCreatedBeforeTheWholeHistoryIsRefusedAlsoAfterAResume) {
  const ChangeRecord created = MainCreated();
  ChangeRecord insert;
  insert.lsn = 6;
  insert.commit_time = 600;
  insert.table = "Main";
  insert.table_id = 7;
  insert.partition_key = "p";
  ChangeOp op;
  op.row_key = "a";
  op.kind = OpKind::kInsert;
  op.version = 6;
  op.etag = "W/\"6\"";
  Entity e;
  e.partition_key = "p";
  e.row_key = "a";
  e.etag = op.etag;
  e.timestamp = insert.commit_time;
  op.after = e;
  insert.ops.push_back(op);

  PointInTime cut_history("Main", ReplayFilter{}, Cut{});
  cut_history.SetWholeFrom(5);
  cut_history.Apply(created);
  cut_history.Apply(insert);
  auto refused = cut_history.State();
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), Code::kResourceNotFound);
  EXPECT_NE(refused.status().message().find(
                "created at LSN 1, but the source holds every record only from LSN 5"),
            std::string::npos)
      << refused.status().ToString();

  PointInTime resumed("Main", ReplayFilter{}, Cut{});
  ASSERT_TRUE(resumed.Load(cut_history.SaveMeta(), cut_history.SaveState()).ok());
  EXPECT_EQ(resumed.State().status().code(), Code::kResourceNotFound)
      << "the checkpoint lost where history is whole";

  // Whole from just after the creation: nothing after it can be missing.
  PointInTime whole("Main", ReplayFilter{}, Cut{});
  whole.SetWholeFrom(2);
  whole.Apply(created);
  whole.Apply(insert);
  auto state = whole.State();
  ASSERT_TRUE(state.ok()) << state.status().ToString();
  EXPECT_EQ((*state)->size(), 1u);
}

TEST(PointInTimeLiveTest, LoadRejectsCorruptMetaAndState) {
  USE_WORKLOAD(w);
  const Saved good = SaveMidRun(w);
  ASSERT_GE(good.entities, 3u);
  const std::string count = "\"entities\":" + std::to_string(good.entities);
  const std::string more = "\"entities\":" + std::to_string(good.entities + 1);
  const std::string first_line = good.state.substr(0, good.state.find('\n') + 1);
  {
    PointInTime p("Main", ReplayFilter{}, Cut{});
    ASSERT_TRUE(p.Load(good.meta, good.state).ok());
    ASSERT_TRUE(p.State().ok());
    EXPECT_EQ((*p.State())->size(), good.entities);
  }
  struct Bad {
    std::string what, meta, state;
  };
  std::vector<Bad> bad = {
      {"empty meta", "", good.state},
      {"meta not JSON", "{\"pastCut\":", good.state},
      {"meta an array", "[]", good.state},
      {"meta field of the wrong type", Replace(good.meta, "\"pastCut\":false", "\"pastCut\":0"), good.state},
      {"header count too high", Replace(good.meta, count, more), good.state},
      {"last newline missing", good.meta, good.state.substr(0, good.state.size() - 1)},
      {"last line missing", good.meta, DropLastLine(good.state)},
      {"line cut in half", good.meta, good.state.substr(0, good.state.size() - first_line.size() / 2)},
      {"a garbage line", Replace(good.meta, count, more), good.state + "garbage\n"},
      {"a line that is not an object", Replace(good.meta, count, more), good.state + "[1,2]\n"},
      {"an entity without RowKey", Replace(good.meta, count, more), good.state + "{\"PartitionKey\":\"p\"}\n"},
      {"an unknown type", Replace(good.meta, count, more),
       good.state + "{\"PartitionKey\":\"p\",\"RowKey\":\"q\",\"x\":\"1\",\"x@odata.type\":\"Edm.Bogus\"}\n"},
      {"a repeated entity", good.meta, good.state + first_line},
      {"a repeated entity, count adjusted", Replace(good.meta, count, more), good.state + first_line},
  };
  for (const char* field : {"pastCut", "lastApplied", "firstSeen", "known", "exists", "tableId", "eventLsn",
                            "orphanLsn", "entities"}) {
    const std::string key = "\"" + std::string(field) + "\":";
    bad.push_back({std::string("meta lacks ") + field, Replace(good.meta, key, "\"renamed\":"), good.state});
  }
  for (const Bad& b : bad) {
    ASSERT_EQ(b.meta.find("not found>"), std::string::npos) << b.what << ": the test's edit did not apply";
    PointInTime p("Main", ReplayFilter{}, Cut{});
    Status s = p.Load(b.meta, b.state);
    EXPECT_EQ(s.code(), Code::kInvalidInput) << b.what << ": " << s.ToString();
  }
}

}  // namespace
}  // namespace sidetable::replay
