// client::KeepLargeRepliesInTheHeap (client/allocator.h): after it, a block
// the size of a large query page comes from the heap instead of its own
// mmap, and a setting glibc cannot take is reported, not ignored.
#include "client/allocator.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cstdlib>
#include <cstring>

namespace sidetable::client {
namespace {

#if defined(__GLIBC__)
TEST(ClientAllocator, AMiBSizedReplyComesFromTheHeapAfterwards) {
  ASSERT_TRUE(KeepLargeRepliesInTheHeap());
  const size_t mmapped_before = mallinfo2().hblks;
  void* page = std::malloc(size_t{4} << 20);
  ASSERT_NE(page, nullptr);
  std::memset(page, 1, size_t{4} << 20);
  // Escapes, so the compiler keeps the malloc (it may drop a pair whose
  // block is never read).
  asm volatile("" : : "r"(page) : "memory");
  EXPECT_EQ(mallinfo2().hblks, mmapped_before) << "a 4 MiB block was mmapped";
  std::free(page);
}

TEST(ClientAllocator, SizesMallocCannotTakeAreRefused) {
  // mallopt takes an int: these would wrap.
  EXPECT_FALSE(KeepLargeRepliesInTheHeap(size_t{8} << 30));
  EXPECT_FALSE(KeepLargeRepliesInTheHeap(size_t{32} << 20, size_t{8} << 30));
}
#endif

}  // namespace
}  // namespace sidetable::client
