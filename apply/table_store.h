// TableStore: the few table calls the op applier needs, as an interface so
// the fencing logic can be tested against an in-memory fake
// (tests/apply/fake_table_store.h); ClientTableStore is the real one, over
// the C++ client.
//
// Thread safety: implementations are not thread-safe (the client is not):
// one per thread.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/batch.h"
#include "engine/edm.h"
#include "engine/status.h"

namespace sidetable::client {
class Client;
}

namespace sidetable::apply {

using Continuation = std::optional<std::pair<std::string, std::string>>;

struct Page {
  std::vector<Entity> entities;
  Continuation next;  // nullopt: last page
};

class TableStore {
 public:
  virtual ~TableStore() = default;
  virtual Result<Entity> Get(const std::string& table, const std::string& pk, const std::string& rk) = 0;
  virtual Result<WriteResult> Insert(const std::string& table, const Entity& e) = 0;
  virtual Result<WriteResult> Update(const std::string& table, const Entity& e, const std::string& if_match) = 0;
  virtual Result<WriteResult> Delete(const std::string& table, const std::string& pk, const std::string& rk,
                                     const std::string& if_match) = 0;
  virtual Status CreateTable(const std::string& table) = 0;
  virtual Result<Page> QueryPage(const std::string& table, const std::string& filter, const Continuation& next) = 0;

  // Pipelined EGTs (the grouped path of apply/grouped_writes.h): SendWrite
  // queues one batch; `done` runs later, from a SendWrite that has to wait
  // for room or from Flush(), in any order. Flush() returns once every
  // write sent has had its `done` run.
  using WriteDone = std::function<void(Result<WriteResult>)>;
  virtual void SendWrite(const Batch& batch, WriteDone done) = 0;
  // A pipelined point read; `done` runs like a write's.
  using GetDone = std::function<void(Result<Entity>)>;
  virtual void SendGet(const std::string& table, const std::string& pk, const std::string& rk, GetDone done) = 0;
  virtual void Flush() = 0;
};

// Over a connected client (not owned). SendWrite packs EGTs into WriteMany
// requests (up to 100 EGTs or 1 MiB each), with at most `window` requests in
// flight (keep window x 1 MiB under sidecar.max_inflight_bytes_per_connection).
std::unique_ptr<TableStore> NewClientTableStore(client::Client* client, size_t window = 16);

}  // namespace sidetable::apply
