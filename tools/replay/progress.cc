#include "tools/replay/progress.h"

#include <unistd.h>

#include <cmath>

namespace sidetable::replay {
namespace {

std::string Commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); i++) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace

std::string FormatProgress(uint64_t events, double per_second, std::optional<uint64_t> remaining) {
  std::string out = Commas(events) + " events  " + Commas(static_cast<uint64_t>(std::llround(per_second))) + "/s";
  if (remaining && per_second > 0) {
    const uint64_t s = static_cast<uint64_t>(std::ceil(static_cast<double>(*remaining) / per_second));
    char eta[32];
    std::snprintf(eta, sizeof eta, "  ETA %llu:%02llu", static_cast<unsigned long long>(s / 60),
                  static_cast<unsigned long long>(s % 60));
    out += eta;
  }
  return out;
}

Progress::Progress(ProgressMode mode, std::FILE* out)
    : enabled_(mode == ProgressMode::kAlways || (mode == ProgressMode::kAuto && ::isatty(::fileno(out)))),
      out_(out),
      start_(std::chrono::steady_clock::now()) {}

void Progress::Update(uint64_t events, std::optional<uint64_t> remaining) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_draw_ < std::chrono::milliseconds(500)) return;
  last_draw_ = now;
  drawn_ = true;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const double rate = seconds > 0 ? static_cast<double>(events) / seconds : 0;
  std::fprintf(out_, "\r\033[K%s", FormatProgress(events, rate, remaining).c_str());
  std::fflush(out_);
}

void Progress::Finish() {
  if (!enabled_ || !drawn_) return;
  std::fprintf(out_, "\r\033[K");
  std::fflush(out_);
  drawn_ = false;
}

}  // namespace sidetable::replay
