// An opt-in for applications that read large replies (query pages of
// hundreds of KiB to a few MiB, pages of the change log) back to back.
//
// libzmq allocates each received message with malloc. With glibc's defaults
// a block of a MiB is mmapped, or comes from the heap top that free() then
// trims back to the kernel, so every page read can touch fresh memory: ~256
// page faults per MiB. Whether a connection falls into that depends on the
// order of allocations, so it shows as some connections running a query at
// half the speed of others (docs/performance.md, "Query pages computed
// ahead"). The sidecar keeps such blocks in its heap for the same reason
// (sidecar/main.cc).
//
// This changes process-wide malloc settings, so the library never calls it
// by itself: an application calls it once at start-up, before its threads.
#pragma once

#include <cstddef>

namespace sidetable::client {

// Blocks up to `largest_block` come from the heap (M_MMAP_THRESHOLD), and
// up to `free_kept` bytes of free heap are kept instead of trimmed
// (M_TRIM_THRESHOLD). Returns false where the C library has no mallopt
// (not glibc), for sizes above INT_MAX (nothing changed), or when glibc
// refuses a setting (an mmap threshold above 32 MiB on 64-bit).
bool KeepLargeRepliesInTheHeap(size_t largest_block = size_t{32} << 20, size_t free_kept = size_t{16} << 20);

}  // namespace sidetable::client
