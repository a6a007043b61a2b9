// engine_bench: the sidetable engine side by side with raw RocksDB.
//
// Every workload runs on each system in the same process and run, each on a
// fresh database under --dir, --repeat times (the order of the systems
// rotates between repeats to spread drift); we print medians and the ratios
// engine/raw and engine/(raw+outbox) as markdown. The systems:
//   engine      the sidetable engine (Entity, Batch, validation, change log)
//   raw         raw RocksDB, one Put (or WriteBatch) of the same key and row
//   raw+outbox  raw RocksDB that also writes a change record of the engine's
//               size into a second column family in the same WriteBatch: the
//               transactional outbox's inherent cost, without the engine
// docs/performance.md explains the workloads and what the engine does that
// raw RocksDB does not.
//
//   engine_bench --durability os
//   engine_bench --durability fsync          (smaller defaults for inserts)
//   engine_bench --quick                     (CI smoke run, < 20 s)
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "bench/entity_factory.h"
#include "bench/harness.h"
#include "bench/stores.h"
#include "bench/workloads.h"

namespace sidetable::bench {
namespace {

struct Config {
  std::string durability = "os";
  int repeat = 3;
  std::string dir = "/tmp";
  bool keep = false;
  bool quick = false;
  std::string only;  // comma-separated workload ids; empty = all
  std::string systems = "all";  // comma list of engine,raw,raw+outbox; all; both = engine,raw
  size_t inserts = 0;     // 0: 200,000 (os) / 5,000 (fsync)
  size_t mt_inserts = 0;  // 0: 200,000 (os) / 20,000 (fsync)
  int threads = 8;
  size_t egts = 2000;
  size_t egt_size = 100;
  size_t reads = 200000;
  size_t delete_entities = 1000000;
};

enum class System { kEngine, kRaw, kRawOutbox };
constexpr System kAllSystems[] = {System::kEngine, System::kRaw, System::kRawOutbox};

const char* SystemName(System s) {
  switch (s) {
    case System::kEngine: return "engine";
    case System::kRaw: return "raw";
    case System::kRawOutbox: return "raw+outbox";
  }
  return "";
}

// "all", "both" (engine,raw, as before raw+outbox existed) or a comma list.
std::vector<System> ParseSystems(const std::string& spec) {
  if (spec == "all") return {std::begin(kAllSystems), std::end(kAllSystems)};
  if (spec == "both") return {System::kEngine, System::kRaw};
  std::vector<System> out;
  std::stringstream ss(spec);
  for (std::string item; std::getline(ss, item, ',');) {
    bool found = false;
    for (System s : kAllSystems) {
      if (item == SystemName(s)) {
        if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
        found = true;
      }
    }
    if (!found) Die("--systems: unknown system '" + item + "' (engine, raw, raw+outbox)");
  }
  if (out.empty()) Die("--systems: empty");
  return out;
}

// Results: workload id -> system -> one sample per repeat.
using Results = std::map<std::string, std::map<System, std::vector<Sample>>>;

class Runner {
 public:
  Runner(const Config& c, ScratchDir* dir) : c_(c), dir_(dir), systems_(ParseSystems(c.systems)) {}

  bool Enabled(const std::string& id) const {
    if (c_.only.empty()) return true;
    std::stringstream ss(c_.only);
    for (std::string item; std::getline(ss, item, ',');) {
      if (item == id) return true;
    }
    return false;
  }

  // Runs fn on a fresh store of `sys`, then closes and removes it.
  void WithStore(System sys, bool sync, const std::function<void(Store&)>& fn) {
    const std::string path = dir_->Sub(DirName(sys));
    {
      auto store = Open(sys, path, sync);
      fn(*store);
    }
    dir_->RemoveSub(path);
  }

