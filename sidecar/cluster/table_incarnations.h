// TableIncarnations: which cluster incarnation each LOCAL table id of this
// member belongs to (docs/scale-out.md, "A table deleted and created again").
//
// A table's incarnation is the cluster-topic offset of its `table/<name>/<request>`
// create record plus one (so that 0 can mean "unknown" even for the topic's
// first record). Change records carry only their writer's local table id;
// the publisher stamps each with the incarnation it maps to, and restores,
// standby copies and state loads skip an Entities record stamped with an
// incarnation that is not the catalog's current one for its table. Local
// ids are never reused and entries are never removed, so a record
// committed to a table before this member applied its delete keeps the old
// stamp even when it is published later.
//
// The map lives in a small file beside the sidecar's data, rewritten whole
// (temp file, fsync, rename, fsync of the directory) at every Set: a create
// is rare. Path "" keeps it in memory only (tests).
//
// Thread safety: every method may be called from any thread (the publisher
// reads, the catalog thread writes).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "engine/status.h"

namespace sidetable::cluster {

class TableIncarnations {
 public:
  // Loads `path` ("" = in memory only). A missing file is an empty map; a
  // file that does not parse (torn, foreign) is kInternal naming it.
  static Result<std::shared_ptr<TableIncarnations>> Open(std::string path);

  // 0 when `local_id` is not mapped.
  uint64_t Of(uint32_t local_id) const;
  // Maps `local_id` and persists the whole map before returning; on a
  // failure to persist, the map in memory keeps the new entry.
  Status Set(uint32_t local_id, uint64_t incarnation);
  std::map<uint32_t, uint64_t> Snapshot() const;
  const std::string& path() const { return path_; }

 private:
  explicit TableIncarnations(std::string path) : path_(std::move(path)) {}
  const std::string path_;
  mutable std::mutex mu_;
  std::map<uint32_t, uint64_t> map_;
};

// The file's text (a header line, "<local id> <incarnation>" per line, and
// an "end <count>" trailer that tells a whole file from a torn one).
std::string EncodeTableIncarnations(const std::map<uint32_t, uint64_t>& map);
Status DecodeTableIncarnations(std::string_view text, std::map<uint32_t, uint64_t>* out);

// What a member does with a table it already has locally when the catalog
// says the table's incarnation is `catalog` and the map says `mapped`.
enum class LocalTableCheck {
  kMap,       // not mapped (a map older than this feature): map it to `catalog`
  kKeep,      // the same incarnation
  kRecreate,  // another incarnation (the member missed a delete and create): delete, create, map the new id
};
LocalTableCheck CheckLocalTable(uint64_t mapped, uint64_t catalog);

}  // namespace sidetable::cluster
