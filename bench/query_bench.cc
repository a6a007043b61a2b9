// query_bench: the query layer (engine/query) side by side with raw RocksDB
// iteration, in one process and run (issue 3's benchmark).
//
// 1. Partition scan: one partition of --partition-entities (default 100,000)
//    ~1 KiB entities between --neighbours other partitions. The engine runs
//    ExecuteQuery("PartitionKey eq 'p'") and follows continuations with pages
//    of 1,000 (every property decoded into an Entity); raw RocksDB iterates the
//    same key range of a database holding the same keys and row bytes and
//    copies each key and value into std::string buffers (every byte touched,
//    nothing parsed). A third row, the engine's RowCursor with DecodeRow and no
//    query layer, splits the engine's cost between decoding and the layer.
// 2. Selective filter over a --table-entities (default 1,000,000) table:
//    "Age eq 12345" (one match) as a table scan with the default work bound
//    (max_examined 100,000 per page), and with a PartitionKey range that the
//    planner turns into a key-range scan of 10 partitions.
// 3. Point query: ExecuteQuery("PartitionKey eq .. and RowKey eq ..") against
//    Engine::Get, and Explain (parse + plan, no read) alone.
//
// Everything is loaded in EGTs of 100 with Durability::kOs; the databases are
// then closed and reopened (RocksDB flushes the recovered memtables), so both
// sides scan SST files of the same shape, and each scan is run once untimed to
// warm the block cache. Timed runs alternate the order of the systems.
//
//   query_bench                    (full sizes, ~1-2 min)
//   query_bench --quick            (CI smoke run, < 15 s)
#include <CLI/CLI.hpp>

#include <rocksdb/db.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/perf_level.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <thread>

#include "bench/entity_factory.h"
#include "bench/harness.h"
#include "bench/stores.h"
#include "engine/engine.h"
#include "engine/internal/codec.h"
#include "engine/query/query.h"
#include "protocol/wire.h"

