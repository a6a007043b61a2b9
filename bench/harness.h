// Benchmark harness: timing, latency percentiles, medians, scratch
// directories and markdown tables. No dependency on the engine.
//
// Thread safety: Latencies is single-threaded (give each thread its own and
// Merge() them); the free functions are pure.
#pragma once

#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace sidetable::bench {

using Clock = std::chrono::steady_clock;

inline double SecondsSince(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}
inline uint64_t NanosSince(Clock::time_point t0) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

// Per-operation latencies in nanoseconds.
class Latencies {
 public:
  void Reserve(size_t n) { ns_.reserve(n); }
  void Add(uint64_t ns) { ns_.push_back(ns); }
  void Merge(const Latencies& other);
  bool empty() const { return ns_.empty(); }
  // The p-th percentile (0..100) in microseconds; 0 when empty. Sorts.
  double PercentileMicros(double p);

 private:
  std::vector<uint64_t> ns_;
};

// Median of the values (the mean of the two middle ones for an even count).
double Median(std::vector<double> v);

// "123,456"
std::string WithCommas(double v);
// "0.42 ms", "12.3 µs", "1.85 s" by magnitude.
std::string FormatSeconds(double s);
// Latency in milliseconds for tables: "3.86 ms", "60 ms", "5.08 s"; "–" when negative (no sample).
std::string FormatMillis(double ms);
// Seconds with two decimals ("3.25 s"); "–" when negative.
std::string FormatSecondsOrDash(double s);
// This machine's host name, for the header line of a run.
std::string Hostname();

// Prints a failure and exits: a benchmark has nothing sensible to do after
// an unexpected error.
[[noreturn]] void Die(const std::string& what);

// A fresh directory under `parent` (mkdtemp). Removed, with its contents,
// by Remove() or the destructor unless keep is set.
class ScratchDir {
 public:
  ScratchDir(const std::string& parent, const std::string& prefix, bool keep);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }
  // A new empty subdirectory path (not created) for one database.
  std::string Sub(const std::string& name);
  void RemoveSub(const std::string& path) const;

 private:
  std::string path_;
  bool keep_;
  int counter_ = 0;
};

class MarkdownTable {
 public:
  explicit MarkdownTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void AddRow(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace sidetable::bench
