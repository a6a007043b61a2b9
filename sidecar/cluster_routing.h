// ClusterRouting: where a request runs when this sidecar is one of several
// holding a service's tables (docs/scale-out.md, "Routing").
//
// The handler asks it before executing anything. A request on one
// partition whose shard another sidecar owns is forwarded there and its
// reply relayed; a query without a PartitionKey fans out over the owners
// and their pages are merged in key order; a WriteMany is split by owner.
// While a shard has no serving owner (a rebalance, a restore) the request
// waits up to cluster.rebalance_wait_ms, then gets ServerBusy: never an
// answer from a sidecar that does not serve the shard.
//
// With CURVE on (the constructor's key pair), forwards are CURVE clients
// that expect each owner's published key (Route::curve_public_key,
// sidecar/forwarder.h).
//
// Requests that arrive forwarded (kForwardedIdPrefix) are never forwarded
// again: they run here, or are refused with ServerBusy (NotOwner) when the
// shard is not served here any more, and the forwarding side re-routes.
//
// Replicated acknowledgement (cluster.acks: replicated): AwaitReplicated
// holds a write's reply until its change record is on Kafka and a fence
// check after that proved this sidecar still owned the shard at the epoch
// it wrote with.
//
// Thread safety: every method may be called from any thread; forwarding
// blocks the calling thread (workers, REST threads), never the frontend.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "engine/query/query.h"
#include "engine/status.h"
#include "protocol/token.h"
#include "protocol/wire.h"
#include "sidecar/cluster/cluster.h"
#include "sidecar/forwarder.h"

namespace sidetable::changestream {
class Publisher;
}

namespace sidetable::sidecar {

// A write executed here on a shard at an epoch: what the fence check must
// still find true before its reply may leave.
struct ShardEpoch {
  int32_t shard = -1;
  uint64_t epoch = 0;
  bool operator==(const ShardEpoch&) const = default;
};

class ClusterRouting {
 public:
  // Executes a (sub-)request on this sidecar and returns its whole reply
  // frame's outcome (Handler::Handle without the routing step).
  using RunLocal = std::function<Code(const wire::Request& r, std::string* out, uint64_t* entities)>;

  ClusterRouting(cluster::Cluster* cluster, const Engine* engine, changestream::Publisher* publisher,
                 bool replicated_acks,
                 std::chrono::milliseconds rebalance_wait, std::chrono::milliseconds forward_timeout,
                 std::string member_id, curve::KeyPair curve = {});

  // Before executing `r`: true when the request was answered here (*out has
  // the whole reply frame, *code its outcome): forwarded, merged from a
  // fan-out, or refused. False: execute it on this sidecar.
  // `token`, when not empty, is what the requests sent to other members
  // carry instead of r.token: the caller's principal for the owner to
  // enforce, when this sidecar verified it without a token text (the REST
  // gateway's SharedKey and SAS; Handler::ForwardToken).
  bool Intercept(const wire::Request& r, const RunLocal& local, std::string* out, Code* code,
                 uint64_t* entities, std::string_view token = {});

  // For a write about to run here: the shard and epoch of (table, pk), or
  // ServerBusy when this sidecar does not serve that shard (now).
  Result<ShardEpoch> LocalShard(std::string_view table, std::string_view pk) const;

  // Whether (table, pk)'s shard is served here now.
  bool ServesHere(std::string_view table, std::string_view pk) const {
    return cluster_->RouteShard(ShardOf(table, pk)).kind == cluster::Route::Kind::kLocal;
  }

  // Whether `r` (not itself forwarded) involves a shard not served here:
  // the frontend queues those on the forwarding threads, so that the
  // partition workers never block on another sidecar. (A worker waiting on
  // a peer whose own workers wait on this sidecar would stall both.)
  bool NeedsForwarding(const wire::Request& r) const;

  // For the local part of a fan-out query: which shards this sidecar serves
  // (indexed by shard), and the row filter that keeps to them.
  std::vector<char> ServingMask() const;
  // The shard of a key. The table's name as created: the change publisher
  // keys records with it, and requests may spell it in another case.
  int32_t ShardOf(std::string_view table, std::string_view pk) const;
  std::string CreatedName(std::string_view table) const;
  int32_t ShardOfCreated(std::string_view created_name, std::string_view pk) const {
    return cluster_->ShardOf(created_name, pk);
  }
  // The partition key a query is confined to, if its plan reads one.
  static std::optional<std::string> QueryPartition(const wire::Request& r);
  int32_t shards() const { return cluster_->shards(); }

