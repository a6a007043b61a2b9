// engine_bench: the sidetable engine side by side with raw RocksDB.
//
// Every workload runs on both systems in the same process and run, each on a
// fresh database under --dir, --repeat times (the order of the two systems
// alternates between repeats to spread drift); we print medians and the
// ratio engine/raw as markdown. docs/performance.md explains the workloads
// and what the engine does that raw RocksDB does not.
//
//   engine_bench --durability os
//   engine_bench --durability fsync          (smaller defaults for inserts)
//   engine_bench --quick                     (CI smoke run, < 20 s)
#include <CLI/CLI.hpp>

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
  std::string systems = "both";  // engine, raw or both (one alone for profiling)
  size_t inserts = 0;     // 0: 200,000 (os) / 5,000 (fsync)
  size_t mt_inserts = 0;  // 0: 200,000 (os) / 20,000 (fsync)
  int threads = 8;
  size_t egts = 2000;
  size_t egt_size = 100;
  size_t reads = 200000;
  size_t delete_entities = 1000000;
};

enum class System { kEngine, kRaw };

// Results: workload id -> system -> one sample per repeat.
using Results = std::map<std::string, std::map<System, std::vector<Sample>>>;

class Runner {
 public:
  Runner(const Config& c, ScratchDir* dir) : c_(c), dir_(dir) {}

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
    const std::string path = dir_->Sub(sys == System::kEngine ? "engine" : "raw");
    {
      auto store = Open(sys, path, sync);
      fn(*store);
    }
    dir_->RemoveSub(path);
  }

  std::unique_ptr<Store> Open(System sys, const std::string& path, bool sync) {
    StoreOptions o;
    o.sync = sync;
    return sys == System::kEngine ? OpenEngineStore(path, o, factory_)
                                  : OpenRawStore(path, o, factory_);
  }

  void Record(const std::string& id, System sys, const Sample& s) {
    results_[id][sys].push_back(s);
    std::fprintf(stderr, "  %-8s %-6s %12s/s  %10s", id.c_str(),
                 sys == System::kEngine ? "engine" : "raw",
                 s.ops > 1 ? WithCommas(s.rate()).c_str() : "-", FormatSeconds(s.seconds).c_str());
    if (s.p50_us > 0) std::fprintf(stderr, "  p50 %.1f µs p99 %.1f µs", s.p50_us, s.p99_us);
    if (!s.note.empty()) std::fprintf(stderr, "  [%s]", s.note.c_str());
    std::fprintf(stderr, "\n");
  }

  void RunRepeat(int r) {
    const bool sync = c_.durability == "fsync";
    std::vector<System> order = r % 2 == 0 ? std::vector{System::kEngine, System::kRaw}
                                           : std::vector{System::kRaw, System::kEngine};
    if (c_.systems != "both") {
      order = {c_.systems == "engine" ? System::kEngine : System::kRaw};
    }
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
      const std::string path = dir_->Sub(sys == System::kEngine ? "engine" : "raw");
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
    MarkdownTable t({"workload", "engine", "raw RocksDB", "engine/raw"});
    auto rate_row = [&](const std::string& id, const std::string& label, const char* unit) {
      if (!results_.count(id)) return;
      double e = Median(Rates(id, System::kEngine)), r = Median(Rates(id, System::kRaw));
      t.AddRow({label, WithCommas(e) + unit, WithCommas(r) + unit, Ratio(e, r)});
    };
    auto time_row = [&](const std::string& id, const std::string& label) {
      if (!results_.count(id)) return;
      double e = Median(Times(id, System::kEngine)), r = Median(Times(id, System::kRaw));
      t.AddRow({label, FormatSeconds(e), FormatSeconds(r), Ratio(r, e) + " (time ×" + Ratio(e, r) + ")"});
    };
    rate_row("single", "single inserts, 1 thread, N=" + WithCommas(c_.inserts), " /s");
    rate_row("threads", "single inserts, " + std::to_string(c_.threads) + " threads, N=" +
                            WithCommas(c_.mt_inserts), " /s");
    rate_row("egt", "EGTs of " + std::to_string(c_.egt_size) + ", " + WithCommas(c_.egts) +
                        " batches", " entities/s");
    rate_row("read", "point reads (random Get), N=" + WithCommas(c_.reads), " /s");
    time_row("load", "load " + WithCommas(c_.delete_entities) + " entities (EGTs of 100, os)");
    time_row("delete", std::string("delete table of ") + WithCommas(c_.delete_entities) +
                           " entities (" + (sync ? "fsync" : "os") + ")");
    t.Print(out);

    out << "\nLatency per call (medians over runs of each run's percentile):\n\n";
    MarkdownTable l({"workload", "engine p50", "engine p99", "raw p50", "raw p99"});
    for (const char* id : {"single", "threads", "egt", "read"}) {
      if (!results_.count(id)) continue;
      l.AddRow({id, Micros(id, System::kEngine, true), Micros(id, System::kEngine, false),
                Micros(id, System::kRaw, true), Micros(id, System::kRaw, false)});
    }
    l.Print(out);

    out << "\nEvery run (rate /s, or time for load and delete):\n\n";
    MarkdownTable all({"workload", "engine", "raw RocksDB"});
    for (const auto& [id, by_sys] : results_) {
      std::vector<std::string> cells{id};
      for (System sys : {System::kEngine, System::kRaw}) {
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

  const Config& c_;
  ScratchDir* dir_;
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
  app.add_option("--systems", c.systems, "engine, raw or both (one alone: for profiling)")
      ->check(CLI::IsMember({"engine", "raw", "both"}));
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
