#include "bench/codecs/runner.h"

#include <algorithm>
#include <cstdio>
#include <ostream>

#include "bench/harness.h"

namespace sidetable::bench::codecs {
namespace {

// Runs fn in a loop until one timed batch lasts min_seconds; the batch size
// is grown from a first guess so short functions are timed over many calls.
double NanosPerItem(const std::function<void()>& fn, size_t items, double min_seconds) {
  size_t iters = 1;
  for (;;) {
    const auto t0 = Clock::now();
    for (size_t k = 0; k < iters; k++) fn();
    const double s = SecondsSince(t0);
    if (s >= min_seconds) return s * 1e9 / static_cast<double>(iters * items);
    const double grow = s <= 0 ? 10.0 : std::clamp(1.2 * min_seconds / s, 2.0, 100.0);
    iters = static_cast<size_t>(static_cast<double>(iters) * grow) + 1;
  }
}

std::string FormatNanos(double ns) {
  char buf[32];
  if (ns < 1e3) std::snprintf(buf, sizeof buf, "%.1f ns", ns);
  else if (ns < 1e6) std::snprintf(buf, sizeof buf, "%.2f µs", ns / 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
  return buf;
}

std::string FormatRatio(double r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", r);
  return buf;
}

bool Selected(const Group& g, size_t row, size_t contender, const RunOptions& options) {
  return g.rows[row].name.find(options.row) != std::string::npos &&
         (options.contender.empty() || g.labels[contender] == options.contender);
}

}  // namespace

// Out of line and not inlined, so callgrind can collect exactly this.
[[gnu::noinline]] void CountedCalls(const std::function<void()>& fn, size_t calls) {
  for (size_t k = 0; k < calls; k++) fn();
}

void RunCalls(const std::vector<Group>& groups, const RunOptions& options, size_t calls, std::ostream& out) {
  for (const Group& g : groups) {
    for (size_t r = 0; r < g.rows.size(); r++) {
      for (size_t c = 0; c < g.labels.size(); c++) {
        if (!Selected(g, r, c, options)) continue;
        CountedCalls(g.rows[r].fns[c], calls);
        out << calls << " calls (" << calls * g.rows[r].items << " items): " << g.rows[r].name << " | "
            << g.labels[c] << "\n";
      }
    }
  }
}

void RunAndPrint(const std::vector<Group>& groups, const RunOptions& options, std::ostream& out) {
  // samples[group][row][contender]
  std::vector<std::vector<std::vector<std::vector<double>>>> samples(groups.size());
  for (size_t g = 0; g < groups.size(); g++) {
    samples[g].resize(groups[g].rows.size());
    for (size_t r = 0; r < groups[g].rows.size(); r++) {
      samples[g][r].resize(groups[g].labels.size());
    }
  }
  for (int rep = 0; rep < options.repeat; rep++) {
    for (size_t g = 0; g < groups.size(); g++) {
      for (size_t r = 0; r < groups[g].rows.size(); r++) {
        const Row& row = groups[g].rows[r];
        const size_t n = row.fns.size();
        if (row.name.find(options.row) == std::string::npos) continue;
        for (size_t k = 0; k < n; k++) {
          const size_t c = (k + static_cast<size_t>(rep)) % n;
          samples[g][r][c].push_back(NanosPerItem(row.fns[c], row.items, options.min_seconds));
        }
      }
    }
  }
  for (size_t g = 0; g < groups.size(); g++) {
    const Group& group = groups[g];
    std::vector<std::string> header = {"case"};
    for (const auto& label : group.labels) header.push_back(label);
    for (size_t c = 0; c < group.labels.size(); c++) {
      if (c != group.library) header.push_back(group.labels[c] + " / " + group.labels[group.library]);
    }
    MarkdownTable table(header);
    for (size_t r = 0; r < group.rows.size(); r++) {
      if (samples[g][r][0].empty()) continue;  // not selected by --row
      std::vector<double> medians;
      for (const auto& s : samples[g][r]) medians.push_back(Median(s));
      std::vector<std::string> cells = {group.rows[r].name};
      for (double m : medians) cells.push_back(FormatNanos(m));
      for (size_t c = 0; c < medians.size(); c++) {
        if (c != group.library) cells.push_back(FormatRatio(medians[c] / medians[group.library]));
      }
      table.AddRow(std::move(cells));
    }
    out << "\n### " << group.title << "\n\n";
    table.Print(out);
    for (const auto& note : group.notes) out << "\n" << note << "\n";
  }
}

}  // namespace sidetable::bench::codecs
