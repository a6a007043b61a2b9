#include "events/chunk.h"

#include <charconv>

namespace sidetable::events {
namespace {

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size();
}

Status BadChunk(const std::string& what) {
  return Status(Code::kInvalidInput, "chunk headers: " + what);
}

}  // namespace

std::vector<std::string_view> SplitEvent(std::string_view event, size_t chunk_bytes) {
  if (chunk_bytes == 0) chunk_bytes = 1;
  std::vector<std::string_view> pieces;
  if (event.size() <= chunk_bytes) {
    pieces.push_back(event);
    return pieces;
  }
  for (size_t at = 0; at < event.size(); at += chunk_bytes) pieces.push_back(event.substr(at, chunk_bytes));
  return pieces;
}

std::optional<uint64_t> ParseLsnHeader(std::string_view value) {
  uint64_t lsn = 0;
  if (!ParseNumber(value, &lsn)) return std::nullopt;
  return lsn;
}

std::string FormatChunkHeader(uint32_t index, uint32_t count) {
  return std::to_string(index) + "/" + std::to_string(count);
}

Status ParseChunkHeaders(std::string_view lsn, std::string_view chunk, std::string_view size,
                         ChunkInfo* out) {
  const size_t slash = chunk.find('/');
  if (slash == std::string_view::npos || !ParseNumber(chunk.substr(0, slash), &out->index) ||
      !ParseNumber(chunk.substr(slash + 1), &out->count)) {
    return BadChunk("sidetable-chunk is not \"<index>/<count>\"");
  }
  if (!ParseNumber(lsn, &out->lsn)) return BadChunk("sidetable-lsn is not a number");
  if (!ParseNumber(size, &out->total_bytes)) return BadChunk("sidetable-size is not a number");
  if (out->count == 0 || out->index >= out->count) return BadChunk("chunk index out of range");
  if (out->total_bytes > kMaxJoinedEventBytes) {
    return BadChunk("event of " + std::to_string(out->total_bytes) + " bytes is over the limit");
  }
  return Status::OK();
}

ChunkJoiner::Step ChunkJoiner::Drop(std::string why) {
  dropped_ = std::move(why);
  Reset();
  return Step::kDropped;
}

ChunkJoiner::Step ChunkJoiner::Add(const ChunkInfo& info, std::string_view piece) {
  if (info.index == 0) {
    Reset();  // a new run: any partial one before it is sent again in full
    in_run_ = true;
    info_ = info;
    buffer_.reserve(info.total_bytes);
  } else if (!in_run_ || info.lsn != info_.lsn || info.count != info_.count ||
             info.total_bytes != info_.total_bytes || info.index != next_index_) {
    return Drop("chunk " + FormatChunkHeader(info.index, info.count) + " of LSN " + std::to_string(info.lsn) +
                " without the chunks before it");
  }
  if (buffer_.size() + piece.size() > info_.total_bytes) {
    return Drop("chunks of LSN " + std::to_string(info.lsn) + " exceed the size they declare");
  }
  buffer_.append(piece);
  next_index_ = info.index + 1;
  if (next_index_ < info_.count) return Step::kNeedMore;
  if (buffer_.size() != info_.total_bytes) {
    return Drop("chunks of LSN " + std::to_string(info.lsn) + " are shorter than the size they declare");
  }
  return Step::kComplete;
}

std::string ChunkJoiner::TakeEvent() {
  std::string event = std::move(buffer_);
  Reset();
  return event;
}

void ChunkJoiner::Reset() {
  in_run_ = false;
  next_index_ = 0;
  buffer_.clear();
  buffer_.shrink_to_fit();  // a run can be megabytes: do not keep it per partition
}

}  // namespace sidetable::events
