// codec_bench's measuring loop and report: each row runs the same work
// through two or three contenders; we take the median of --repeat samples
// per contender (the order rotates between repeats to spread drift) and
// print time per item and the ratios to the library's time as markdown.
#pragma once

#include <cstddef>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace sidetable::bench::codecs {

struct Row {
  std::string name;
  size_t items = 1;  // the time is reported per item (e.g. per string of a batch)
  std::vector<std::function<void()>> fns;  // one per Group::labels entry
};

struct Group {
  std::string title;
  std::vector<std::string> labels;  // contenders, e.g. {"ours", "msgpack-cxx"}
  size_t library = 1;               // index of the contender ratios are taken against
  std::vector<Row> rows;
  std::vector<std::string> notes;   // printed under the table
};

struct RunOptions {
  int repeat = 5;
  double min_seconds = 0.1;  // per sample
  std::string row;           // only rows whose name contains this
  std::string contender;     // only this contender (a label); empty = all
};

void RunAndPrint(const std::vector<Group>& groups, const RunOptions& options, std::ostream& out);

// No timing: calls the selected rows' contenders `calls` times each inside
// CountedCalls(), for an instruction count that the machine's load does not
// disturb:
//   valgrind --tool=callgrind --toggle-collect='*CountedCalls*' codec_bench --calls 100 ...
void RunCalls(const std::vector<Group>& groups, const RunOptions& options, size_t calls, std::ostream& out);

// Keeps the compiler from dropping a computation whose result is unused.
template <typename T>
inline void Keep(const T& value) {
  asm volatile("" : : "r"(&value) : "memory");
}

}  // namespace sidetable::bench::codecs