  std::unique_ptr<Store> Open(System sys, const std::string& path, bool sync) {
    StoreOptions o;
    o.sync = sync;
    switch (sys) {
      case System::kEngine: return OpenEngineStore(path, o, factory_);
      case System::kRaw: return OpenRawStore(path, o, factory_);
      case System::kRawOutbox: return OpenRawOutboxStore(path, o, factory_);
    }
    return nullptr;
  }

  static std::string DirName(System sys) {
    return sys == System::kRawOutbox ? "raw-outbox" : SystemName(sys);
  }

  void Record(const std::string& id, System sys, const Sample& s) {
    results_[id][sys].push_back(s);
    std::fprintf(stderr, "  %-8s %-10s %12s/s  %10s", id.c_str(), SystemName(sys),
                 s.ops > 1 ? WithCommas(s.rate()).c_str() : "-", FormatSeconds(s.seconds).c_str());
    if (s.p50_us > 0) std::fprintf(stderr, "  p50 %.1f µs p99 %.1f µs", s.p50_us, s.p99_us);
    if (!s.note.empty()) std::fprintf(stderr, "  [%s]", s.note.c_str());
    std::fprintf(stderr, "\n");
  }

  void RunRepeat(int r) {
    const bool sync = c_.durability == "fsync";
    // Rotate the order by one each repeat, so no system always runs first
    // (or always right after another's compactions).
    std::vector<System> order = systems_;
    std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(
                                                   static_cast<size_t>(r) % order.size()),
                order.end());
    for (System sys : order) {
      if (!Enabled("single")) break;
      WithStore(sys, sync, [&](Store& s) {
        s.CreateTable(1);
        Record("single", sys, SingleInserts(s, 1, c_.inserts));
      });
    }
    for (System sys : order) {
      if (!Enabled("threads")) break;
      WithStore(sys, sync, [&](Store& s) {
        s.CreateTable(1);
        Record("threads", sys, ThreadedInserts(s, 1, c_.mt_inserts, c_.threads));
      });
    }
    for (System sys : order) {
      if (!Enabled("egt") && !Enabled("read")) break;
      WithStore(sys, sync, [&](Store& s) {
        s.CreateTable(1);
        Record("egt", sys, BatchInserts(s, 1, c_.egts, c_.egt_size));
        if (Enabled("read")) {
          Record("read", sys, RandomReads(s, 1, c_.egts, c_.egt_size, c_.reads));
        }
      });
    }
    for (System sys : order) {
      if (!Enabled("delete")) break;
      // Load with kOs / no sync, then reopen in the mode under test and drop.
      const std::string path = dir_->Sub(DirName(sys));
      {
        auto store = Open(sys, path, /*sync=*/false);
        store->CreateTable(1);
        Record("load", sys, BatchInserts(*store, 1, c_.delete_entities / 100, 100));
      }
      {
        auto store = Open(sys, path, sync);
        Record("delete", sys, DropTable(*store, 1));
      }
      dir_->RemoveSub(path);
    }
  }

