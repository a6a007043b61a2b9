#include "sidecar/cluster_routing.h"

#include <algorithm>
#include <future>
#include <map>
#include <set>
#include <thread>

#include "engine/limits.h"
#include "engine/query/query.h"
#include "engine/utf8.h"
#include "sidecar/changestream/publisher.h"

namespace sidetable::sidecar {
namespace {

using Clock = std::chrono::steady_clock;

bool IsNotOwner(const Status& s) {
  return s.code() == Code::kServerBusy && s.message().find(kNotOwnerMessage) != std::string::npos;
}

Status Busy(std::string why) { return Status(Code::kServerBusy, std::move(why)); }

// (PartitionKey, RowKey) in storage order: Azure's ordinal UTF-16 order, the
// order every member's part and continuation follow (engine/utf8.h). Plain
// std::string comparison is UTF-8 byte order, which puts U+E000..U+FFFF
// before the supplementary planes: merging by it misordered a page, and a
// continuation picked by it made the next page skip rows.
bool KeyLess(std::string_view a_pk, std::string_view a_rk, std::string_view b_pk,
             std::string_view b_rk) {
  const int c = CompareOrdinal(a_pk, b_pk);
  return c < 0 || (c == 0 && CompareOrdinal(a_rk, b_rk) < 0);
}

// The $select a fan-out asks its parts for: the caller's, with the keys
// the merge orders by and continues at. A part leaves out keys not
// selected; before session 38 the caller's $select went as it was, the
// merged rows had keys "", and a page cut at $top continued at ("", ""):
// a client following it read the first page for ever. The merged page is
// projected by the caller's own $select. Over the $select bound (a select
// of 254-255 distinct user names) the parts send whole entities.
std::vector<std::string> PartSelect(const std::vector<std::string>& select) {
  if (select.empty()) return select;
  std::vector<std::string> out = {"PartitionKey", "RowKey"};
  for (const auto& name : select) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  if (out.size() > Limits::kMaxUserProperties + 3) out.clear();
  return out;
}

// The merged page's entities hold only the selected user properties: the
// encoder leaves out unselected keys and adds nils, but writes every
// property an entity holds, and a part sends whole entities when the keys
// the merge needs would pass the $select bound (PartSelect).
void ProjectUserProperties(const std::vector<std::string>& select, std::vector<Entity>* entities) {
  if (select.empty()) return;
  const std::set<std::string_view> wanted(select.begin(), select.end());
  for (Entity& e : *entities) {
    std::erase_if(e.properties, [&](const Property& p) { return !wanted.contains(p.name); });
  }
}

}  // namespace

ClusterRouting::ClusterRouting(cluster::Cluster* cluster, const Engine* engine,
                               changestream::Publisher* publisher, bool replicated_acks,
                               std::chrono::milliseconds rebalance_wait,
                               std::chrono::milliseconds forward_timeout, std::string member_id,
                               curve::KeyPair curve)
    : cluster_(cluster), engine_(engine), publisher_(publisher), replicated_(replicated_acks && publisher != nullptr),
      rebalance_wait_(rebalance_wait), forward_timeout_(forward_timeout),
      forwarder_(std::move(member_id), std::move(curve)) {}

std::string ClusterRouting::CreatedName(std::string_view table) const {
  auto info = engine_->GetTable(table);
  return info.ok() ? info->name : std::string(table);
}

int32_t ClusterRouting::ShardOf(std::string_view table, std::string_view pk) const {
  return cluster_->ShardOf(CreatedName(table), pk);
}

Code ClusterRouting::Answer(const wire::Request& r, const Status& s, std::string* out) const {
  wire::Header h{wire::kVersion, static_cast<uint8_t>(r.op), 0, r.id};
  wire::EncodeError(h, s, out);
  if (s.code() == Code::kServerBusy) busy_.fetch_add(1, std::memory_order_relaxed);
  return s.code();
}

cluster::Route ClusterRouting::Resolve(int32_t shard, Clock::time_point deadline) const {
  cluster::Route route = cluster_->RouteShard(shard);
  if (route.kind != cluster::Route::Kind::kUnavailable) return route;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  if (left.count() <= 0) return route;
  return cluster_->AwaitRoute(shard, left);
}

Result<ShardEpoch> ClusterRouting::LocalShard(std::string_view table, std::string_view pk) const {
  const int32_t shard = ShardOf(table, pk);
  cluster::Route route = cluster_->RouteShard(shard);
  if (route.kind != cluster::Route::Kind::kLocal) {
    not_owner_.fetch_add(1, std::memory_order_relaxed);
    return Busy(std::string(kNotOwnerMessage) + ": shard " + std::to_string(shard) +
                " is not served by this sidecar now; not executed, retry");
  }
  return ShardEpoch{shard, route.epoch};
}

std::vector<char> ClusterRouting::ServingMask() const {
  std::vector<char> mask(static_cast<size_t>(cluster_->shards()), 0);
  for (const cluster::Route& route : cluster_->Routes()) {
    if (route.kind == cluster::Route::Kind::kLocal && route.shard >= 0 &&
        route.shard < static_cast<int32_t>(mask.size())) {
      mask[static_cast<size_t>(route.shard)] = 1;
    }
  }
  return mask;
}

std::string ClusterRouting::PlanWithShards(std::string_view plan, const std::vector<char>& mask) {
  std::string out(plan);
  out += ";shards=";
  bool first = true;
  for (size_t i = 0; i < mask.size(); i++) {
    if (!mask[i]) continue;
    if (!first) out += ',';
    out += std::to_string(i);
    first = false;
  }
  return out;
}

bool ClusterRouting::ShardsOfPlan(std::string_view plan, std::vector<int32_t>* shards) {
  const size_t at = plan.rfind(";shards=");
  if (at == std::string_view::npos) return false;
  std::string_view list = plan.substr(at + 8);
  shards->clear();
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view item = list.substr(0, comma);
    int32_t v = 0;
    if (item.empty() || item.size() > 6) return false;
    for (char c : item) {
      if (c < '0' || c > '9') return false;
      v = v * 10 + (c - '0');
    }
    shards->push_back(v);
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return true;
}

namespace {

// About what `e` takes in a reply: its keys, and each property's name and
// value with a few bytes of framing (a number's value is in the framing).
uint64_t EncodedEstimate(const Entity& e) {
  uint64_t n = e.partition_key.size() + e.row_key.size() + 64;
  for (const Property& p : e.properties) n += p.name.size() + p.value.bytes().size() + 10;
  return n;
}

}  // namespace

wire::QueryReply ClusterRouting::MergePages(std::vector<wire::QueryReply> pages, size_t top,
                                            const std::vector<std::string>& select,
                                            uint64_t max_bytes) {
  using Key = std::pair<std::string, std::string>;
  std::optional<Key> limit;
  for (const auto& page : pages) {
    if (!page.next_pk) continue;
    Key k{*page.next_pk, page.next_rk.value_or("")};
    if (!limit || KeyLess(k.first, k.second, limit->first, limit->second)) limit = std::move(k);
  }
  wire::QueryReply merged;
  merged.select = select;
  for (auto& page : pages) {
    for (auto& e : page.entities) {
      if (limit && !KeyLess(e.partition_key, e.row_key, limit->first, limit->second)) continue;
      merged.entities.push_back(std::move(e));
    }
  }
  std::sort(merged.entities.begin(), merged.entities.end(), [](const Entity& a, const Entity& b) {
    return KeyLess(a.partition_key, a.row_key, b.partition_key, b.row_key);
  });
  ProjectUserProperties(select, &merged.entities);
  // The rows kept: at most `top`, and none after the one that reaches
  // max_bytes (at least one).
  size_t keep = std::min(top, merged.entities.size());
  uint64_t bytes = 0;
  for (size_t i = 0; i < keep; i++) {
    bytes += EncodedEstimate(merged.entities[i]);
    if (bytes >= max_bytes) keep = i + 1;
  }
  if (merged.entities.size() > keep) {
    merged.next_pk = merged.entities[keep].partition_key;
    merged.next_rk = merged.entities[keep].row_key;
    merged.entities.resize(keep);
  } else if (limit) {
    merged.next_pk = limit->first;
    merged.next_rk = limit->second;
  }
  return merged;
}

std::optional<std::string> ClusterRouting::QueryPartition(const wire::Request& r) {
  query::Query q;
  q.table = r.table;
  q.filter = r.filter;
  auto plan = query::Explain(q);
  if (!plan.ok()) return std::nullopt;  // the owner (any) reports the error
  switch (plan->kind) {
    case query::PlanKind::kPoint:
      return plan->point_partition_key;
    case query::PlanKind::kPartitionRange:
    case query::PlanKind::kPartitionScan:
      if (plan->bounds.start) return plan->bounds.start->first;
      return std::nullopt;
    default:
      return std::nullopt;
  }
}

bool ClusterRouting::NeedsForwarding(const wire::Request& r) const {
  if (r.forwarded) return false;
  using wire::Op;
  switch (r.op) {
    case Op::kWrite:
      return !r.ops.empty() && !ServesHere(r.table, r.ops[0].entity.partition_key);
    case Op::kGet:
    case Op::kRequestArchive:
      return !ServesHere(r.table, r.pk);
    case Op::kQuery: {
      auto pk = QueryPartition(r);
      return !pk || !ServesHere(r.table, *pk);
    }
    case Op::kWriteMany:
      for (const auto& w : r.writes) {
        if (!w.ops.empty() && !ServesHere(w.table, w.ops[0].entity.partition_key)) return true;
      }
      return false;
    default:
      return false;
  }
}

bool ClusterRouting::Intercept(const wire::Request& r, const RunLocal& local, std::string* out,
                               Code* code, uint64_t* entities, std::string_view token) {
  if (r.forwarded) return false;  // runs here or is refused as NotOwner (Handler)
  using wire::Op;
  switch (r.op) {
    case Op::kWrite:
      if (r.ops.empty()) return false;  // the engine's own error
      return ForwardKeyed(r, ShardOf(r.table, r.ops[0].entity.partition_key), out, code, entities,
                          token);
    case Op::kGet:
    case Op::kRequestArchive:
      return ForwardKeyed(r, ShardOf(r.table, r.pk), out, code, entities, token);
    case Op::kQuery: {
      auto pk = QueryPartition(r);
      if (pk) return ForwardKeyed(r, ShardOf(r.table, *pk), out, code, entities, token);
      return FanOutQuery(r, local, out, code, entities, token);
    }
    case Op::kWriteMany:
      return SplitWriteMany(r, local, out, code, entities, token);
    default:
      return false;  // tables, watermarks, the change log, tokens: this sidecar's own
  }
}

std::string ClusterRouting::NoOwner(const std::string& what) const {
  // Without Kafka no owner can be assigned: say so, not "a rebalance".
  const std::string kafka = cluster_->KafkaProblem();
  if (!kafka.empty())
    return what + " has no serving owner: " + kafka + "; not executed, retry once Kafka answers";
  return what + " has no serving owner (a rebalance or restore is under way); not executed, retry";
}

bool ClusterRouting::ForwardKeyed(const wire::Request& r, int32_t shard, std::string* out,
                                  Code* code, uint64_t* entities, std::string_view token) {
  const auto deadline = Clock::now() + rebalance_wait_;
  for (;;) {
    cluster::Route route = Resolve(shard, deadline);
    if (route.kind == cluster::Route::Kind::kLocal) return false;
    if (route.kind == cluster::Route::Kind::kUnavailable) {
      *code = Answer(r, Busy(NoOwner("shard " + std::to_string(shard))), out);
      return true;
    }
    std::string frame;
    if (token.empty()) {
      wire::EncodeRequest(r, &frame);
    } else {
      wire::Request with_token = r;
      with_token.token = std::string(token);
      wire::EncodeRequest(with_token, &frame);
    }
    auto reply = forwarder_.Call(route.endpoint, route.curve_public_key, frame, Clock::now() + forward_timeout_);
    if (!reply.ok()) {
      *code = Answer(r, reply.status(), out);
      return true;
    }
    wire::Header h;
    std::string_view body;
    Status s = wire::DecodeReply(*reply, &h, &body);
    if (IsNotOwner(s) && Clock::now() < deadline) {
      // The owner map was behind: wait for the next one.
      not_owner_.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    if (IsNotOwner(s) && !cluster_->KafkaProblem().empty()) {
      // The owner map still names a member that lost the shard, and without
      // Kafka no one can be assigned it: say that, not the peer's NotOwner.
      *code = Answer(r, Busy(NoOwner("shard " + std::to_string(shard))), out);
      return true;
    }
    wire::SetRequestId(&*reply, r.id);
    out->append(*reply);
    *code = s.ok() ? Code::kOk : s.code();
    *entities = 0;
    return true;
  }
}

bool ClusterRouting::FanOutQuery(const wire::Request& r, const RunLocal& local, std::string* out,
                                 Code* code, uint64_t* entities, std::string_view token) {
  fanouts_.fetch_add(1, std::memory_order_relaxed);
  const auto deadline = Clock::now() + rebalance_wait_;
  const int32_t n = cluster_->shards();
  Status last = Busy("a query over every shard could not reach an owner of each; retry");
  for (;;) {
    if (Clock::now() >= deadline) break;
    // One request per member that serves shards; ourselves through `local`.
    // member -> (endpoint, its CURVE key); endpoint "" = here
    std::map<std::string, std::pair<std::string, std::string>> members;
    bool unavailable = false;
    for (int32_t shard = 0; shard < n; shard++) {
      cluster::Route route = Resolve(shard, deadline);
      if (route.kind == cluster::Route::Kind::kUnavailable) {
        unavailable = true;
        break;
      }
      if (route.kind == cluster::Route::Kind::kLocal) {
        members[std::string()] = {};
      } else {
        members[route.member] = {route.endpoint, route.curve_public_key};
      }
    }
    if (unavailable) {
      last = Busy(NoOwner("a shard"));
      break;
    }
    wire::Request sub = r;
    sub.forwarded = true;
    sub.select = PartSelect(r.select);
    if (!token.empty()) sub.token = std::string(token);
    std::string frame;
    wire::EncodeRequest(sub, &frame);
    std::vector<wire::QueryReply> pages;
    std::vector<int> covered(static_cast<size_t>(n), 0);
    bool retry = false;
    Status failed = Status::OK();
    for (const auto& [member, peer] : members) {
      const auto& [endpoint, key] = peer;
      std::string reply;
      if (endpoint.empty()) {
        uint64_t ignored = 0;
        local(sub, &reply, &ignored);
      } else {
        auto got = forwarder_.Call(endpoint, key, frame, Clock::now() + forward_timeout_);
        if (!got.ok()) {
          failed = got.status();
          break;
        }
        reply = std::move(*got);
      }
      wire::Header h;
      std::string_view body;
      Status s = wire::DecodeReply(reply, &h, &body);
      if (IsNotOwner(s)) {
        retry = true;
        break;
      }
      if (!s.ok()) {
        failed = s;
        break;
      }
      wire::QueryReply page;
      s = wire::DecodeQuery(body, &page);
      std::vector<int32_t> shards;
      if (!s.ok() || !ShardsOfPlan(page.plan, &shards)) {
        failed = s.ok() ? Status(Code::kInternal, "a fan-out part did not say which shards it covered") : s;
        break;
      }
      for (int32_t shard : shards) {
        if (shard >= 0 && shard < n) covered[static_cast<size_t>(shard)]++;
      }
      pages.push_back(std::move(page));
    }
    if (!failed.ok()) {
      *code = Answer(r, failed, out);
      return true;
    }
    // Every shard exactly once, or the owners moved while we asked.
    for (int c : covered) retry = retry || c != 1;
    if (retry) {
      not_owner_.fetch_add(1, std::memory_order_relaxed);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      continue;
    }
    uint64_t examined = 0;
    for (const auto& page : pages) examined += page.examined;
    const size_t parts = pages.size();
    wire::QueryReply merged =
        MergePages(std::move(pages), static_cast<size_t>(r.top.value_or(query::kMaxPageSize)), r.select);
    merged.plan = "FanOut(" + std::to_string(parts) + " sidecars)";
    merged.examined = examined;
    *entities = merged.entities.size();
    wire::Header h{wire::kVersion, static_cast<uint8_t>(r.op), 200, r.id};
    wire::AppendHeader(out, h);
    wire::EncodeQuery(merged, out);
    *code = Code::kOk;
    return true;
  }
  // Owners that kept answering NotOwner: without Kafka no one can be assigned their shards.
  if (!cluster_->KafkaProblem().empty()) last = Busy(NoOwner("a shard"));
  *code = Answer(r, last, out);
  return true;
}

bool ClusterRouting::SplitWriteMany(const wire::Request& r, const RunLocal& local, std::string* out,
                                    Code* code, uint64_t* entities, std::string_view token) {
  const auto deadline = Clock::now() + rebalance_wait_;
  // Where each EGT goes: "" here, else the owner's endpoint.
  std::vector<std::string> where(r.writes.size());
  std::map<std::string, std::string> keys;  // owner's endpoint -> its CURVE key
  std::vector<std::optional<Status>> refused(r.writes.size());
  bool all_here = true;
  for (size_t i = 0; i < r.writes.size(); i++) {
    const auto& w = r.writes[i];
    if (w.ops.empty()) continue;  // here: the engine's own error
    const int32_t shard = ShardOf(w.table, w.ops[0].entity.partition_key);
    cluster::Route route = Resolve(shard, deadline);
    if (route.kind == cluster::Route::Kind::kRemote) {
      where[i] = route.endpoint;
      keys[route.endpoint] = route.curve_public_key;
      all_here = false;
    } else if (route.kind == cluster::Route::Kind::kUnavailable) {
      refused[i] = Busy(NoOwner("shard " + std::to_string(shard)));
      all_here = false;
    }
  }
  if (all_here) return false;
  std::vector<Result<WriteResult>> results(r.writes.size(), Status(Code::kInternal, "not executed"));
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t i = 0; i < r.writes.size(); i++) {
    if (refused[i]) {
      results[i] = *refused[i];
      busy_.fetch_add(1, std::memory_order_relaxed);
    } else {
      groups[where[i]].push_back(i);
    }
  }
  uint64_t written = 0;
  for (const auto& [endpoint, indexes] : groups) {
    wire::Request sub = r;
    if (!token.empty()) sub.token = std::string(token);
    sub.writes.clear();
    for (size_t i : indexes) sub.writes.push_back(r.writes[i]);
    std::string reply;
    if (endpoint.empty()) {
      sub.forwarded = true;
      uint64_t n = 0;
      local(sub, &reply, &n);
      written += n;
    } else {
      std::string frame;
      wire::EncodeRequest(sub, &frame);
      auto got = forwarder_.Call(endpoint, keys[endpoint], frame, Clock::now() + forward_timeout_);
      if (!got.ok()) {
        for (size_t i : indexes) results[i] = got.status();
        continue;
      }
      reply = std::move(*got);
    }
    wire::Header h;
    std::string_view body;
    Status s = wire::DecodeReply(reply, &h, &body);
    std::vector<Result<WriteResult>> part;
    if (s.ok()) s = wire::DecodeWriteMany(body, &part);
    if (s.ok() && part.size() != indexes.size()) s = Status(Code::kInternal, "a WriteMany part answered the wrong count");
    for (size_t k = 0; k < indexes.size(); k++) {
      if (!s.ok()) {
        results[indexes[k]] = s;
      } else {
        results[indexes[k]] = std::move(part[k]);
      }
    }
  }
  *entities = written;
  wire::Header h{wire::kVersion, static_cast<uint8_t>(r.op), 200, r.id};
  wire::AppendHeader(out, h);
  wire::EncodeWriteMany(results, out);
  *code = Code::kOk;
  return true;
}

Status ClusterRouting::AwaitReplicated(uint64_t lsn, const std::vector<ShardEpoch>& shards,
                                       Clock::time_point deadline) const {
  if (!replicated_ || shards.empty() || lsn == 0) return Status::OK();
  // 1. The change records are on Kafka (acks=all).
  auto pause = std::chrono::microseconds(100);
  while (publisher_->published_lsn() < lsn) {
    if (Clock::now() >= deadline) {
      busy_.fetch_add(1, std::memory_order_relaxed);
      return Busy("the write is committed here but its change was not delivered to Kafka in time; outcome "
                  "unknown, retry with the same client request id");
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(2000));
  }
  // 2. The group had not moved on after that delivery, and this sidecar
  // still serves each shard at the epoch it wrote with (a shard lost and
  // regained in between is another ownership). The cluster answers every
  // check made before one offset commit with that commit.
  std::vector<std::future<Status>> results;
  for (const ShardEpoch& se : shards) {
    auto done = std::make_shared<std::promise<Status>>();
    results.push_back(done->get_future());
    cluster_->CheckFence([done](Status s) { done->set_value(std::move(s)); }, se.shard, se.epoch);
  }
  for (size_t i = 0; i < results.size(); i++) {
    if (results[i].wait_until(deadline) != std::future_status::ready) {
      busy_.fetch_add(1, std::memory_order_relaxed);
      return Busy("the ownership check did not complete in time; outcome unknown, retry with the same client "
                  "request id");
    }
    Status fence = results[i].get();
    if (!fence.ok()) {
      busy_.fetch_add(1, std::memory_order_relaxed);
      return Busy("shard " + std::to_string(shards[i].shard) + ": ownership changed while the write was "
                  "acknowledged (" + fence.message() + "); outcome unknown, retry with the same client request id");
    }
  }
  return Status::OK();
}

}  // namespace sidetable::sidecar
