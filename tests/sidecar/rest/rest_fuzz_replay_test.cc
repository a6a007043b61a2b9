// Runs the REST parsers' fuzz target (rest_fuzz.cc, linked in) over its
// seed corpus (tests/fuzz/corpus/rest) and deterministic mutations of it,
// so its invariants are checked in every unit-test run without libFuzzer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

int FuzzOne(const std::string& s) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

std::vector<std::string> Seeds() {
  std::vector<std::string> seeds;
  for (const auto& entry : std::filesystem::directory_iterator(ST_REST_CORPUS_DIR)) {
    std::ifstream in(entry.path(), std::ios::binary);
    seeds.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  return seeds;
}

TEST(RestFuzzReplay, SeedCorpus) {
  const auto seeds = Seeds();
  ASSERT_GE(seeds.size(), 6u);
  for (const auto& s : seeds) EXPECT_EQ(FuzzOne(s), 0);
}

TEST(RestFuzzReplay, FiftyThousandMutations) {
  const auto seeds = Seeds();
  ASSERT_FALSE(seeds.empty());
  std::mt19937 rng(18);
  for (int i = 0; i < 50000; i++) {
    std::string s = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < edits && !s.empty(); k++) {
      const size_t at = 1 + rng() % std::max<size_t>(1, s.size() - 1);
      switch (rng() % 3) {
        case 0: if (at < s.size()) s[at] = static_cast<char>(rng()); break;
        case 1: if (at < s.size()) s.erase(at, 1 + rng() % 8); break;
        case 2: s.insert(std::min(at, s.size()), std::string(1 + rng() % 4, "-\r\n'(){}\":,%"[rng() % 12])); break;
      }
    }
    ASSERT_EQ(FuzzOne(s), 0);
  }
}

}  // namespace