  void Report(std::ostream& out) {
    const bool sync = c_.durability == "fsync";
    out << "\n## engine_bench: durability " << c_.durability << ", medians of " << c_.repeat
        << " run(s), entity row " << factory_.row_bytes() << " bytes\n\n";
    std::vector<std::string> header{"workload"};
    for (System sys : systems_) header.push_back(Title(sys));
    const bool both_raw = Has(System::kRaw) && Has(System::kRawOutbox);
    if (Has(System::kEngine) && Has(System::kRaw)) header.push_back("engine/raw");
    if (Has(System::kEngine) && Has(System::kRawOutbox)) header.push_back("engine/(raw+outbox)");
    if (both_raw) header.push_back("(raw+outbox)/raw");
    MarkdownTable t(header);
    // value: a rate (higher is better) or a time (lower is better); ratios
    // are always "how much of the other's rate" (so > 1 is faster).
    auto row = [&](const std::string& id, const std::string& label, bool is_time,
                   const char* unit) {
      if (!results_.count(id)) return;
      std::map<System, double> m;
      std::vector<std::string> cells{label};
      for (System sys : systems_) {
        m[sys] = Median(is_time ? Times(id, sys) : Rates(id, sys));
        cells.push_back(is_time ? FormatSeconds(m[sys]) : WithCommas(m[sys]) + unit);
      }
      auto ratio = [&](System a, System b) {
        return is_time ? Ratio(m[b], m[a]) : Ratio(m[a], m[b]);
      };
      if (Has(System::kEngine) && Has(System::kRaw)) {
        cells.push_back("**" + ratio(System::kEngine, System::kRaw) + "**");
      }
      if (Has(System::kEngine) && Has(System::kRawOutbox)) {
        cells.push_back("**" + ratio(System::kEngine, System::kRawOutbox) + "**");
      }
      if (both_raw) cells.push_back(ratio(System::kRawOutbox, System::kRaw));
      t.AddRow(cells);
    };
    row("single", "single inserts, 1 thread, N=" + WithCommas(c_.inserts), false, " /s");
    row("threads", "single inserts, " + std::to_string(c_.threads) + " threads, N=" +
                       WithCommas(c_.mt_inserts), false, " /s");
    row("egt", "EGTs of " + std::to_string(c_.egt_size) + ", " + WithCommas(c_.egts) +
                   " batches", false, " entities/s");
    row("read", "point reads (random Get), N=" + WithCommas(c_.reads), false, " /s");
    row("load", "load " + WithCommas(c_.delete_entities) + " entities (EGTs of 100, os)", true, "");
    row("delete", std::string("delete table of ") + WithCommas(c_.delete_entities) +
                      " entities (" + (sync ? "fsync" : "os") + ")", true, "");
    t.Print(out);
    out << "\nRatios are of rates (for load and delete: inverse of times); > 1 means the "
           "first is faster.\n";

    out << "\nLatency per call (medians over runs of each run's percentile):\n\n";
    std::vector<std::string> lh{"workload"};
    for (System sys : systems_) {
      lh.push_back(std::string(SystemName(sys)) + " p50");
      lh.push_back(std::string(SystemName(sys)) + " p99");
    }
    MarkdownTable l(lh);
    for (const char* id : {"single", "threads", "egt", "read"}) {
      if (!results_.count(id)) continue;
      std::vector<std::string> cells{id};
      for (System sys : systems_) {
        cells.push_back(Micros(id, sys, true));
        cells.push_back(Micros(id, sys, false));
      }
      l.AddRow(cells);
    }
    l.Print(out);

    out << "\nEvery run (rate /s, or time for load and delete):\n\n";
    std::vector<std::string> ah{"workload"};
    for (System sys : systems_) ah.push_back(Title(sys));
    MarkdownTable all(ah);
    for (const auto& [id, by_sys] : results_) {
      std::vector<std::string> cells{id};
      for (System sys : systems_) {
        std::string s;
        auto it = by_sys.find(sys);
        if (it == by_sys.end()) {
          cells.push_back("-");
          continue;
        }
        for (const Sample& x : it->second) {
          if (!s.empty()) s += ", ";
          s += (id == "load" || id == "delete") ? FormatSeconds(x.seconds) : WithCommas(x.rate());
        }
        cells.push_back(s);
      }
      all.AddRow(cells);
    }
    all.Print(out);
    if (!results_["threads"][System::kEngine].empty()) {
      out << "\nEngine group commit, " << c_.threads
          << " threads: " << results_["threads"][System::kEngine].back().note << "\n";
    }
  }

