#include "tools/replay/checkpoint.h"

#include <fcntl.h>
#include <simdjson.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/atomic_file.h"
#include "events/json_writer.h"

namespace sidetable::replay {
namespace {

constexpr int kCheckpointVersion = 1;

Status Io(const std::string& what, const std::string& path) {
  return Status(Code::kInternal, what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

Status SaveCheckpoint(const std::string& path, const Checkpoint& c) {
  json::JsonWriter w;
  w.BeginObject();
  w.Key("checkpoint").Int(kCheckpointVersion);
  w.Key("command").String(c.command);
  w.Key("fingerprint").String(c.fingerprint);
  w.Key("lastLsn").UInt(c.position.last_lsn);
  w.Key("offsets").BeginArray();
  for (const auto& [partition, offset] : c.position.next_offsets) {
    w.BeginArray().Int(partition).Int(offset).EndArray();
  }
  w.EndArray();
  w.Key("endLsn").UInt(c.position.end_lsn);
  w.Key("endOffsets").BeginArray();
  for (const auto& [partition, offset] : c.position.end_offsets) {
    w.BeginArray().Int(partition).Int(offset).EndArray();
  }
  w.EndArray();
  // Scale-out fencing floors; written only when there is one, so a
  // checkpoint outside a cluster is as before.
  if (!c.position.floors.empty()) {
    w.Key("floors").BeginArray();
    for (const auto& [partition, floor] : c.position.floors) {
      w.BeginArray().Int(partition).UInt(floor).EndArray();
    }
    w.EndArray();
  }
  // Messages skipped as undecodable (Kafka), likewise only when there were.
  if (c.position.undecodable > 0) {
    w.Key("undecodable").UInt(c.position.undecodable);
    w.Key("undecodableLsns").BeginArray();
    for (uint64_t lsn : c.position.undecodable_lsns) w.UInt(lsn);
    w.EndArray();
  }
  w.Key("events").UInt(c.events);
  w.Key("outputBytes").UInt(c.output_bytes);
  // Embedded as strings: the header stays one flat line whatever they hold.
  w.Key("summary").String(c.summary);
  w.Key("rebuild").String(c.rebuild_meta);
  w.EndObject();
  std::string text = w.Take();
  text += '\n';
  text += c.state;
  // Whole or not at all: a failed save leaves the previous checkpoint and
  // nothing else (the temp file is removed).
  return common::WriteFileAtomically(path, text);
}

Result<std::optional<Checkpoint>> LoadCheckpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return std::optional<Checkpoint>();
    return Io("cannot read", path);
  }
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string all = buf.str();
  auto bad = [&](const std::string& what) {
    return Status(Code::kInvalidInput, path + " is not a sidetable checkpoint: " + what);
  };
  const size_t nl = all.find('\n');
  if (nl == std::string::npos) return bad("no header line");
  simdjson::dom::parser parser;
  simdjson::padded_string header(std::string_view(all).substr(0, nl));
  simdjson::dom::element doc;
  if (parser.parse(header).get(doc) != simdjson::SUCCESS) return bad("the header is not JSON");
  int64_t version = 0;
  if (doc["checkpoint"].get(version) != simdjson::SUCCESS) return bad("no version");
  if (version != kCheckpointVersion) return bad("version " + std::to_string(version) + " is not 1");
  Checkpoint c;
  std::string_view command, fingerprint, summary, rebuild;
  simdjson::dom::array offsets, end_offsets;
  if (doc["command"].get(command) || doc["fingerprint"].get(fingerprint) ||
      doc["lastLsn"].get(c.position.last_lsn) || doc["offsets"].get(offsets) ||
      doc["endLsn"].get(c.position.end_lsn) || doc["endOffsets"].get(end_offsets) || doc["events"].get(c.events) ||
      doc["outputBytes"].get(c.output_bytes) || doc["summary"].get(summary) || doc["rebuild"].get(rebuild)) {
    return bad("a header field is missing");
  }
  for (simdjson::dom::element pair : offsets) {
    int64_t partition = 0, offset = 0;
    if (pair.at(0).get(partition) || pair.at(1).get(offset)) return bad("a bad offset entry");
    c.position.next_offsets[static_cast<int32_t>(partition)] = offset;
  }
  for (simdjson::dom::element pair : end_offsets) {
    int64_t partition = 0, offset = 0;
    if (pair.at(0).get(partition) || pair.at(1).get(offset)) return bad("a bad end offset entry");
    c.position.end_offsets[static_cast<int32_t>(partition)] = offset;
  }
  simdjson::dom::array floors;
  if (doc["floors"].get(floors) == simdjson::SUCCESS) {
    for (simdjson::dom::element pair : floors) {
      int64_t partition = 0;
      uint64_t floor = 0;
      if (pair.at(0).get(partition) || pair.at(1).get(floor)) return bad("a bad fencing floor entry");
      c.position.floors[static_cast<int32_t>(partition)] = floor;
    }
  } else if (doc["floors"].error() != simdjson::NO_SUCH_FIELD) {
    return bad("\"floors\" is not an array");
  }
  if (doc["undecodable"].error() != simdjson::NO_SUCH_FIELD) {
    simdjson::dom::array lsns;
    if (doc["undecodable"].get(c.position.undecodable) || doc["undecodableLsns"].get(lsns)) {
      return bad("bad \"undecodable\" fields");
    }
    for (simdjson::dom::element lsn : lsns) {
      uint64_t n = 0;
      if (lsn.get(n)) return bad("a bad undecodable LSN");
      c.position.undecodable_lsns.insert(n);
    }
  }
  c.command = command;
  c.fingerprint = fingerprint;
  c.summary = summary;
  c.rebuild_meta = rebuild;
  c.state = all.substr(nl + 1);
  return std::optional<Checkpoint>(std::move(c));
}

Status RemoveCheckpoint(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Io("cannot remove", path);
  return Status::OK();
}

}  // namespace sidetable::replay