namespace sidetable::bench {
namespace {

struct Config {
  int repeat = 5;
  std::string dir = "/tmp";
  bool keep = false;
  bool quick = false;
  std::string only;  // comma list of scan,filter,point; empty = all
  size_t partition_entities = 100000;
  size_t neighbours = 4;             // other partitions, half before, half after
  size_t neighbour_entities = 5000;  // entities in each of them
  size_t table_entities = 1000000;
  int32_t age = 12345;
  size_t points = 100000;
};

constexpr size_t kEgt = 100;

bool Enabled(const Config& c, const std::string& id) {
  if (c.only.empty()) return true;
  std::stringstream ss(c.only);
  for (std::string item; std::getline(ss, item, ',');) {
    if (item == id) return true;
  }
  return false;
}

void Check(const Status& s, const std::string& what) {
  if (!s.ok()) Die(what + ": " + s.ToString());
}
void Check(const rocksdb::Status& s, const std::string& what) {
  if (!s.ok()) Die(what + ": " + s.ToString());
}

std::unique_ptr<Engine> OpenEngine(const std::string& path) {
  EngineOptions eo;
  eo.durability = Durability::kOs;
  auto e = Engine::Open(eo, path);
  if (!e.ok()) Die("engine open: " + e.status().ToString());
  return std::move(e).value();
}

std::unique_ptr<rocksdb::DB> OpenRaw(const std::string& path) {
  rocksdb::DB* db = nullptr;
  Check(rocksdb::DB::Open(RawDbOptions(StoreOptions()), path, &db), "rocksdb open");
  return std::unique_ptr<rocksdb::DB>(db);
}

// Loads `count` entities of partition `p` in EGTs of 100. `age_base`: when
// set, entity r gets Age = age_base + r (unique over the table); otherwise the
// factory's Age (r % 100).
void LoadEngine(Engine& e, const std::string& table, const EntityFactory& f, uint64_t p,
                size_t count, std::optional<int64_t> age_base) {
  const std::string pk = EntityFactory::PartitionKey(p);
  for (size_t first = 0; first < count; first += kEgt) {
    Batch b(table);
    for (size_t r = first; r < std::min(count, first + kEgt); r++) {
      Entity ent = f.Make(pk, EntityFactory::RowKey(r), r);
      if (age_base) ent.Set("Age", Value::Int32(static_cast<int32_t>(*age_base + r)));
      b.Insert(std::move(ent));
    }
    Check(e.Execute(b).status(), "engine load");
  }
}

// The same keys, and values of the same bytes, in raw RocksDB.
void LoadRaw(rocksdb::DB& db, uint32_t table_id, const EntityFactory& f, uint64_t p,
             size_t count) {
  const std::string pk = EntityFactory::PartitionKey(p);
  std::string value;
  for (size_t first = 0; first < count; first += kEgt) {
    rocksdb::WriteBatch wb;
    for (size_t r = first; r < std::min(count, first + kEgt); r++) {
      f.RawValue(r, &value);
      Check(wb.Put(codec::EntityKey(table_id, pk, EntityFactory::RowKey(r)), value), "batch");
    }
    Check(db.Write(rocksdb::WriteOptions(), &wb), "raw load");
  }
}

// Releasing the first snapshot after a load lets RocksDB rewrite the
// bottommost files to zero their sequence numbers (compaction reason
// "BottommostFiles"): the whole table is rewritten once, in the background,
// and the rewritten files start cold in the block cache. The engine takes a
// snapshot per query page, raw iteration takes none; so that neither side is
// timed during (or right after) that one-off rewrite, trigger it on both
// before settling.
void ReleaseASnapshot(const Engine& e, rocksdb::DB* raw) {
  e.NewReadView().reset();
  if (raw != nullptr) raw->ReleaseSnapshot(raw->GetSnapshot());
}

// After reopening, RocksDB flushes the recovered memtables and may start
// compactions; a scan timed while they run, or right after they replaced the
// files it had cached, measures them. The engine does not expose its
// database, so for both sides we wait until the database directories have not
// changed (file names and sizes) for 3 s (at most 120 s).
void Settle(const Config& c, const std::vector<std::string>& dirs) {
  if (c.quick) return;
  auto snapshot = [&] {
    std::string s;
    for (const auto& d : dirs) {
      std::error_code ec;
      for (const auto& f : std::filesystem::directory_iterator(d, ec)) {
        s += f.path().filename().string() + ":" +
             std::to_string(f.is_regular_file(ec) ? f.file_size(ec) : 0) + ";";
      }
    }
    return s;
  };
  const auto t0 = Clock::now();
  auto stable_since = Clock::now();
  std::string last = snapshot();
  while (SecondsSince(stable_since) < 3 && SecondsSince(t0) < 120) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    std::string now = snapshot();
    if (now != last) {
      last = std::move(now);
      stable_since = Clock::now();
    }
  }
  std::fprintf(stderr, "settled in %s\n", FormatSeconds(SecondsSince(t0)).c_str());
}

std::string Ratio(double num, double den) {
  char buf[32];
  if (num <= 0 || den <= 0) return "-";
  std::snprintf(buf, sizeof buf, "%.2f", num / den);
  return buf;
}
std::string Micros(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f µs", s * 1e6);
  return buf;
}

struct PagedResult {
  uint64_t returned = 0;
  uint64_t examined = 0;
  uint64_t pages = 0;
};

// Runs a query to the end, following continuations.
PagedResult RunPaged(const Engine& e, query::Query q) {
  PagedResult out;
  for (;;) {
    auto page = query::ExecuteQuery(e, q);
    if (!page.ok()) Die("query '" + q.filter + "': " + page.status().ToString());
    out.pages++;
    out.returned += page->stats.returned;
    out.examined += page->stats.examined;
    if (!page->continuation) break;
    q.continuation = std::move(page->continuation);
  }
  return out;
}

// ---- 1. partition scan -----------------------------------------------------

void PartitionScan(const Config& c, ScratchDir& dir, const EntityFactory& f, std::ostream& out) {
  const std::string epath = dir.Sub("scan-engine"), rpath = dir.Sub("scan-raw");
  const uint64_t target = c.neighbours / 2;  // partition index of the scanned one
  const std::string target_pk = EntityFactory::PartitionKey(target);
  uint32_t table_id = 0;
  size_t total = 0;
  {
    const auto t0 = Clock::now();
    auto e = OpenEngine(epath);
    Check(e->CreateTable("scan"), "create table");
    auto info = e->GetTable("scan");
    Check(info.status(), "get table");
    table_id = info->id;
    auto db = OpenRaw(rpath);
    for (uint64_t p = 0; p <= c.neighbours; p++) {
      const size_t n = p == target ? c.partition_entities : c.neighbour_entities;
      LoadEngine(*e, "scan", f, p, n, std::nullopt);
      LoadRaw(*db, table_id, f, p, n);
      total += n;
    }
    Check(db->Close(), "raw close");
    std::fprintf(stderr, "scan: loaded %s entities into each system in %s\n",
                 WithCommas(static_cast<double>(total)).c_str(),
                 FormatSeconds(SecondsSince(t0)).c_str());
  }
  auto e = OpenEngine(epath);
  auto db = OpenRaw(rpath);
  ReleaseASnapshot(*e, db.get());
  Settle(c, {epath, rpath});

  const std::string lower = codec::PartitionPrefix(table_id, target_pk);
  const std::string upper = codec::PartitionPrefix(table_id, target_pk + '\x01');
  auto raw_scan = [&]() -> size_t {
    rocksdb::Slice lo(lower), hi(upper);
    rocksdb::ReadOptions ro;
    ro.iterate_lower_bound = &lo;
    ro.iterate_upper_bound = &hi;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
    std::string key, value;
    size_t n = 0, bytes = 0;
    for (it->Seek(lo); it->Valid(); it->Next()) {
      key.assign(it->key().data(), it->key().size());
      value.assign(it->value().data(), it->value().size());
      bytes += key.size() + value.size();
      n++;
    }
    Check(it->status(), "raw scan");
    if (bytes == 0 && n > 0) Die("raw scan read no bytes");
    return n;
  };
  query::Query q;
  q.table = "scan";
  q.filter = "PartitionKey eq '" + target_pk + "'";
  auto engine_query = [&]() -> size_t {
    PagedResult r = RunPaged(*e, q);
    if (r.pages < r.returned / query::kMaxPageSize) Die("too few pages");
    return r.returned;
  };
  // The page without an Entity per row: every property of every entity read
  // in place (the least a consumer of the visitor API does).
  auto engine_visit = [&]() -> size_t {
    struct Touch : query::RowVisitor {
      size_t n = 0, read = 0;
      Status Visit(const RowView& row) override {
        PropertyReader r(row);
        for (PropertyView p; r.Next(&p);) read += p.name.size() + p.bytes().size() + 1;
        n++;
        return r.status();
      }
      // `read` runs across pages, so no page size: pages end at 1,000
      // entities (the bench's rows are small, far under max_bytes).
      uint64_t bytes() const override { return 0; }
    } touch;
    query::Query page = q;
    for (;;) {
      auto r = query::VisitQuery(*e, page, touch);
      Check(r.status(), "visit");
      if (!r->continuation) break;
      page.continuation = std::move(r->continuation);
    }
    if (touch.read == 0 && touch.n > 0) Die("visit read no bytes");
    return touch.n;
  };
  // What the sidecar does for a Query: each page encoded as its MessagePack
  // reply straight from the stored rows (wire::QueryReplyWriter).
  std::string reply;
  auto engine_reply = [&]() -> size_t {
    struct Encode : query::RowVisitor {
      wire::QueryReplyWriter* w = nullptr;
      Status Visit(const RowView& row) override { return w->Add(row); }
      uint64_t bytes() const override { return w->bytes(); }  // as the sidecar's
    } encode;
    size_t n = 0;
    query::Query page = q;
    for (;;) {
      reply.clear();
      wire::QueryReplyWriter w(&reply, page.select);
      encode.w = &w;
      auto r = query::VisitQuery(*e, page, encode);
      Check(r.status(), "visit");
      std::optional<std::string> npk, nrk;
      if (r->continuation) {
        npk = r->continuation->next_partition_key;
        nrk = r->continuation->next_row_key;
      }
      w.Finish(npk, nrk, query::PlanKindName(r->stats.plan), r->stats.examined);
      n += w.count();
      if (!r->continuation) break;
      page.continuation = std::move(r->continuation);
    }
    return n;
  };
  auto engine_cursor = [&]() -> size_t {
    auto view = e->NewReadView();
    auto cur = e->Scan("scan", ScanBounds::Partition(target_pk), view.get());
    Check(cur.status(), "scan");
    Entity ent;
    size_t n = 0;
    for (RowCursor& r = **cur; r.Valid(); r.Next()) {
      Check(r.Read(&ent), "read");
      n++;
    }
    Check((*cur)->status(), "scan");
    return n;
  };

  struct Sys {
    const char* name;
    std::function<size_t()> run;
    std::vector<double> rates;
    uint64_t hits = 0, reads = 0;  // block cache hits and block reads (I/O), last run
  };
  std::vector<Sys> systems = {
      {"engine: ExecuteQuery, pages of 1,000", engine_query, {}},
      {"engine: VisitQuery, every property read in place", engine_visit, {}},
      {"engine: VisitQuery to MessagePack pages (the sidecar's reply)", engine_reply, {}},
      {"engine: RowCursor + DecodeRow (no query layer)", engine_cursor, {}},
      {"raw RocksDB iterator, key + value copied", raw_scan, {}},
  };
  const size_t raw_index = systems.size() - 1;
  for (auto& s : systems) {
    if (s.run() != c.partition_entities) Die(std::string(s.name) + ": wrong count (warm-up)");
  }
  for (int r = 0; r < c.repeat; r++) {
    std::vector<size_t> order(systems.size());
    for (size_t i = 0; i < order.size(); i++) order[i] = i;
    std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(
                                                   static_cast<size_t>(r) % order.size()),
                order.end());
    for (size_t i : order) {
      // RocksDB counts block cache hits and block reads per thread; counting
      // costs a few instructions per block, the same on every side.
      rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
      rocksdb::get_perf_context()->Reset();
      const auto t0 = Clock::now();
      const size_t n = systems[i].run();
      const double secs = SecondsSince(t0);
      systems[i].hits = rocksdb::get_perf_context()->block_cache_hit_count;
      systems[i].reads = rocksdb::get_perf_context()->block_read_count;
      rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
      if (n != c.partition_entities) Die(std::string(systems[i].name) + ": wrong count");
      systems[i].rates.push_back(static_cast<double>(n) / secs);
      std::fprintf(stderr, "  scan  %-62s %12s entities/s  %10s  blocks: %llu cached, %llu read\n",
                   systems[i].name, WithCommas(systems[i].rates.back()).c_str(),
                   FormatSeconds(secs).c_str(), static_cast<unsigned long long>(systems[i].hits),
                   static_cast<unsigned long long>(systems[i].reads));
    }
  }
  const double raw = Median(systems[raw_index].rates);
  out << "\n### Partition scan: " << WithCommas(static_cast<double>(c.partition_entities))
      << " entities of " << f.row_bytes() << "-byte rows in one partition ("
      << WithCommas(static_cast<double>(total)) << " in the table), medians of " << c.repeat
      << " run(s)\n\n";
  MarkdownTable t({"system", "entities/s", "time per scan", "of raw", "blocks cached / read (last run)",
                   "every run (entities/s)"});
  for (auto& s : systems) {
    const double m = Median(s.rates);
    std::string runs;
    for (double x : s.rates) runs += (runs.empty() ? "" : ", ") + WithCommas(x);
    t.AddRow({s.name, WithCommas(m),
              FormatSeconds(static_cast<double>(c.partition_entities) / m),
              &s == &systems[raw_index] ? "1.00" : "**" + Ratio(m, raw) + "**",
              WithCommas(static_cast<double>(s.hits)) + " / " +
                  WithCommas(static_cast<double>(s.reads)),
              runs});
  }
  t.Print(out);
  out << "\nTarget (issues 3 and 17): the engine's partition scan at least 0.60 of raw "
         "iteration: ExecuteQuery (an Entity per row) "
      << (Median(systems[0].rates) >= 0.6 * raw ? "met" : "NOT met") << " ("
      << Ratio(Median(systems[0].rates), raw) << "), VisitQuery reading every property "
      << (Median(systems[1].rates) >= 0.6 * raw ? "met" : "NOT met") << " ("
      << Ratio(Median(systems[1].rates), raw) << ").\n";
  e.reset();
  db.reset();
  dir.RemoveSub(epath);
  dir.RemoveSub(rpath);
}

