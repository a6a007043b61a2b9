#include "sidecar/admission.h"

namespace sidetable::sidecar {

std::string_view BusyReasonName(BusyReason r) {
  static constexpr std::string_view kNames[kBusyReasons] = {
      "queue_full", "inflight_bytes", "connection_requests", "connection_bytes", "shutting_down",
      "tenant_quota"};
  const auto i = static_cast<size_t>(r);
  return i < kBusyReasons ? kNames[i] : "unknown";
}

bool Admission::TryAdmit(const std::string& identity, uint64_t bytes, BusyReason* why,
                         bool charge) {
  std::lock_guard lock(mu_);
  const uint64_t total = bytes_.load(std::memory_order_relaxed);
  // An idle server admits anything (the frame is already under
  // max_request_bytes), so no legal request is refused forever.
  if (total > 0 && total + bytes > limits_.max_bytes) {
    *why = BusyReason::kInflightBytes;
    return false;
  }
  auto it = connections_.find(identity);
  if (it != connections_.end()) {
    if (it->second.requests >= limits_.max_connection_requests) {
      *why = BusyReason::kConnectionRequests;
      return false;
    }
    if (it->second.bytes + bytes > limits_.max_connection_bytes) {
      *why = BusyReason::kConnectionBytes;
      return false;
    }
  }
  if (!charge) return true;
  if (it == connections_.end()) it = connections_.emplace(identity, PerConnection{}).first;
  it->second.requests++;
  it->second.bytes += bytes;
  AddLocked(bytes);
  return true;
}

void Admission::Release(const std::string& identity, uint64_t bytes, const WorkerSet& queued_on) {
  std::lock_guard lock(mu_);
  auto it = connections_.find(identity);
  if (it == connections_.end()) {
    bytes_.store(bytes_.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
    return;
  }
  UnqueueLocked(it->second, queued_on);
  it->second.requests--;
  SubtractLocked(it, bytes);
}

void Admission::Unqueue(const std::string& identity, const WorkerSet& workers) {
  std::lock_guard lock(mu_);
  auto it = connections_.find(identity);
  if (it != connections_.end()) UnqueueLocked(it->second, workers);
}

void Admission::UnqueueLocked(PerConnection& c, const WorkerSet& workers) {
  if (workers.none()) return;
  for (size_t w = 0; w < c.queued.size(); w++) {
    if (workers.test(w) && c.queued[w] > 0) c.queued[w]--;
  }
}

void Admission::NoteQueued(const std::string& identity, const WorkerSet& workers) {
  std::lock_guard lock(mu_);
  auto it = connections_.find(identity);
  if (it == connections_.end()) return;
  std::vector<uint32_t>& q = it->second.queued;
  for (size_t w = 0; w < workers.size(); w++) {
    if (!workers.test(w)) continue;
    if (q.size() <= w) q.resize(w + 1);
    q[w]++;
  }
}

WorkerSet Admission::QueuedOn(const std::string& identity) const {
  WorkerSet out;
  std::lock_guard lock(mu_);
  auto it = connections_.find(identity);
  if (it == connections_.end()) return out;
  const std::vector<uint32_t>& q = it->second.queued;
  for (size_t w = 0; w < q.size(); w++) out.set(w, q[w] > 0);
  return out;
}

bool Admission::TryChargeReply(const std::string& identity, uint64_t bytes, bool refusable,
                               BusyReason* why) {
  std::lock_guard lock(mu_);
  auto it = connections_.find(identity);
  if (refusable && it != connections_.end() && it->second.reply_bytes > 0) {
    // Replies wait for this connection already: it is not reading them.
    if (it->second.bytes + bytes > limits_.max_connection_bytes) {
      *why = BusyReason::kConnectionBytes;
      return false;
    }
    if (bytes_.load(std::memory_order_relaxed) + bytes > limits_.max_bytes) {
      *why = BusyReason::kInflightBytes;
      return false;
    }
  }
  if (it == connections_.end()) it = connections_.emplace(identity, PerConnection{}).first;
  it->second.bytes += bytes;
  it->second.reply_bytes += bytes;
  reply_bytes_.store(reply_bytes_.load(std::memory_order_relaxed) + bytes,
                     std::memory_order_relaxed);
  AddLocked(bytes);
  return true;
}

void Admission::ReleaseReply(const std::string& identity, uint64_t bytes) {
  std::lock_guard lock(mu_);
  reply_bytes_.store(reply_bytes_.load(std::memory_order_relaxed) - bytes,
                     std::memory_order_relaxed);
  auto it = connections_.find(identity);
  if (it == connections_.end()) {
    bytes_.store(bytes_.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
    return;
  }
  it->second.reply_bytes -= bytes;
  SubtractLocked(it, bytes);
}

void Admission::AddLocked(uint64_t bytes) {
  const uint64_t now = bytes_.load(std::memory_order_relaxed) + bytes;
  bytes_.store(now, std::memory_order_relaxed);
  if (now > peak_.load(std::memory_order_relaxed)) peak_.store(now, std::memory_order_relaxed);
}

void Admission::SubtractLocked(std::unordered_map<std::string, PerConnection>::iterator it,
                               uint64_t bytes) {
  bytes_.store(bytes_.load(std::memory_order_relaxed) - bytes, std::memory_order_relaxed);
  it->second.bytes -= bytes;
  // Forget idle connections: the map holds only what is in flight, so it is
  // bounded by max_inflight_bytes, not by how many peers ever connected.
  if (it->second.requests == 0 && it->second.bytes == 0) connections_.erase(it);
}

size_t Admission::connections_in_flight() const {
  std::lock_guard lock(mu_);
  return connections_.size();
}

uint64_t DecodedBytes(const wire::Request& r) {
  auto str = [](const std::string& s) -> uint64_t { return sizeof(std::string) + s.size(); };
  uint64_t n = sizeof(wire::Request) + r.table.size() + r.caller.size() + r.pk.size() +
               r.rk.size() + r.filter.size() + r.target.size();
  for (const auto& s : r.select) n += str(s);
  for (const auto& s : r.rks) n += str(s);
  for (const auto& w : r.watermarks) n += sizeof(w) + w.derived.size() + w.source.size();
  for (const auto& t : r.after) n += sizeof(t) + t.source.size();
  n += r.derived.size();
  auto ops = [](const std::vector<Operation>& list) {
    uint64_t b = 0;
    for (const Operation& op : list) {
      b += sizeof(Operation) + op.entity.partition_key.size() + op.entity.row_key.size() +
           op.entity.etag.size() + op.if_match.size();
      for (const auto& p : op.entity.properties) b += sizeof(p) + p.name.size() + p.value.bytes().size();
    }
    return b;
  };
  n += ops(r.ops);
  for (const auto& item : r.writes) n += sizeof(item) + item.table.size() + ops(item.ops);
  return n;
}

}  // namespace sidetable::sidecar
