#include "tools/kafka-mock/topic_spec.h"

#include <charconv>
#include <set>

namespace sidetable::kafka_mock {
namespace {

bool IsTopicChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '_' || c == '-';
}

Status Bad(const std::string& spec, const std::string& why) {
  return Status(Code::kInvalidInput, "--topic '" + spec + "': " + why);
}

}  // namespace

Result<TopicSpec> ParseTopicSpec(const std::string& spec) {
  const size_t eq = spec.rfind('=');
  if (eq == std::string::npos)
    return Bad(spec, "expected NAME=PARTITIONS, e.g. sidetable.orders.changes=6");
  TopicSpec t;
  t.name = spec.substr(0, eq);
  const std::string count = spec.substr(eq + 1);
  if (t.name.empty()) return Bad(spec, "the topic name is empty");
  if (t.name.size() > 249) return Bad(spec, "a topic name has at most 249 characters");
  if (t.name == "." || t.name == "..") return Bad(spec, "'.' and '..' are not topic names");
  for (char c : t.name) {
    if (!IsTopicChar(c)) {
      return Bad(
          spec, std::string("'") + c + "' is not allowed in a topic name (only A-Z a-z 0-9 . _ -)");
    }
  }
  long long n = 0;
  const char* end = count.data() + count.size();
  auto [ptr, ec] = std::from_chars(count.data(), end, n);
  if (count.empty() || ec != std::errc() || ptr != end) {
    return Bad(spec, "the partition count '" + count + "' is not a whole number");
  }
  if (n < 1 || n > kMaxPartitions) {
    return Bad(spec,
               "partitions must be from 1 to " + std::to_string(kMaxPartitions) + ", not " + count);
  }
  t.partitions = static_cast<int>(n);
  return t;
}

Result<std::vector<TopicSpec>> ParseTopicSpecs(const std::vector<std::string>& specs) {
  std::vector<TopicSpec> out;
  std::set<std::string> seen;
  for (const std::string& spec : specs) {
    auto t = ParseTopicSpec(spec);
    if (!t.ok()) return t.status();
    if (!seen.insert(t->name).second) return Bad(spec, "topic '" + t->name + "' is named twice");
    out.push_back(*t);
  }
  return out;
}

}  // namespace sidetable::kafka_mock
