// The CRC32C that RocksDB's checksums go through (engine/internal/crc32c.h):
// the same bits as RocksDB's own routine, and really used by the library.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>

#include "engine/internal/crc32c.h"
#include "tests/engine/engine_fixture.h"

namespace sidetable {
namespace {

using internal::Crc32cExtend;
using internal::RocksDbCrc32cExtend;

uint32_t Crc(const std::string& s) { return Crc32cExtend(0, s.data(), s.size()); }

// RFC 3720 (iSCSI), appendix B.4, and the common "123456789" check value.
TEST(Crc32cTest, KnownAnswers) {
  EXPECT_EQ(Crc(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(Crc(std::string(32, '\xff')), 0x62A8AB43u);
  std::string up, down;
  for (int i = 0; i < 32; i++) {
    up.push_back(static_cast<char>(i));
    down.push_back(static_cast<char>(31 - i));
  }
  EXPECT_EQ(Crc(up), 0x46DD794Eu);
  EXPECT_EQ(Crc(down), 0x113FDB5Cu);
  EXPECT_EQ(Crc("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc(""), 0u);
}

// Every length up to 1,100 bytes at every alignment of the first byte, the
// lengths around the three-lane blocks, and a 300 KB buffer (an EGT's WAL
// record), against RocksDB's routine; and Extend continues a CRC like
// RocksDB's does, at any split.
TEST(Crc32cTest, SameBitsAsRocksDbsRoutine) {
  std::mt19937_64 rng(17);
  std::string buf(300 * 1024 + 8, '\0');
  for (char& c : buf) c = static_cast<char>(rng());
  for (size_t offset = 0; offset < 8; offset++) {
    for (size_t n = 0; n <= 1100; n++) {
      ASSERT_EQ(Crc32cExtend(0, buf.data() + offset, n), RocksDbCrc32cExtend(0, buf.data() + offset, n))
          << "offset " << offset << ", " << n << " bytes";
    }
  }
  // Around the three-lane blocks (3 x 512 bytes): shorter, exactly one or
  // two blocks, and blocks with tails of every length up to a word.
  for (size_t offset = 0; offset < 8; offset++) {
    for (size_t blocks : {size_t{1}, size_t{2}, size_t{21}}) {
      for (size_t n = blocks * 1536 - 9; n <= blocks * 1536 + 9; n++) {
        ASSERT_EQ(Crc32cExtend(0x12345678u, buf.data() + offset, n),
                  RocksDbCrc32cExtend(0x12345678u, buf.data() + offset, n))
            << "offset " << offset << ", " << n << " bytes";
      }
    }
  }
  const uint32_t whole = RocksDbCrc32cExtend(0, buf.data(), buf.size());
  EXPECT_EQ(Crc32cExtend(0, buf.data(), buf.size()), whole);
  for (size_t split : {size_t{1}, size_t{7}, size_t{4096}, size_t{32768 + 3}, buf.size() - 1}) {
    const uint32_t first = Crc32cExtend(0, buf.data(), split);
    EXPECT_EQ(Crc32cExtend(first, buf.data() + split, buf.size() - split), whole) << "split at " << split;
  }
  // A flipped bit changes the checksum (the routine is not a constant).
  buf[12345] ^= 0x10;
  EXPECT_NE(Crc32cExtend(0, buf.data(), buf.size()), whole);
}

TEST(Crc32cTest, UsesTheCpuInstructionWhereThereIsOne) {
  if (!internal::Crc32cWrapped()) GTEST_SKIP() << "not wrapped on this CPU architecture: RocksDB's routine is used";
  const char* forced = std::getenv("SIDETABLE_CRC32C");
  if (forced != nullptr && std::string(forced) == "rocksdb") {
    EXPECT_EQ(internal::Crc32cBackend(), "rocksdb");
  } else if (__builtin_cpu_supports("sse4.2")) {
    EXPECT_EQ(internal::Crc32cBackend(), "sse4.2");
  } else {
    EXPECT_EQ(internal::Crc32cBackend(), "rocksdb");
  }
}

class Crc32cEngineTest : public testing::EngineTest {};

// RocksDB's WAL writer checksums through the wrapper, and RocksDB reads the
// WAL it wrote back on reopen (its reader checks every record's CRC, again
// through the wrapper): an entity larger than a WAL block (32 KiB) spans
// several checksummed fragments.
TEST_F(Crc32cEngineTest, RocksDbsWalIsChecksummedAndReadBackThroughTheWrapper) {
  if (!internal::Crc32cWrapped()) GTEST_SKIP() << "not wrapped on this CPU architecture: RocksDB's routine is used";
  ASSERT_TRUE(engine_->CreateTable("Crc").ok());
  Entity big = testing::MakeEntity("p", "big");
  // Four properties of 60 KiB (a Binary property holds at most 64 KiB).
  const std::string blob(60 * 1024, 'x');
  for (const char* name : {"b1", "b2", "b3", "b4"}) big.Set(name, Value::Binary(blob));
  const uint64_t before_write = internal::Crc32cBytes();
  auto inserted = Insert("Crc", big);
  ASSERT_TRUE(inserted.ok()) << inserted.status().ToString();
  ASSERT_TRUE(Insert("Crc", testing::MakeEntity("p", "small", 3)).ok());
  const uint64_t written = internal::Crc32cBytes() - before_write;
  EXPECT_GE(written, 240u * 1024) << "RocksDB's WAL writes did not reach the wrapper";
  const std::string state = testing::DumpState(*engine_);

  const uint64_t before_reopen = internal::Crc32cBytes();
  Reopen();  // no flush at close: the rows come back from the WAL
  EXPECT_GE(internal::Crc32cBytes() - before_reopen, 240u * 1024) << "the WAL was not read back through the wrapper";
  EXPECT_EQ(testing::DumpState(*engine_), state);
  auto got = engine_->Get("Crc", "p", "big");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const Value* b4 = got->Find("b4");
  ASSERT_NE(b4, nullptr);
  EXPECT_EQ(b4->bytes(), blob);
}

}  // namespace
}  // namespace sidetable
