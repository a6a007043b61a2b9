// The RocksDB options the engine opens with, checked on an open engine where
// an option is only visible in its effect.
#include <gtest/gtest.h>
#include <rocksdb/env.h>

#include "engine/engine.h"
#include "testing/temp_dir.h"

namespace sidetable::testing {
namespace {

// The entity and change-log column families fill their memtables together;
// with one flush thread one waits for the other and writes stop
// (rocksdb_options.cc). RocksDB sizes the flush pool (HIGH) to what the
// options ask for when the database opens; nothing else in this process
// asks for more than one.
TEST(RocksDbOptionsTest, AnOpenEngineFlushesTwoColumnFamiliesAtOnce) {
  TempDir dir;
  auto engine = Engine::Open(EngineOptions{}, dir.Sub("db"));
  ASSERT_TRUE(engine.ok()) << engine.status().ToString();
  EXPECT_GE(rocksdb::Env::Default()->GetBackgroundThreads(rocksdb::Env::HIGH), 2);
  EXPECT_GE(rocksdb::Env::Default()->GetBackgroundThreads(rocksdb::Env::LOW), 1);
}

}  // namespace
}  // namespace sidetable::testing