// ---- 2 and 3. the big table: selective filters and point queries --------------

void BigTable(const Config& c, ScratchDir& dir, const EntityFactory& f, std::ostream& out) {
  const bool do_filter = Enabled(c, "filter"), do_point = Enabled(c, "point");
  const std::string path = dir.Sub("big-engine");
  const size_t partitions = c.table_entities / kEgt;
  {
    const auto t0 = Clock::now();
    auto e = OpenEngine(path);
    Check(e->CreateTable("big"), "create table");
    for (uint64_t p = 0; p < partitions; p++) {
      LoadEngine(*e, "big", f, p, kEgt, static_cast<int64_t>(p * kEgt));
    }
    std::fprintf(stderr, "big: loaded %s entities in %s\n",
                 WithCommas(static_cast<double>(partitions * kEgt)).c_str(),
                 FormatSeconds(SecondsSince(t0)).c_str());
  }
  auto e = OpenEngine(path);
  ReleaseASnapshot(*e, nullptr);
  Settle(c, {path});

  if (do_filter) {
    const int32_t age = static_cast<int32_t>(
        std::min<size_t>(static_cast<size_t>(c.age), partitions * kEgt - 1));
    const uint64_t in_partition = static_cast<uint64_t>(age) / kEgt;
    // Ten whole partitions around the match.
    const uint64_t lo = in_partition - std::min<uint64_t>(in_partition, 3);
    const uint64_t hi = std::min<uint64_t>(lo + 10, partitions);
    query::Query scan;
    scan.table = "big";
    scan.filter = "Age eq " + std::to_string(age);
    query::Query ranged = scan;
    ranged.filter = "PartitionKey ge '" + EntityFactory::PartitionKey(lo) +
                    "' and PartitionKey lt '" + EntityFactory::PartitionKey(hi) + "' and " +
                    scan.filter;
    struct Variant {
      std::string label;
      query::Query q;
      int inner;  // executions per timed sample (short queries are repeated)
      std::vector<double> secs;
      PagedResult r;
      uint64_t hits = 0, reads = 0;  // block cache hits / block reads, last run
    };
    std::vector<Variant> vs = {
        {"table scan: `" + scan.filter + "`", scan, 1, {}, {}},
        {"key range: `" + ranged.filter + "`", ranged, 20, {}, {}},
    };
    for (auto& v : vs) v.r = RunPaged(*e, v.q);  // warm-up, and the counts
    for (int r = 0; r < c.repeat; r++) {
      for (size_t k = 0; k < vs.size(); k++) {
        Variant& v = vs[(k + static_cast<size_t>(r)) % vs.size()];
        rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
        rocksdb::get_perf_context()->Reset();
        const auto t0 = Clock::now();
        for (int i = 0; i < v.inner; i++) {
          PagedResult got = RunPaged(*e, v.q);
          if (got.returned != 1 || got.examined != v.r.examined) Die(v.label + ": wrong result");
        }
        v.secs.push_back(SecondsSince(t0) / v.inner);
        v.hits = rocksdb::get_perf_context()->block_cache_hit_count / static_cast<uint64_t>(v.inner);
        v.reads = rocksdb::get_perf_context()->block_read_count / static_cast<uint64_t>(v.inner);
        rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
        std::fprintf(stderr, "  filter %-6s %10s  examined %s in %llu pages\n",
                     &v == &vs[0] ? "scan" : "range", FormatSeconds(v.secs.back()).c_str(),
                     WithCommas(static_cast<double>(v.r.examined)).c_str(),
                     static_cast<unsigned long long>(v.r.pages));
      }
    }
    auto plan0 = query::Explain(vs[0].q), plan1 = query::Explain(vs[1].q);
    out << "\n### Selective filter over " << WithCommas(static_cast<double>(partitions * kEgt))
        << " entities (" << WithCommas(static_cast<double>(partitions))
        << " partitions of 100), 1 match, max_examined " << WithCommas(100000)
        << " per page, medians of " << c.repeat << " run(s)\n\n";
    MarkdownTable t({"query", "plan", "pages", "examined", "time (all pages)", "examined/s",
                     "blocks cached / read", "every run"});
    for (size_t i = 0; i < vs.size(); i++) {
      auto& v = vs[i];
      const double m = Median(v.secs);
      std::string runs;
      for (double x : v.secs) runs += (runs.empty() ? "" : ", ") + FormatSeconds(x);
      const auto& plan = i == 0 ? plan0 : plan1;
      t.AddRow({v.label, plan.ok() ? std::string(query::PlanKindName(plan->kind)) : "?",
                std::to_string(v.r.pages), WithCommas(static_cast<double>(v.r.examined)),
                FormatSeconds(m), WithCommas(static_cast<double>(v.r.examined) / m),
                WithCommas(static_cast<double>(v.hits)) + " / " +
                    WithCommas(static_cast<double>(v.reads)),
                runs});
    }
    t.Print(out);
    out << "\nPlanning cut the work by " << Ratio(static_cast<double>(vs[0].r.examined),
                                                 static_cast<double>(vs[1].r.examined))
        << "× in entities examined and " << Ratio(Median(vs[0].secs), Median(vs[1].secs))
        << "× in time.\n";
  }

  if (do_point) {
    std::mt19937_64 rng(11);
    std::vector<std::pair<std::string, std::string>> keys(c.points);
    std::vector<query::Query> queries(c.points);
    for (size_t i = 0; i < c.points; i++) {
      keys[i] = {EntityFactory::PartitionKey(rng() % partitions),
                 EntityFactory::RowKey(rng() % kEgt)};
      queries[i].table = "big";
      queries[i].filter =
          "PartitionKey eq '" + keys[i].first + "' and RowKey eq '" + keys[i].second + "'";
    }
    struct Way {
      const char* label;
      std::function<void(size_t)> call;
      std::vector<double> per_call, p50, p99;
    };
    std::vector<Way> ways = {
        {"Engine::Get", [&](size_t i) {
           auto r = e->Get("big", keys[i].first, keys[i].second);
           if (!r.ok()) Die("get: " + r.status().ToString());
         }, {}, {}, {}},
        {"ExecuteQuery (PartitionKey eq and RowKey eq)", [&](size_t i) {
           auto r = query::ExecuteQuery(*e, queries[i]);
           if (!r.ok() || r->entities.size() != 1) Die("point query failed");
         }, {}, {}, {}},
        {"Explain only (parse + plan, no read)", [&](size_t i) {
           auto r = query::Explain(queries[i]);
           if (!r.ok() || r->kind != query::PlanKind::kPoint) Die("explain failed");
         }, {}, {}, {}},
    };
    for (auto& w : ways) {
      for (size_t i = 0; i < std::min<size_t>(c.points, 1000); i++) w.call(i);  // warm-up
    }
    for (int r = 0; r < c.repeat; r++) {
      for (size_t k = 0; k < ways.size(); k++) {
        Way& w = ways[(k + static_cast<size_t>(r)) % ways.size()];
        Latencies lat;
        lat.Reserve(c.points);
        const auto t0 = Clock::now();
        for (size_t i = 0; i < c.points; i++) {
          const auto op = Clock::now();
          w.call(i);
          lat.Add(NanosSince(op));
        }
        w.per_call.push_back(SecondsSince(t0) / static_cast<double>(c.points));
        w.p50.push_back(lat.PercentileMicros(50));
        w.p99.push_back(lat.PercentileMicros(99));
        std::fprintf(stderr, "  point %-46s %s per call\n", w.label,
                     Micros(w.per_call.back()).c_str());
      }
    }
    out << "\n### Point query: " << WithCommas(static_cast<double>(c.points))
        << " random keys of the same table, medians of " << c.repeat << " run(s)\n\n";
    MarkdownTable t({"call", "calls/s", "mean per call", "p50", "p99", "of Engine::Get"});
    const double get = Median(ways[0].per_call);
    for (auto& w : ways) {
      const double m = Median(w.per_call);
      char p50[32], p99[32];
      std::snprintf(p50, sizeof p50, "%.1f µs", Median(w.p50));
      std::snprintf(p99, sizeof p99, "%.1f µs", Median(w.p99));
      t.AddRow({w.label, WithCommas(1 / m), Micros(m), p50, p99,
                &w == &ways[2] ? "-" : Ratio(get, m)});
    }
    t.Print(out);
    out << "\nOverhead of the query layer per point query: "
        << Micros(Median(ways[1].per_call) - get) << " (Explain alone: "
        << Micros(Median(ways[2].per_call)) << ").\n";
  }
  e.reset();
  dir.RemoveSub(path);
}

