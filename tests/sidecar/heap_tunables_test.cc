// common::HeapTunables: the GLIBC_TUNABLES the sidecar re-execs itself with
// (sidecar/main.cc), and common::MallocArenas, the arenas it allows. The
// running process shows only the first entry of the variable in /proc
// (glibc rewrites it in place), so the whole value is checked here;
// e2e_hot_path_test checks the first entry of a real process.
#include <gtest/gtest.h>

#include <string>

#include "common/process.h"

namespace sidetable::common {
namespace {

const std::string kTcache = "glibc.malloc.tcache_count=" + std::to_string(kHeapTcacheCount);

TEST(HeapTunables, UnsetGetsHugePagesThenTheThreadCache) {
  EXPECT_EQ(HeapTunables(nullptr, true), "glibc.malloc.hugetlb=1:" + kTcache);
  EXPECT_EQ(HeapTunables("", true), "glibc.malloc.hugetlb=1:" + kTcache);
}

TEST(HeapTunables, WithoutHugePagesOnlyTheThreadCache) {
  EXPECT_EQ(HeapTunables(nullptr, false), kTcache);
}

TEST(HeapTunables, TheCallersEntriesComeFirstAndWin) {
  EXPECT_EQ(HeapTunables("glibc.malloc.tcache_count=8", true), "glibc.malloc.tcache_count=8:glibc.malloc.hugetlb=1");
  EXPECT_EQ(HeapTunables("glibc.malloc.hugetlb=0", true), "glibc.malloc.hugetlb=0:" + kTcache);
  EXPECT_EQ(HeapTunables("glibc.malloc.check=3", true), "glibc.malloc.check=3:glibc.malloc.hugetlb=1:" + kTcache);
}

// Both named: nothing to add, so no exec (and no exec loop after the exec).
TEST(HeapTunables, NothingToAddIsEmpty) {
  EXPECT_EQ(HeapTunables("glibc.malloc.hugetlb=1:glibc.malloc.tcache_count=256", true), "");
  EXPECT_EQ(HeapTunables("glibc.malloc.tcache_count=0", false), "");
  EXPECT_EQ(HeapTunables(("glibc.malloc.hugetlb=1:" + kTcache).c_str(), true), "");
}

// A name is matched whole: a longer name or a value that mentions ours is
// not ours.
TEST(HeapTunables, NamesAreMatchedWhole) {
  EXPECT_EQ(HeapTunables("glibc.malloc.tcache_count_x=1", false), "glibc.malloc.tcache_count_x=1:" + kTcache);
  EXPECT_EQ(HeapTunables("glibc.malloc.hugetlbfs=1", true),
            "glibc.malloc.hugetlbfs=1:glibc.malloc.hugetlb=1:" + kTcache);
  EXPECT_EQ(HeapTunables("x.y=glibc.malloc.hugetlb=1", true), "x.y=glibc.malloc.hugetlb=1:glibc.malloc.hugetlb=1:" + kTcache);
}

// SIDETABLE_MALLOC_ARENAS: a whole number from 1 to 64 is taken as it is.
TEST(MallocArenas, AWholeNumberFromOneTo64IsTaken) {
  EXPECT_EQ(MallocArenas("1"), 1);
  EXPECT_EQ(MallocArenas("2"), 2);
  EXPECT_EQ(MallocArenas("64"), 64);
}

// Anything else is the default, four: not glibc's own default (8 per core),
// and not a prefix read as a number ("1 arena" must not mean one).
TEST(MallocArenas, AnythingElseIsTheDefault) {
  ASSERT_EQ(kDefaultMallocArenas, 4);
  for (const char* bad : {"", "0", "65", "-1", "1 arena", "2x", " ", "abc", "99999999999999999999999"}) {
    EXPECT_EQ(MallocArenas(bad), kDefaultMallocArenas) << "'" << bad << "'";
  }
  EXPECT_EQ(MallocArenas(nullptr), kDefaultMallocArenas);
}

}  // namespace
}  // namespace sidetable::common
