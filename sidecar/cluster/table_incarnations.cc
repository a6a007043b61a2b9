#include "sidecar/cluster/table_incarnations.h"

#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace sidetable::cluster {
namespace {

constexpr std::string_view kHeader = "sidetable-table-incarnations 1";

Status Errno(const std::string& what, const std::string& path) {
  return Status(Code::kInternal, "cluster: " + what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

std::string EncodeTableIncarnations(const std::map<uint32_t, uint64_t>& map) {
  std::string out(kHeader);
  out += "\n";
  for (const auto& [id, incarnation] : map) out += std::to_string(id) + " " + std::to_string(incarnation) + "\n";
  out += "end " + std::to_string(map.size()) + "\n";
  return out;
}

Status DecodeTableIncarnations(std::string_view text, std::map<uint32_t, uint64_t>* out) {
  out->clear();
  std::istringstream in{std::string(text)};
  std::string line;
  auto bad = [&](const std::string& why) {
    out->clear();
    return Status(Code::kInternal, "table incarnations: " + why);
  };
  if (!std::getline(in, line) || line != kHeader) return bad("no header line");
  if (text.back() != '\n') return bad("no end of line after the last one (a torn file)");
  while (std::getline(in, line)) {
    unsigned long long a = 0, b = 0;
    char extra = 0;
    if (line.rfind("end ", 0) == 0) {
      if (std::sscanf(line.c_str(), "end %llu%c", &a, &extra) != 1 || a != out->size()) {
        return bad("the trailer does not match the entries (" + line + ")");
      }
      if (std::getline(in, line)) return bad("text after the trailer");
      return Status::OK();
    }
    if (std::sscanf(line.c_str(), "%llu %llu%c", &a, &b, &extra) != 2 || a == 0 || a > UINT32_MAX || b == 0) {
      return bad("a malformed line (" + line + ")");
    }
    (*out)[static_cast<uint32_t>(a)] = b;
  }
  return bad("no trailer (a torn file)");
}

LocalTableCheck CheckLocalTable(uint64_t mapped, uint64_t catalog) {
  if (mapped == 0) return LocalTableCheck::kMap;
  return mapped == catalog ? LocalTableCheck::kKeep : LocalTableCheck::kRecreate;
}

Result<std::shared_ptr<TableIncarnations>> TableIncarnations::Open(std::string path) {
  std::shared_ptr<TableIncarnations> t(new TableIncarnations(std::move(path)));
  if (t->path_.empty()) return t;
  if (::access(t->path_.c_str(), F_OK) != 0 && errno == ENOENT) return t;
  std::ifstream in(t->path_, std::ios::binary);
  if (!in) return Errno("reading", t->path_);
  std::stringstream text;
  text << in.rdbuf();
  if (Status s = DecodeTableIncarnations(text.str(), &t->map_); !s.ok()) {
    return Status(Code::kInternal, s.message() + " in " + t->path_ +
                                       " (remove it to start over: local tables then take the catalog's incarnation)");
  }
  return t;
}

uint64_t TableIncarnations::Of(uint32_t local_id) const {
  std::lock_guard l(mu_);
  auto it = map_.find(local_id);
  return it == map_.end() ? 0 : it->second;
}

Status TableIncarnations::Set(uint32_t local_id, uint64_t incarnation) {
  std::lock_guard l(mu_);
  auto it = map_.find(local_id);
  if (it != map_.end() && it->second == incarnation) return Status::OK();
  map_[local_id] = incarnation;
  if (path_.empty()) return Status::OK();
  return common::WriteFileAtomically(path_, EncodeTableIncarnations(map_));
}

std::map<uint32_t, uint64_t> TableIncarnations::Snapshot() const {
  std::lock_guard l(mu_);
  return map_;
}

}  // namespace sidetable::cluster
