// RequestLog: the committed outcomes of recent client request ids, so that a
// client's retry of a write whose reply was lost is answered with the first
// outcome instead of being executed again (docs/protocol.md, "Exactly-once
// retries").
//
// An outcome is written into the same RocksDB WriteBatch as the rows and
// change record of its EGT: it exists exactly when the write does, across
// kill -9 and restarts. Only committed writes are remembered; a failed write
// changed nothing, so its retry simply runs again.
//
// Bounded by generations: ids go into the current generation until it holds
// `window_count` ids or is `window_seconds` old; starting generation g+1
// deletes every generation below g with one range deletion. A lookup reads
// generations g and g-1. So an id is answered for at least `window_seconds`
// or until `window_count` newer ids were recorded, whichever comes first,
// and at most 2 x window_count ids are ever stored.
//
// Each of the two generations a lookup reads has an in-memory filter of
// the ids recorded in it (id_filter.h; ~10 bits an id, filled from the
// store at open): a lookup of a new id, nearly every one, reads nothing
// from RocksDB. The filters only ever over-report (an id whose write then
// failed stays in), so a retry is never missed.
//
// Keys (column family "requests"):
//   'g' gen(8, BE)                      -> the generation's start time (ticks)
//   'g' gen(8, BE) 0x01 caller 0x00 id  -> outcome
// Callers contain no control characters, so (caller, id) is unambiguous:
// the same id from two callers is two requests.
//
// Thread safety: Lookup() from any thread (it reads RocksDB); Record() from
// the commit leader, serialised by an internal mutex.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/batch.h"
#include "engine/internal/id_filter.h"
#include "engine/status.h"

namespace sidetable {

struct RequestWindow {
  uint64_t count = 500'000;
  int64_t seconds = 900;
};

// A request's identity beyond its id: a retry must send the same request.
// Covers every operation's kind, keys, condition, fence and each property's
// name, type and value.
uint64_t RequestFingerprint(const Batch& batch);
// The fingerprint outcomes stored before session 20 carry (formats 1 and
// 2): the same, except that it left out the values of the types without
// bytes (Int32, Int64, Double, Boolean, DateTime), so a request differing
// only in one of those matched. Kept for those outcomes only: a retry sent
// across the upgrade still matches its first attempt.
uint64_t LegacyRequestFingerprint(const Batch& batch);

// What a committed EGT answered, compactly: every written operation's ETag
// is the commit's, so per operation only "written", "deleted" or "skipped".
struct RememberedOutcome {
  uint64_t fingerprint = 0;
  // The local LSN of the commit; 0 for an outcome restored from another
  // owner's record (Engine::ApplyReplicated): there is no local commit to
  // wait for, and the other owner's LSN means nothing here.
  uint64_t lsn = 0;
  // The version (so the ETag) the commit gave its entities: the LSN, or
  // epoch << 40 | lsn under scale-out (the other owner's, when restored).
  uint64_t version = 0;
  // Restored from a change record, which does not carry the request itself:
  // its fingerprint is unknown and not compared.
  bool any_fingerprint = false;
  // Stored by an older release: `fingerprint` is LegacyRequestFingerprint's.
  bool legacy_fingerprint = false;
  int64_t time = 0;
  enum Mark : uint8_t { kWritten = 0, kDeleted = 1, kSkipped = 2 };
  std::vector<uint8_t> marks;

  WriteResult ToResult() const;
};

// An outcome's stored bytes (the request log's values). Encode writes the
// current format; Decode reads every format a release has written and says
// in legacy_fingerprint which fingerprint the value holds.
void EncodeOutcome(const RememberedOutcome& o, std::string* dst);
Status DecodeOutcome(std::string_view v, RememberedOutcome* o);

class RequestLog {
 public:
  RequestLog(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* cf, RequestWindow window);

  // Finds the current generation and counts its ids (open time).
  Status Load(int64_t now);

