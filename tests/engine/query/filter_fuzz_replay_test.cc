// Runs the libFuzzer entry point (tests/fuzz/filter_fuzz.cc, linked in) over
// a deterministic set of inputs, so the fuzz checks (error format, tree
// invariants, canonical round trip, evaluation) run in every unit-test run
// without libFuzzer. A violated check aborts the binary with the input.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "engine/query/filter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace sidetable::query {
namespace {

const std::vector<std::string>& Seeds() {
  static const std::vector<std::string> seeds = {
      "PartitionKey eq 'Sales' and RowKey eq 'empid_000223'",
      "(PartitionKey eq 'Sales') and (RowKey ge 'a' and RowKey lt 'b')",
      "Age gt 30 or not (Name eq 'it''s' and Active eq true)",
      "Big le 123L and Score ge -1.5E-3 and Nan ne 2e10",
      "Born lt datetime'2014-08-22T00:50:32.1234567Z' or Timestamp ge datetime'2014-08-22T00:50Z'",
      "Id eq guid'c9da6455-213d-42c9-9a79-3e9149a57833' and Blob gt X'0A' or Blob lt binary'ff'",
      "not not (a eq 1 or b eq 'b') and (c eq 0.0 or x eq -1L) and y eq false",
      "5 lt a and 'b' ge b and X'0A1B' eq Blob",
      "Name eq '\xF0\x9F\x98\x80\xEF\xBC\xA1' or RowKey gt '\xEE\x80\x80'",
      "((((a eq 1))))",
  };
  return seeds;
}

class Inputs {
 public:
  explicit Inputs(uint64_t seed) : rng_(seed) {}

  std::string Next() {
    switch (Below(5)) {
      case 0: return TokenSoup(true);
      case 4: return Grammatical(3);
      case 1: return TokenSoup(false);
      case 2: return Mutate(Seeds()[Below(Seeds().size())]);
      default: {
        std::string s(Below(64), '\0');
        for (char& c : s) c = static_cast<char>(rng_());
        return s;
      }
    }
  }

 private:
  size_t Below(size_t n) { return static_cast<size_t>(rng_() % n); }

  // Mostly valid filters built from the grammar, so the accepting path
  // (invariants, round trip, evaluation) gets as much traffic as errors.
  std::string Grammatical(int depth) {
    static const char* kNames[] = {"a", "b", "c", "x", "y", "Age", "Name", "Nan", "Blob", "Id",
                                   "PartitionKey", "RowKey", "Timestamp", "Missing"};
    static const char* kOps[] = {"eq", "ne", "gt", "ge", "lt", "le"};
    static const char* kLiterals[] = {
        "1", "-1", "36", "0", "1L", "-1L", "1099511627776L", "0.0", "1.5", "-1.5E-3", "2e10",
        "true", "false", "'b'", "'Ada'", "'pk'", "'rk'", "''", "'it''s'", "'\xF0\x9F\x98\x80'",
        "datetime'2014-08-22T00:50:32Z'", "guid'c9da6455-213d-42c9-9a79-3e9149a57833'", "X'0A1B'",
        "X''"};
    if (depth == 0 || Below(3) == 0) {
      const std::string name = kNames[Below(std::size(kNames))];
      const std::string op = kOps[Below(std::size(kOps))];
      const std::string lit = kLiterals[Below(std::size(kLiterals))];
      return Below(4) == 0 ? lit + " " + op + " " + name : name + " " + op + " " + lit;
    }
    switch (Below(3)) {
      case 0: return "not (" + Grammatical(depth - 1) + ")";
      case 1: return "(" + Grammatical(depth - 1) + ") and " + Grammatical(depth - 1);
      default: return Grammatical(depth - 1) + " or " + Grammatical(depth - 1);
    }
  }

  std::string TokenSoup(bool spaced) {
    static const char* kTokens[] = {
        "a", "b", "Age", "PartitionKey", "RowKey", "Timestamp", "eq", "ne", "gt", "ge", "lt", "le",
        "and", "or", "not", "(", ")", "'x'", "''", "'it''s'", "1", "-5", "1L", "1.5", "2e10", "1d",
        "true", "false", "datetime'2014-08-22T00:50:32Z'", "guid'c9da6455-213d-42c9-9a79-3e9149a57833'",
        "X'0A'", "binary'ff'", "'", "-", "AND", "2147483648", "\xF0\x9F\x98\x80", "\xFF"};
    std::string s;
    for (size_t n = 1 + Below(16); n > 0; n--) {
      if (!s.empty() && (spaced || Below(4) == 0)) s += ' ';
      s += kTokens[Below(std::size(kTokens))];
    }
    return s;
  }

  std::string Mutate(std::string s) {
    for (size_t k = 1 + Below(4); k > 0; k--) {
      const size_t at = s.empty() ? 0 : Below(s.size());
      switch (Below(5)) {
        case 0: if (!s.empty()) s[at] = static_cast<char>(s[at] ^ (1 << Below(8))); break;
        case 1: s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), static_cast<char>(rng_())); break;
        case 2: if (!s.empty()) s.erase(at, 1 + Below(4)); break;
        case 3: s.insert(at, s.substr(Below(s.size() + 1), Below(12))); break;
        default: {
          const std::string& other = Seeds()[Below(Seeds().size())];
          s = s.substr(0, at) + other.substr(Below(other.size()));
        }
      }
    }
    return s;
  }

  std::mt19937_64 rng_;
};

int FuzzOne(const std::string& s) {
  return LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

TEST(FilterFuzzReplay, TwentyThousandDeterministicInputs) {
  Inputs inputs(20240822);
  int accepted = 0, rejected = 0;
  for (int i = 0; i < 20000; i++) {
    const std::string s = inputs.Next();
    EXPECT_EQ(FuzzOne(s), 0);
    (ParseFilter(s).ok() ? accepted : rejected)++;
  }
  // Both paths must actually be exercised for the replay to mean anything.
  EXPECT_GT(accepted, 3000);
  EXPECT_GT(rejected, 1000);
}

TEST(FilterFuzzReplay, SeedCorpusIsValid) {
  const std::filesystem::path dir = ST_FILTER_CORPUS_DIR;
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path(), std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(FuzzOne(text), 0);
    auto r = ParseFilter(text);
    EXPECT_TRUE(r.ok()) << entry.path() << ": " << r.status().message();
    files++;
  }
  EXPECT_GE(files, 12);
}

}  // namespace
}  // namespace sidetable::query
