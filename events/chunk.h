// Chunked change events (docs/change-events.md, "Chunked events").
//
// An event larger than the publisher's chunk size travels as a run of chunk
// messages on the same Kafka key (so the same partition, at consecutive
// offsets: one producer thread, the idempotent producer keeping the order).
// Each chunk carries a byte range of the event's JSON and three headers:
// sidetable-lsn, sidetable-chunk "<index>/<count>" (index from 0) and
// sidetable-size (the whole event's bytes). Concatenated in index order the
// chunks are the event, byte for byte. Events at or under the chunk size are
// one ordinary message with no chunk header, exactly as before chunking.
//
// Pure: no Kafka types; the Kafka header plumbing lives with each producer
// and consumer. Thread safety: functions are stateless; a ChunkJoiner
// belongs to one thread and one partition.
#pragma once

#include <optional>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"

namespace sidetable::events {

inline constexpr const char* kLsnHeader = "sidetable-lsn";
inline constexpr const char* kChunkHeader = "sidetable-chunk";
inline constexpr const char* kSizeHeader = "sidetable-size";
// Scale-out only: the cluster incarnation of the record's table (decimal),
// on every chunk of an Entities event (docs/scale-out.md, "A table deleted
// and created again"); ChangeRecord::table_incarnation on the reading side.
inline constexpr const char* kTableIncarnationHeader = "st-ti";
// A consumer refuses to buffer a run that claims more than this: far above
// the largest legal event (a 4 MiB EGT whose before and after images are
// escaped strings), far below what would hurt a worker.
inline constexpr uint64_t kMaxJoinedEventBytes = 256ull << 20;

struct ChunkInfo {
  uint64_t lsn = 0;
  uint32_t index = 0;
  uint32_t count = 1;
  uint64_t total_bytes = 0;
};

// The pieces of `event` for chunk size `chunk_bytes` (>= 1): one piece (the
// whole event) when it fits, else ceil(size / chunk_bytes) pieces.
std::vector<std::string_view> SplitEvent(std::string_view event, size_t chunk_bytes);
std::string FormatChunkHeader(uint32_t index, uint32_t count);
// From the three header values of a chunk message; InvalidInput when any is
// malformed or inconsistent (index >= count, count 0, size over the limit).
// The decimal LSN of a sidetable-lsn header; nullopt if it is not one.
std::optional<uint64_t> ParseLsnHeader(std::string_view value);

Status ParseChunkHeaders(std::string_view lsn, std::string_view chunk, std::string_view size,
                         ChunkInfo* out);

// Joins the chunk runs of one partition, read in offset order. A run is
// accepted only whole and uninterrupted: index 0..count-1 of one LSN, one
// after the other. Anything else (an ordinary message, a chunk of another
// run) ends a partial run, whose chunks are then dropped: the publisher sends
// a run again in full whenever it did not complete (a crash or a rewind
// before its last chunk was delivered), so a partial run is never the only
// copy. A chunk met without the start of its run (a read that began in the
// middle of one) is dropped the same way.
class ChunkJoiner {
 public:
  enum class Step {
    kNeedMore,  // buffered; the run is not complete yet
    kComplete,  // the run is whole: TakeEvent()
    kDropped,   // a fragment that cannot be joined (see dropped_reason())
  };
  Step Add(const ChunkInfo& info, std::string_view piece);
  std::string TakeEvent();
  // An ordinary message or a rebalance: a partial run is abandoned.
  void Reset();
  bool in_run() const { return in_run_; }
  uint64_t run_lsn() const { return info_.lsn; }
  const std::string& dropped_reason() const { return dropped_; }

 private:
  Step Drop(std::string why);

  bool in_run_ = false;
  ChunkInfo info_;
  uint32_t next_index_ = 0;
  std::string buffer_;
  std::string dropped_;
};

}  // namespace sidetable::events