  // Replicated acknowledgement: OK once every change record up to `lsn` is
  // delivered to Kafka and a fence check after that succeeded with every
  // shard in `shards` still served here at its epoch; ServerBusy otherwise
  // (outcome unknown). No-op (OK) with acks: local or no shards.
  Status AwaitReplicated(uint64_t lsn, const std::vector<ShardEpoch>& shards,
                         std::chrono::steady_clock::time_point deadline) const;
  bool replicated_acks() const { return replicated_; }
  cluster::Cluster* cluster() const { return cluster_; }
  // How long a replicated acknowledgement may wait (delivery and fence
  // check) before ServerBusy: the forward time-out.
  std::chrono::milliseconds ack_timeout() const { return forward_timeout_; }
  std::chrono::milliseconds rebalance_wait() const { return rebalance_wait_; }

  uint64_t forwarded() const { return forwarder_.forwarded(); }
  uint64_t forward_timeouts() const { return forwarder_.timeouts(); }
  uint64_t forward_unreachable() const { return forwarder_.unreachable(); }
  uint64_t forward_no_peer_key() const { return forwarder_.no_peer_key(); }
  uint64_t fanouts() const { return fanouts_.load(std::memory_order_relaxed); }
  uint64_t not_owner() const { return not_owner_.load(std::memory_order_relaxed); }
  uint64_t busy() const { return busy_.load(std::memory_order_relaxed); }

  // The plan string a fan-out's local part answers with names the shards it
  // covered, so the merging side can prove every shard answered once.
  static std::string PlanWithShards(std::string_view plan, const std::vector<char>& mask);
  // Merges the pages of a fan-out in key order (storage order: ordinal
  // UTF-16, engine/utf8.h). Each part is complete below
  // its own continuation, so the merged page holds the rows below the
  // smallest of them, at most `top`, and continues at the first row left
  // out (or at that smallest continuation). It also ends after the row that
  // takes its entities to `max_bytes` (about their encoded size), as a
  // member's own page does (engine/query/query.h): each part is bounded,
  // but N of them were N times the bound.
  static wire::QueryReply MergePages(std::vector<wire::QueryReply> pages, size_t top,
                                     const std::vector<std::string>& select,
                                     uint64_t max_bytes = query::kMaxPageBytes);
  static bool ShardsOfPlan(std::string_view plan, std::vector<int32_t>* shards);

 private:
  // The route of a shard, waiting while it has no serving owner.
  cluster::Route Resolve(int32_t shard, std::chrono::steady_clock::time_point deadline) const;
  // Forwards `r` to the owner of `shard`, re-routing on NotOwner until the deadline.
  bool ForwardKeyed(const wire::Request& r, int32_t shard, std::string* out, Code* code,
                    uint64_t* entities, std::string_view token);
  bool FanOutQuery(const wire::Request& r, const RunLocal& local, std::string* out, Code* code,
                   uint64_t* entities, std::string_view token);
  bool SplitWriteMany(const wire::Request& r, const RunLocal& local, std::string* out, Code* code,
                      uint64_t* entities, std::string_view token);
  Code Answer(const wire::Request& r, const Status& s, std::string* out) const;
  // The ServerBusy message for `what` ("shard 3") without a serving owner:
  // names Kafka when this sidecar cannot reach it.
  std::string NoOwner(const std::string& what) const;

  cluster::Cluster* cluster_;
  const Engine* engine_;
  changestream::Publisher* publisher_;
  const bool replicated_;
  const std::chrono::milliseconds rebalance_wait_;
  const std::chrono::milliseconds forward_timeout_;
  mutable Forwarder forwarder_;
  mutable std::atomic<uint64_t> fanouts_{0}, not_owner_{0}, busy_{0};
};

// The message of the ServerBusy a sidecar answers a forwarded request with
// when it does not serve the shard: the forwarding side re-routes on it.
inline constexpr std::string_view kNotOwnerMessage = "NotOwner";

}  // namespace sidetable::sidecar
