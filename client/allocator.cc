#include "client/allocator.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <climits>

namespace sidetable::client {

bool KeepLargeRepliesInTheHeap(size_t largest_block, size_t free_kept) {
#if defined(__GLIBC__)
  // mallopt takes an int; glibc refuses an mmap threshold above 32 MiB on
  // 64-bit (returns 0).
  if (largest_block > static_cast<size_t>(INT_MAX) || free_kept > static_cast<size_t>(INT_MAX)) return false;
  // mallopt returns 1 on success. Setting either also turns off glibc's
  // dynamic threshold, which would otherwise move them again.
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, static_cast<int>(largest_block)) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, static_cast<int>(free_kept)) == 1;
  return mmap_ok && trim_ok;
#else
  (void)largest_block;
  (void)free_kept;
  return false;
#endif
}

}  // namespace sidetable::client
