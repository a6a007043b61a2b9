#include "bench/harness.h"

#include <unistd.h>

#include <errno.h>  // program_invocation_short_name (GNU)
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace sidetable::bench {

void Latencies::Merge(const Latencies& other) {
  ns_.insert(ns_.end(), other.ns_.begin(), other.ns_.end());
}

double Latencies::PercentileMicros(double p) {
  if (ns_.empty()) return 0;
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(ns_.size())));
  rank = std::clamp<size_t>(rank, 1, ns_.size()) - 1;
  std::nth_element(ns_.begin(), ns_.begin() + static_cast<std::ptrdiff_t>(rank), ns_.end());
  return static_cast<double>(ns_[rank]) / 1000.0;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

std::string WithCommas(double v) {
  auto n = static_cast<long long>(std::llround(v));
  std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); i++) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return n < 0 ? "-" + out : out;
}

std::string FormatMillis(double ms) {
  char buf[32];
  if (ms < 0) return "–";
  if (ms < 10) std::snprintf(buf, sizeof buf, "%.2f ms", ms);
  else if (ms < 1000) std::snprintf(buf, sizeof buf, "%.0f ms", ms);
  else std::snprintf(buf, sizeof buf, "%.2f s", ms / 1000);
  return buf;
}

std::string FormatSecondsOrDash(double s) {
  if (s < 0) return "–";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

std::string Hostname() {
  char h[256] = {};
  ::gethostname(h, sizeof h - 1);
  return h;
}

std::string FormatSeconds(double s) {
  char buf[32];
  if (s >= 1) {
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  } else if (s >= 1e-3) {
    std::snprintf(buf, sizeof buf, "%.2f ms", s * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f µs", s * 1e6);
  }
  return buf;
}

void Die(const std::string& what) {
  std::cerr << program_invocation_short_name << ": " << what << std::endl;
  std::exit(1);
}

ScratchDir::ScratchDir(const std::string& parent, const std::string& prefix, bool keep)
    : keep_(keep) {
  std::error_code ec;
  std::filesystem::create_directories(parent, ec);
  std::string tmpl = parent + "/" + prefix + "XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) Die("mkdtemp failed under " + parent);
  path_ = tmpl;
}

ScratchDir::~ScratchDir() {
  if (keep_) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

std::string ScratchDir::Sub(const std::string& name) {
  return path_ + "/" + std::to_string(counter_++) + "-" + name;
}

void ScratchDir::RemoveSub(const std::string& path) const {
  if (keep_) return;
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

void MarkdownTable::Print(std::ostream& out) const {
  auto line = [&out](const std::vector<std::string>& cells) {
    out << "|";
    for (const auto& c : cells) out << " " << c << " |";
    out << "\n";
  };
  line(header_);
  out << "|";
  for (size_t i = 0; i < header_.size(); i++) out << (i == 0 ? "---|" : "---:|");
  out << "\n";
  for (const auto& r : rows_) line(r);
}

}  // namespace sidetable::bench
