// codec_bench: the four hand-written codecs against the libraries the
// project already ships (issue 11; docs/performance.md, "Codecs:
// hand-written vs kept libraries"):
//   msgpack  protocol/msgpack.h        vs msgpack-cxx (packer, visitor parser)
//   utf8     engine/utf8.cc IsValidUtf8         vs simdjson::validate_utf8
//   base64   events/base64.h     vs libsodium
//   json     events/json_writer.h vs rapidjson::Writer
// Each row runs the same work through each contender; we print the median
// of --repeat samples and the ratio to the library as markdown. Before
// timing, each comparison checks that the contenders agree (same bytes,
// same decoded values, same rejections) and exits non-zero if not.
//
//   codec_bench                  (about a minute)
//   codec_bench --only utf8,json
//   codec_bench --quick          (CI smoke run: every check, tiny timings)
//   valgrind --tool=callgrind --toggle-collect='*CountedCalls*'
//       codec_bench --only msgpack --row 'Write request' --contender ours --calls 100
//                                (one command: instructions per call, undisturbed by load)
#include <CLI/CLI.hpp>

#include <iostream>
#include <set>
#include <sstream>

#include "bench/codecs/cases.h"
#include "bench/harness.h"

int main(int argc, char** argv) {
  using namespace sidetable::bench;
  using namespace sidetable::bench::codecs;
  CLI::App app{"codec_bench: hand-written codecs vs kept libraries"};
  RunOptions options;
  bool quick = false;
  std::string only = "msgpack,utf8,base64,json";
  Sizes sizes;
  app.add_option("--repeat", options.repeat, "samples per contender (the median is reported)")
      ->check(CLI::PositiveNumber);
  app.add_option("--min-time", options.min_seconds, "seconds per sample");
  app.add_option("--only", only, "comma list of msgpack, utf8, base64, json");
  app.add_option("--reply-entities", sizes.reply_entities, "entities in the query reply rows");
  app.add_flag("--quick", quick, "smoke run: 1 repeat of 2 ms, 50-entity replies");
  size_t calls = 0;
  app.add_option("--row", options.row, "only rows whose name contains this");
  app.add_option("--calls", calls,
                 "no timing: call each selected contender this many times (for callgrind)");
  app.add_option("--contender", options.contender, "with --calls: only this contender (its label)");
  CLI11_PARSE(app, argc, argv);
  if (quick) {
    options.repeat = 1;
    options.min_seconds = 0.002;
    sizes.reply_entities = 50;
  }

  std::set<std::string> wanted;
  std::stringstream ss(only);
  for (std::string item; std::getline(ss, item, ',');) wanted.insert(item);
  std::vector<Group> groups;
  if (wanted.erase("msgpack")) {
    for (Group& g : MsgpackGroups(sizes)) groups.push_back(std::move(g));
  }
  if (wanted.erase("utf8")) groups.push_back(Utf8Group(sizes));
  if (wanted.erase("base64")) groups.push_back(Base64Group(sizes));
  if (wanted.erase("json")) {
    for (Group& g : JsonGroups(sizes)) groups.push_back(std::move(g));
  }
  if (!wanted.empty()) Die("--only: unknown comparison '" + *wanted.begin() + "'");

  if (calls > 0) {
    RunCalls(groups, options, calls, std::cout);
    return 0;
  }
  std::cout << "codec_bench on " << Hostname() << ": median of " << options.repeat
            << " samples of >= " << options.min_seconds << " s per contender; time per item\n";
  RunAndPrint(groups, options, std::cout);
  return 0;
}
