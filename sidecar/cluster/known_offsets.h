// KnownOffsets: how far this member knows each shard's partition of the
// change topic reached, kept beside its data (docs/scale-out.md, "Kafka
// lost or re-created").
//
// A partition's end offset (its high watermark) never goes down while the
// topic lives: retention raises its start, never lowers its end. So a
// partition that ends before an offset this member once saw on it was
// re-created, truncated, or is another cluster's: the records the member's
// local rows came from are gone from it. A restore would drop those rows
// and replay what is left (nothing, say), losing every acknowledged write
// of the shard without a word; instead the member keeps its rows and does
// not serve the shard (Cluster::Impl::CheckShardHistory).
//
// What a member learns, per shard: the end offset a restore read, its own
// claim's offset + 1, every owner record's claim offset + 1 and every
// state mark's offset + 1 read from the cluster topic (so members that
// never owned a shard know it too). Note() raises in memory only; Flush()
// writes the file (temp file, fsync, rename: common/atomic_file.h) when anything
// rose. The file names the change topic: a file of another topic is
// ignored (started afresh). Path "" keeps it in memory only (tests).
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "engine/status.h"

namespace sidetable::cluster {

class KnownOffsets {
 public:
  // Loads `path` ("" = in memory only) for `topic`. A missing file, or one
  // of another topic, is an empty map; one that does not parse (torn,
  // foreign) is kInternal naming it.
  static Result<std::shared_ptr<KnownOffsets>> Open(std::string path, std::string topic);

  // The end offset this member knows `shard`'s partition reached (0 = none).
  int64_t Of(int32_t shard) const;
  // Raises it to `end`, in memory; true when it rose.
  bool Note(int32_t shard, int64_t end);
  // Writes the file when anything rose since the last write.
  Status Flush();
  std::map<int32_t, int64_t> Snapshot() const;
  const std::string& path() const { return path_; }

 private:
  KnownOffsets(std::string path, std::string topic)
      : path_(std::move(path)), topic_(std::move(topic)) {}
  const std::string path_, topic_;
  mutable std::mutex mu_;
  std::map<int32_t, int64_t> ends_;
  bool dirty_ = false;
};

// The file's text: a header line, "topic <name>", "<shard> <end>" per line
// and an "end <count>" trailer that tells a whole file from a torn one.
std::string EncodeKnownOffsets(const std::string& topic, const std::map<int32_t, int64_t>& ends);
Status DecodeKnownOffsets(std::string_view text, std::string* topic,
                          std::map<int32_t, int64_t>* ends);

// The decision for one shard: nullopt when the partition (watermarks `low`,
// `high`) holds everything this member knew was on it (`known_end`), else
// the error to log and show, naming topic, partition and both offsets.
std::optional<std::string> LostHistory(const std::string& topic, int32_t shard, int64_t known_end,
                                       int64_t low, int64_t high);

}  // namespace sidetable::cluster
