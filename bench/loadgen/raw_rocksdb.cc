// sidetable-rawref: the raw RocksDB reference for bench/compare, in process.
//
// It reuses engine_bench's raw store (bench/stores.h: OpenRawStore, RocksDB
// opened with the options engine/engine_open.cc gives the engine, keys of the
// engine's format, values of exactly the engine's encoded-row bytes for the
// same ~1 KiB entity as bench/entity_factory.h), and times three workloads:
//
//   single  N single Puts over 1,000 partitions, from --threads threads
//   get     N random Gets of M entities loaded first (WriteBatches of 100)
//   egt     N WriteBatches of 100 Puts, one partition each, one thread
//
// There is no "in flight" in process: each thread does one call at a time.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/entity_factory.h"
#include "bench/harness.h"
#include "bench/stores.h"

using namespace sidetable::bench;

int main(int argc, char** argv) {
  CLI::App app{"sidetable-rawref: raw RocksDB reference (bench/stores.h raw store)"};
  std::string workload = "single", durability = "os", dir = "/tmp", json_path, label;
  uint64_t n = 200000, loaded = 100000;
  int threads = 1;
  app.add_option("--workload", workload, "single, get or egt")
      ->check(CLI::IsMember({"single", "get", "egt"}))->capture_default_str();
  app.add_option("--n", n, "operations (egt: batches of 100)")->capture_default_str();
  app.add_option("--loaded", loaded, "get: entities loaded first")->capture_default_str();
  app.add_option("--threads", threads, "threads (single, get)")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--durability", durability, "os (no sync) or fsync (sync every write)")
      ->check(CLI::IsMember({"os", "fsync"}))->capture_default_str();
  app.add_option("--dir", dir, "parent of the scratch database directory")->capture_default_str();
  app.add_option("--json", json_path, "append the result as JSON to this file");
  app.add_option("--label", label, "a name for this run");
  CLI11_PARSE(app, argc, argv);

  EntityFactory factory;
  ScratchDir scratch(dir, "sidetable-rawref-", /*keep=*/false);
  StoreOptions so;
  so.sync = durability == "fsync";
  auto store = OpenRawStore(scratch.Sub("raw"), so, factory);
  store->CreateTable(1);

  if (workload == "get") {
    for (uint64_t first = 0; first < loaded; first += 100)
      store->InsertBatch(1, first / 100 % 1000, first, std::min<uint64_t>(100, loaded - first));
  }
  if (workload == "egt") threads = 1;

  std::vector<Latencies> lat(static_cast<size_t>(threads));
  std::atomic<uint64_t> missing{0};
  const auto t0 = Clock::now();
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; t++) {
    ts.emplace_back([&, t] {
      const uint64_t per = n / static_cast<uint64_t>(threads);
      const uint64_t begin = per * static_cast<uint64_t>(t);
      Latencies& l = lat[static_cast<size_t>(t)];
      l.Reserve(per);
      std::mt19937_64 rng(1234 + static_cast<uint64_t>(t));
      for (uint64_t i = begin; i < begin + per; i++) {
        const auto c0 = Clock::now();
        if (workload == "single") {
          store->Insert(1, i % 1000, i);
        } else if (workload == "get") {
          const uint64_t row = rng() % loaded;
          if (!store->Get(1, row / 100 % 1000, row)) missing++;
        } else {
          store->InsertBatch(1, 1000 + i, 0, 100);
        }
        l.Add(NanosSince(c0));
      }
    });
  }
  for (auto& t : ts) t.join();
  const double seconds = SecondsSince(t0);
  Latencies all;
  for (auto& l : lat) all.Merge(l);
  const uint64_t done = n / static_cast<uint64_t>(threads) * static_cast<uint64_t>(threads);
  const double ops_s = static_cast<double>(done) / seconds;
  const double ent_s = workload == "egt" ? ops_s * 100 : ops_s;
  const double p50 = all.PercentileMicros(50), p99 = all.PercentileMicros(99);
  std::printf("raw rocksdb %s %s, %d thread(s), %s: %llu ops in %.2f s: %.0f ops/s, %.0f entities/s, "
              "p50 %.1f us, p99 %.1f us%s\n",
              label.c_str(), workload.c_str(), threads, durability.c_str(),
              static_cast<unsigned long long>(done), seconds, ops_s, ent_s, p50, p99,
              missing ? " (SOME GETS MISSED)" : "");
  if (!json_path.empty()) {
    std::ofstream f(json_path, std::ios::app);
    f << "{\"label\":\"" << label << "\",\"workload\":\"" << workload << "\",\"threads\":" << threads
      << ",\"ops_per_s\":" << ops_s << ",\"entities_per_s\":" << ent_s << ",\"p50_us\":" << p50
      << ",\"p99_us\":" << p99 << ",\"missing\":" << missing.load() << "}\n";
  }
  return missing ? 1 : 0;
}
