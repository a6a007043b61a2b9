#include "bench/workloads.h"

#include <latch>
#include <random>
#include <thread>
#include <vector>

#include "bench/harness.h"

namespace sidetable::bench {

Sample SingleInserts(Store& s, int table, size_t n) {
  Latencies lat;
  lat.Reserve(n);
  const auto t0 = Clock::now();
  for (size_t i = 0; i < n; i++) {
    const auto op = Clock::now();
    s.Insert(table, i % 1000, i);
    lat.Add(NanosSince(op));
  }
  Sample out;
  out.seconds = SecondsSince(t0);
  out.ops = static_cast<double>(n);
  out.p50_us = lat.PercentileMicros(50);
  out.p99_us = lat.PercentileMicros(99);
  out.note = s.Note();
  return out;
}

Sample ThreadedInserts(Store& s, int table, size_t n, int threads) {
  const size_t per_thread = n / static_cast<size_t>(threads);
  std::vector<Latencies> lat(static_cast<size_t>(threads));
  std::latch start(threads + 1);
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; t++) {
    workers.emplace_back([&, t] {
      Latencies& mine = lat[static_cast<size_t>(t)];
      mine.Reserve(per_thread);
      start.arrive_and_wait();
      for (size_t i = 0; i < per_thread; i++) {
        const auto op = Clock::now();
        s.Insert(table, static_cast<uint64_t>(t), i);
        mine.Add(NanosSince(op));
      }
    });
  }
  start.arrive_and_wait();
  const auto t0 = Clock::now();
  for (auto& w : workers) w.join();
  Sample out;
  out.seconds = SecondsSince(t0);
  out.ops = static_cast<double>(per_thread * static_cast<size_t>(threads));
  Latencies all;
  for (const auto& l : lat) all.Merge(l);
  out.p50_us = all.PercentileMicros(50);
  out.p99_us = all.PercentileMicros(99);
  out.note = s.Note();
  return out;
}

Sample BatchInserts(Store& s, int table, size_t batches, size_t per_batch) {
  Latencies lat;
  lat.Reserve(batches);
  const auto t0 = Clock::now();
  for (size_t b = 0; b < batches; b++) {
    const auto op = Clock::now();
    s.InsertBatch(table, b, 0, per_batch);
    lat.Add(NanosSince(op));
  }
  Sample out;
  out.seconds = SecondsSince(t0);
  out.ops = static_cast<double>(batches * per_batch);
  out.p50_us = lat.PercentileMicros(50);
  out.p99_us = lat.PercentileMicros(99);
  return out;
}

Sample RandomReads(Store& s, int table, size_t batches, size_t per_batch, size_t n) {
  // Keys are drawn before the clock starts, the same sequence for both stores.
  std::mt19937_64 rng(7);
  std::vector<std::pair<uint32_t, uint32_t>> keys(n);
  for (auto& k : keys) {
    k.first = static_cast<uint32_t>(rng() % batches);
    k.second = static_cast<uint32_t>(rng() % per_batch);
  }
  Latencies lat;
  lat.Reserve(n);
  size_t missing = 0;
  const auto t0 = Clock::now();
  for (const auto& [p, r] : keys) {
    const auto op = Clock::now();
    if (!s.Get(table, p, r)) missing++;
    lat.Add(NanosSince(op));
  }
  Sample out;
  out.seconds = SecondsSince(t0);
  if (missing > 0) Die(std::string(s.name()) + ": " + std::to_string(missing) + " reads missed");
  out.ops = static_cast<double>(n);
  out.p50_us = lat.PercentileMicros(50);
  out.p99_us = lat.PercentileMicros(99);
  return out;
}

Sample DropTable(Store& s, int table) {
  const auto t0 = Clock::now();
  s.DeleteTable(table);
  Sample out;
  out.seconds = SecondsSince(t0);
  out.ops = 1;
  return out;
}

}  // namespace sidetable::bench
