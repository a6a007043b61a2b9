// The benchmark's ~1 KiB entity (as in docs/reference peers.md): six typed
// properties plus a 760-character string, and the raw RocksDB value of the
// same size and content.
//
// The string is a window into a pool of random text that moves with the
// entity number, so blocks do not compress better than real data would.
//
// Thread safety: const after construction; share it between threads.
#pragma once

#include <cstdint>
#include <string>

#include "engine/edm.h"

namespace sidetable::bench {

inline constexpr size_t kNotesChars = 760;

class EntityFactory {
 public:
  EntityFactory();

  // The n-th entity, with its keys.
  Entity Make(std::string pk, std::string rk, uint64_t n) const;
  // The value raw RocksDB stores for the n-th entity: the engine's encoded
  // row of a template entity (same size) with entity n's string spliced in.
  void RawValue(uint64_t n, std::string* out) const;
  size_t row_bytes() const { return row_.size(); }

  // Keys shared by both stores: partition "p000042", row "0000000042".
  static std::string PartitionKey(uint64_t p);
  static std::string RowKey(uint64_t r);

 private:
  std::string_view Notes(uint64_t n) const;

  std::string pool_;
  Entity template_;
  std::string row_;
  size_t notes_offset_ = 0;
};

}  // namespace sidetable::bench
