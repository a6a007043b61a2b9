#include "sidecar/cluster/known_offsets.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/atomic_file.h"

namespace sidetable::cluster {
namespace {

constexpr std::string_view kKnownHeader = "sidetable-change-offsets 1";

}  // namespace

std::string EncodeKnownOffsets(const std::string& topic, const std::map<int32_t, int64_t>& ends) {
  std::string out(kKnownHeader);
  out += "\ntopic " + topic + "\n";
  for (const auto& [shard, end] : ends)
    out += std::to_string(shard) + " " + std::to_string(end) + "\n";
  out += "end " + std::to_string(ends.size()) + "\n";
  return out;
}

Status DecodeKnownOffsets(std::string_view text, std::string* topic,
                          std::map<int32_t, int64_t>* ends) {
  ends->clear();
  std::istringstream in{std::string(text)};
  std::string line;
  auto bad = [&](const std::string& why) {
    ends->clear();
    return Status(Code::kInternal, "known change-topic offsets: " + why);
  };
  if (!std::getline(in, line) || line != kKnownHeader) return bad("no header line");
  if (text.back() != '\n') return bad("no end of line after the last one (a torn file)");
  if (!std::getline(in, line) || line.rfind("topic ", 0) != 0 || line.size() == 6)
    return bad("no topic line");
  *topic = line.substr(6);
  while (std::getline(in, line)) {
    long long a = 0, b = 0;
    char extra = 0;
    if (line.rfind("end ", 0) == 0) {
      unsigned long long n = 0;
      if (std::sscanf(line.c_str(), "end %llu%c", &n, &extra) != 1 || n != ends->size()) {
        return bad("the trailer does not match the entries (" + line + ")");
      }
      if (std::getline(in, line)) return bad("text after the trailer");
      return Status::OK();
    }
    if (std::sscanf(line.c_str(), "%lld %lld%c", &a, &b, &extra) != 2 || a < 0 || a > INT32_MAX ||
        b <= 0) {
      return bad("a malformed line (" + line + ")");
    }
    (*ends)[static_cast<int32_t>(a)] = b;
  }
  return bad("no trailer (a torn file)");
}

std::optional<std::string> LostHistory(const std::string& topic, int32_t shard, int64_t known_end,
                                       int64_t low, int64_t high) {
  if (known_end <= high) return std::nullopt;
  return "the change topic " + topic + " partition " + std::to_string(shard) + " ends at offset " +
         std::to_string(high) + " (starts at " + std::to_string(low) +
         "), but this member knew it held offsets up to " + std::to_string(known_end - 1) +
         ": the topic was re-created or truncated, and the records of this shard's rows are "
         "gone from it. The shard's local rows are kept and it is not served here "
         "(docs/operations.md, \"Kafka lost or re-created\")";
}

Result<std::shared_ptr<KnownOffsets>> KnownOffsets::Open(std::string path, std::string topic) {
  std::shared_ptr<KnownOffsets> k(new KnownOffsets(std::move(path), std::move(topic)));
  if (k->path_.empty()) return k;
  if (::access(k->path_.c_str(), F_OK) != 0 && errno == ENOENT) return k;
  std::ifstream in(k->path_, std::ios::binary);
  if (!in)
    return Status(Code::kInternal, "cluster: reading " + k->path_ + ": " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  std::string file_topic;
  std::map<int32_t, int64_t> ends;
  if (Status s = DecodeKnownOffsets(text.str(), &file_topic, &ends); !s.ok()) {
    return Status(Code::kInternal,
                  s.message() + " in " + k->path_ +
                      " (remove it to start over: restores then trust whatever the change topic "
                      "holds)");
  }
  // Another change topic's offsets say nothing about this one's.
  if (file_topic == k->topic_) k->ends_ = std::move(ends);
  return k;
}

int64_t KnownOffsets::Of(int32_t shard) const {
  std::lock_guard l(mu_);
  auto it = ends_.find(shard);
  return it == ends_.end() ? 0 : it->second;
}

bool KnownOffsets::Note(int32_t shard, int64_t end) {
  std::lock_guard l(mu_);
  int64_t& known = ends_[shard];
  if (end <= known) {
    if (known == 0) ends_.erase(shard);
    return false;
  }
  known = end;
  dirty_ = true;
  return true;
}

Status KnownOffsets::Flush() {
  std::lock_guard l(mu_);
  if (!dirty_ || path_.empty()) return Status::OK();
  Status s = common::WriteFileAtomically(path_, EncodeKnownOffsets(topic_, ends_));
  if (s.ok()) dirty_ = false;
  return s;
}

std::map<int32_t, int64_t> KnownOffsets::Snapshot() const {
  std::lock_guard l(mu_);
  return ends_;
}

}  // namespace sidetable::cluster