 private:
  std::vector<double> Rates(const std::string& id, System sys) {
    std::vector<double> v;
    for (const Sample& s : results_[id][sys]) v.push_back(s.rate());
    return v;
  }
  std::vector<double> Times(const std::string& id, System sys) {
    std::vector<double> v;
    for (const Sample& s : results_[id][sys]) v.push_back(s.seconds);
    return v;
  }
  std::string Micros(const std::string& id, System sys, bool p50) {
    std::vector<double> v;
    for (const Sample& s : results_[id][sys]) v.push_back(p50 ? s.p50_us : s.p99_us);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f µs", Median(v));
    return buf;
  }
  static std::string Ratio(double num, double den) {
    char buf[32];
    if (num <= 0 || den <= 0) return "-";
    std::snprintf(buf, sizeof buf, "%.2f", num / den);
    return buf;
  }

  bool Has(System sys) const {
    return std::find(systems_.begin(), systems_.end(), sys) != systems_.end();
  }
  static std::string Title(System sys) {
    switch (sys) {
      case System::kEngine: return "engine";
      case System::kRaw: return "raw RocksDB";
      case System::kRawOutbox: return "raw+outbox";
    }
    return "";
  }

  const Config& c_;
  ScratchDir* dir_;
  std::vector<System> systems_;
  EntityFactory factory_;
  Results results_;
};

int Main(int argc, char** argv) {
  Config c;
  CLI::App app{"sidetable engine vs raw RocksDB"};
  app.add_option("--durability", c.durability, "os or fsync")
      ->check(CLI::IsMember({"os", "fsync"}));
  app.add_option("--repeat", c.repeat, "runs of each workload (medians are reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--dir", c.dir, "parent of the scratch directory (a mkdtemp, removed at exit)");
  app.add_flag("--keep", c.keep, "keep the databases");
  app.add_flag("--quick", c.quick, "short smoke run (CI)");
  app.add_option("--only", c.only, "comma list of: single,threads,egt,read,delete");
  app.add_option("--systems", c.systems,
                 "comma list of engine,raw,raw+outbox; all (default); both = engine,raw "
                 "(one alone: for profiling)");
  app.add_option("--inserts", c.inserts, "single inserts, 1 thread (default 200k; fsync 5k)");
  app.add_option("--mt-inserts", c.mt_inserts,
                 "single inserts over all threads (default 200k; fsync 20k)");
  app.add_option("--threads", c.threads, "threads of the threaded insert workload")
      ->check(CLI::PositiveNumber);
  app.add_option("--egts", c.egts, "EGTs of 100 (their entities are then read)");
  app.add_option("--reads", c.reads, "random point reads");
  app.add_option("--delete-entities", c.delete_entities, "entities in the table to delete");
  CLI11_PARSE(app, argc, argv);

  const bool sync = c.durability == "fsync";
  if (c.quick) {
    c.repeat = 1;
    c.inserts = sync ? 1000 : 5000;
    c.mt_inserts = sync ? 2000 : 8000;
    c.egts = 50;
    c.reads = 5000;
    c.delete_entities = 20000;
  }
  if (c.inserts == 0) c.inserts = sync ? 5000 : 200000;
  if (c.mt_inserts == 0) c.mt_inserts = sync ? 20000 : 200000;
  if (c.egts == 0 || c.reads == 0 || c.delete_entities < 100) Die("workload sizes too small");

  ParseSystems(c.systems);  // fail on a bad list before any work
  ScratchDir dir(c.dir, "engine_bench.", c.keep);
  std::fprintf(stderr, "engine_bench: databases under %s\n", dir.path().c_str());
  Runner runner(c, &dir);
  const auto t0 = Clock::now();
  for (int r = 0; r < c.repeat; r++) {
    std::fprintf(stderr, "run %d/%d\n", r + 1, c.repeat);
    runner.RunRepeat(r);
  }
  runner.Report(std::cout);
  std::fprintf(stderr, "engine_bench: done in %s\n", FormatSeconds(SecondsSince(t0)).c_str());
  return 0;
}

}  // namespace
}  // namespace sidetable::bench

int main(int argc, char** argv) { return sidetable::bench::Main(argc, argv); }
