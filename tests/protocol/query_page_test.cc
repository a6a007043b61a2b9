// The query page fuzz target's entry point (tests/fuzz/query_page_fuzz.cc:
// DecodeQuery, IndexQuery and PeekQueryContinuation must agree) on its seed
// corpus and mutations of it, in the normal suite; the libFuzzer run is
// scripts/fuzz.sh. The seeds must be pages all three readers accept.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "protocol/wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace sidetable::wire {
namespace {

TEST(QueryPageFuzzReplay, SeedsAndMutationsNeverCrashAndReadersAgree) {
  std::vector<std::string> seeds;
  for (const auto& f : std::filesystem::directory_iterator(ST_QUERY_PAGE_CORPUS_DIR)) {
    std::ifstream in(f.path(), std::ios::binary);
    seeds.emplace_back((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  ASSERT_GE(seeds.size(), 5u);
  std::mt19937 rng(7);
  size_t accepted = 0, refused = 0;
  for (const auto& seed : seeds) {
    QueryReply full;
    QueryIndex index;
    ASSERT_TRUE(DecodeQuery(seed, &full).ok()) << "seed must be valid";
    ASSERT_TRUE(IndexQuery(seed, &index).ok());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(seed.data()), seed.size());
    for (int i = 0; i < 3000; i++) {
      std::string f = seed;
      for (int k = 0; k < 1 + static_cast<int>(rng() % 3); k++) f[rng() % f.size()] = static_cast<char>(rng());
      if (rng() % 4 == 0) f.resize(rng() % f.size());
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(f.data()), f.size());
      QueryReply out;
      (DecodeQuery(f, &out).ok() ? accepted : refused)++;
    }
  }
  // Both verdicts were exercised.
  EXPECT_GT(accepted, 0u);
  EXPECT_GT(refused, 0u);
}

}  // namespace
}  // namespace sidetable::wire
