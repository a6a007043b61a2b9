// The process the crash test kills: commits the crash workload from several
// threads and prints "ack <id> <lsn>" after each EGT is acknowledged.
//
// usage: engine_crash_child <db> <os|fsync> <round>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "tests/engine/crash_workload.h"

using namespace sidetable;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s <db> <os|fsync> <round>\n", argv[0]);
    return 2;
  }
  EngineOptions o;
  o.durability = std::string(argv[2]) == "fsync" ? Durability::kFsync : Durability::kOs;
  o.block_cache_bytes = 8 << 20;
  o.write_buffer_bytes = 1 << 20;  // small: flushes and compactions happen mid-run
  const int round = std::atoi(argv[3]);
  auto engine = Engine::Open(o, argv[1]);
  if (!engine.ok()) {
    std::fprintf(stderr, "open: %s\n", engine.status().ToString().c_str());
    return 1;
  }
  Status created = (*engine)->CreateTable("Crash");
  if (!created.ok() && created.code() != Code::kTableAlreadyExists) return 1;
  std::printf("ready\n");
  std::fflush(stdout);

  std::mutex out_mu;
  std::vector<std::thread> threads;
  for (int t = 0; t < testing::crash::kThreads; t++) {
    threads.emplace_back([&, t] {
      // Bounded: the parent kills us long before this ends.
      for (int i = 0; i < 90'000; i++) {
        uint64_t id = testing::crash::MakeId(round, t, i);
        auto r = (*engine)->Execute(testing::crash::MakeBatch("Crash", t, i, id));
        if (!r.ok()) {
          std::fprintf(stderr, "egt %llu: %s\n", static_cast<unsigned long long>(id),
                       r.status().ToString().c_str());
          std::_Exit(1);
        }
        std::lock_guard l(out_mu);
        std::printf("ack %llu %llu\n", static_cast<unsigned long long>(id),
                    static_cast<unsigned long long>(r->lsn));
        std::fflush(stdout);
      }
    });
  }
  for (auto& th : threads) th.join();
  return 0;
}
