// Session: read your own writes through derived tables (docs/consistency.md).
//
// A Session wraps a Client. Each write it makes (Execute, the single-entity
// writes, RequestArchive) records the LSN the sidecar answered as the
// newest token of that table; each read it makes (Get, QueryPage, Query)
// carries every token, so the sidecar answers a read of a derived table
// (an index table, an archive) only once that table includes the session's
// writes to its sources, or fails it with ReadSessionNotAvailable after the
// wait; it never returns data older than the session's own writes. Reads of
// tables nothing is derived into are not delayed.
//
// Tokens travel between processes as a short string: Export() gives
// "st1:People=42,Orders=7"; Import() merges one in (newest LSN per table),
// e.g. a web front end handing its session to a back end.
//
// At most 64 tables per session (the sidecar's limit on tokens per read);
// a read with more is InvalidInput.
//
// Thread safety: like its Client, one thread at a time. Lifecycle: the
// Client must outlive the Session.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "client/client.h"

namespace sidetable::client {

class Session {
 public:
  explicit Session(Client* client) : client_(client) {}

  // ---- writes: recorded on success ----
  Result<WriteResult> Execute(const Batch& batch);
  Result<WriteResult> Insert(const std::string& table, Entity e);
  // If-Match defaults to the entity's ETag, as on Client.
  Result<WriteResult> Update(const std::string& table, Entity e, std::optional<std::string> if_match = {});
  Result<WriteResult> Merge(const std::string& table, Entity e, std::optional<std::string> if_match = {});
  Result<WriteResult> Delete(const std::string& table, std::string pk, std::string rk,
                             std::string if_match = "*");
  Result<WriteResult> InsertOrReplace(const std::string& table, Entity e);
  Result<WriteResult> InsertOrMerge(const std::string& table, Entity e);
  Result<uint64_t> RequestArchive(const std::string& table, const std::string& pk,
                                  const std::vector<std::string>& row_keys,
                                  const std::string& archive_table);

  // ---- reads: carry every token ----
  Result<Entity> Get(const std::string& table, const std::string& pk, const std::string& rk,
                     const std::vector<std::string>& select = {});
  Result<Page> QueryPage(QueryOptions q, const std::optional<Continuation>& next = {});
  QueryIterator Query(QueryOptions q);

  // How long the sidecar may wait per read (unset: its default, 5 s).
  void set_wait(std::chrono::milliseconds wait) { wait_ = wait; }

  // ---- tokens ----
  // Keeps the newer of the stored and the given LSN for the table.
  void Record(const std::string& table, uint64_t lsn);
  std::vector<SessionToken> tokens() const;
  ReadOptions read_options() const;
  std::string Export() const;
  // Merges an Export()ed string; InvalidInput (nothing merged) if malformed.
  Status Import(std::string_view exported);
  void Clear() { tokens_.clear(); }

 private:
  Result<WriteResult> Recorded(const std::string& table, Result<WriteResult> r);

  Client* client_;
  std::map<std::string, SessionToken> tokens_;  // by TableKey
  std::optional<std::chrono::milliseconds> wait_;
};

}  // namespace sidetable::client