  // The outcome remembered for (caller, id), if any.
  Result<std::optional<RememberedOutcome>> Lookup(std::string_view caller,
                                                  std::string_view id) const;

  // Adds the outcome to `wb`, starting a new generation (and deleting the
  // old ones in the same batch) when the current one is full or old.
  void Record(std::string_view caller, std::string_view id, const RememberedOutcome& outcome,
              int64_t now, rocksdb::WriteBatch* wb);

 private:
  rocksdb::DB* const db_;
  rocksdb::ColumnFamilyHandle* const cf_;
  const RequestWindow window_;

  mutable std::mutex mu_;
  uint64_t gen_ = 1;       // guarded by mu_
  int64_t gen_start_ = 0;  // guarded by mu_
  uint64_t gen_count_ = 0; // guarded by mu_; ids recorded in gen_ (a failed group may overcount)
  bool header_stored_ = false;  // guarded by mu_; gen_'s start time is in the store
  // The ids recorded in gen_ and in gen_ - 1 (a superset); guarded by mu_.
  std::unique_ptr<internal::IdFilter> current_ids_;
  std::unique_ptr<internal::IdFilter> previous_ids_;
};

// The client request ids of the writes executing now: claimed after the
// partition lock is taken and before the request log is looked up, given
// back once the write is committed (visible to Lookup) or has failed.
//
// The partition lock serialises the attempts of one request (same table and
// PartitionKey), but not two requests that use one id on different
// partitions: both looked the id up before either had committed, both
// missed it, and both were executed (found from outside: four clients with
// one id on four partitions committed up to four rows, and a retry of one
// of them was then refused as "a different request"). A claim held by a
// request with another fingerprint refuses the later one at once
// (InvalidInput, nothing executed), as the request log would once the first
// has committed. Nothing here waits, so it adds no lock order.
//
// Thread safety: every method from any thread.
class InflightRequestIds {
 public:
  // Claims (caller, id) for a request with `fingerprint`: the claim's key,
  // stable until its last claim is released; null (nothing claimed) when a
  // request with another fingerprint holds it.
  const std::string* Claim(std::string_view caller, std::string_view id, uint64_t fingerprint);
  // Gives back one claim of `key`, as Claim() returned it.
  void Release(const std::string* key);

 private:
  struct Holder {
    uint64_t fingerprint = 0;
    uint32_t claims = 0;  // the same request twice: two claims, one entry
  };
  std::mutex mu_;
  // Keys are caller '\0' id. A node's key stays where it is until erased
  // (rehashing moves no element), so a claim holds a pointer to it.
  std::unordered_map<std::string, Holder> held_;  // guarded by mu_
};

// One claim of InflightRequestIds, given back when destroyed unless moved
// on (a WriteGroup keeps its deferred writes' claims until its flush).
class RequestIdClaim {
 public:
  RequestIdClaim() = default;
  RequestIdClaim(InflightRequestIds* ids, const std::string* key) : ids_(ids), key_(key) {}
  RequestIdClaim(RequestIdClaim&& o) noexcept
      : ids_(std::exchange(o.ids_, nullptr)), key_(std::exchange(o.key_, nullptr)) {}
  RequestIdClaim& operator=(RequestIdClaim&& o) noexcept {
    if (this != &o) {
      Reset();
      ids_ = std::exchange(o.ids_, nullptr);
      key_ = std::exchange(o.key_, nullptr);
    }
    return *this;
  }
  RequestIdClaim(const RequestIdClaim&) = delete;
  RequestIdClaim& operator=(const RequestIdClaim&) = delete;
  ~RequestIdClaim() { Reset(); }

  void Reset() {
    if (ids_ != nullptr) ids_->Release(key_);
    ids_ = nullptr;
    key_ = nullptr;
  }

 private:
  InflightRequestIds* ids_ = nullptr;
  const std::string* key_ = nullptr;
};

}  // namespace sidetable