int Main(int argc, char** argv) {
  Config c;
  CLI::App app{"sidetable queries vs raw RocksDB iteration"};
  app.add_option("--repeat", c.repeat, "timed runs of each measurement (medians are reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--dir", c.dir, "parent of the scratch directory (a mkdtemp, removed at exit)");
  app.add_flag("--keep", c.keep, "keep the databases");
  app.add_flag("--quick", c.quick, "short smoke run (CI), < 15 s");
  app.add_option("--only", c.only, "comma list of: scan,filter,point");
  app.add_option("--partition-entities", c.partition_entities,
                 "entities in the scanned partition (default 100,000)");
  app.add_option("--neighbours", c.neighbours, "other partitions around it (default 4)");
  app.add_option("--neighbour-entities", c.neighbour_entities,
                 "entities in each other partition (default 5,000)");
  app.add_option("--table-entities", c.table_entities,
                 "entities of the filter/point table, in partitions of 100 (default 1,000,000)");
  app.add_option("--age", c.age, "the Age the selective filter looks for (default 12345)");
  app.add_option("--points", c.points, "point queries per run (default 100,000)");
  CLI11_PARSE(app, argc, argv);
  if (c.quick) {
    c.repeat = 1;
    c.partition_entities = 10000;
    c.neighbour_entities = 1000;
    c.table_entities = 50000;
    c.points = 2000;
  }
  if (c.partition_entities == 0 || c.table_entities < 1000 || c.points == 0) {
    Die("workload sizes too small");
  }

  ScratchDir dir(c.dir, "query_bench.", c.keep);
  std::fprintf(stderr, "query_bench: databases under %s\n", dir.path().c_str());
  EntityFactory f;
  const auto t0 = Clock::now();
  std::ostringstream report;
  report << "\n## query_bench: medians of " << c.repeat << " run(s), entity row "
         << f.row_bytes() << " bytes, loaded in EGTs of 100 (kOs)\n";
  if (Enabled(c, "scan")) PartitionScan(c, dir, f, report);
  if (Enabled(c, "filter") || Enabled(c, "point")) BigTable(c, dir, f, report);
  std::cout << report.str();
  std::fprintf(stderr, "query_bench: done in %s\n", FormatSeconds(SecondsSince(t0)).c_str());
  return 0;
}

}  // namespace
}  // namespace sidetable::bench

int main(int argc, char** argv) { return sidetable::bench::Main(argc, argv); }
