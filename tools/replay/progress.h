// Progress of a long replay: events read, rate and ETA on one terminal line.
//
// Shown only when stderr is a terminal (or when asked for), redrawn at most
// twice a second with a carriage return, and erased at the end, so scripts
// and logs that capture stderr see nothing of it.
//
// Thread safety: use from one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace sidetable::replay {

enum class ProgressMode : uint8_t { kAuto, kAlways, kNever };

// "1,234,567 events  52,000/s  ETA 0:42" (no ETA when remaining is unknown).
std::string FormatProgress(uint64_t events, double per_second, std::optional<uint64_t> remaining);

class Progress {
 public:
  explicit Progress(ProgressMode mode, std::FILE* out = stderr);
  ~Progress() { Finish(); }
  bool enabled() const { return enabled_; }
  // `events` read so far in this run; `remaining` as the source estimates.
  void Update(uint64_t events, std::optional<uint64_t> remaining);
  // Clears the line.
  void Finish();

 private:
  bool enabled_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_, last_draw_;
  bool drawn_ = false;
};

}  // namespace sidetable::replay
