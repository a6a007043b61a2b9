// RowCache (internal/row_cache.h): sharded LRU maps of key -> stored row.
#include "engine/internal/row_cache.h"

#include <functional>

namespace sidetable::internal {

// One cached row, in its shard's LRU list (most recent after the head).
struct RowCache::Node {
  Node* prev = nullptr;
  Node* next = nullptr;
  size_t charge = 0;
  std::string key;
  std::string row;
};

struct RowCache::Shard {
  explicit Shard(size_t cap) : capacity(cap) { head.prev = head.next = &head; }
  ~Shard() { DropAll(); }

  void Unlink(Node* n) {
    n->prev->next = n->next;
    n->next->prev = n->prev;
  }
  void PushFront(Node* n) {
    n->next = head.next;
    n->prev = &head;
    head.next->prev = n;
    head.next = n;
  }
  void Remove(Node* n) {
    Unlink(n);
    map.erase(std::string_view(n->key));
    bytes -= n->charge;
    delete n;
  }
  void DropAll() {
    for (Node* n = head.next; n != &head;) {
      Node* next = n->next;
      delete n;
      n = next;
    }
    head.prev = head.next = &head;
    map.clear();
    bytes = 0;
  }

  std::mutex mu;
  const size_t capacity;
  size_t bytes = 0;
  uint64_t hits = 0, misses = 0;
  Node head;  // sentinel of the LRU list
  // Views into the nodes' own keys.
  std::unordered_map<std::string_view, Node*> map;
};

RowCache::RowCache(size_t capacity_bytes, size_t shards) : capacity_(capacity_bytes) {
  if (shards == 0) shards = 1;
  shards_.reserve(shards);
  for (size_t i = 0; i < shards; i++)
    shards_.push_back(std::make_unique<Shard>(capacity_bytes / shards));
}

RowCache::~RowCache() = default;

RowCache::Shard& RowCache::ShardOf(std::string_view key) {
  // Bits the shard's own map does not use for its buckets (the low ones).
  return *shards_[(std::hash<std::string_view>{}(key) >> 40) % shards_.size()];
}

bool RowCache::Lookup(std::string_view key, std::string* row) {
  if (!enabled()) return false;
  Shard& s = ShardOf(key);
  std::lock_guard lock(s.mu);
  auto it = s.map.find(key);
  if (it == s.map.end()) {
    s.misses++;
    return false;
  }
  s.hits++;
  Node* n = it->second;
  s.Unlink(n);
  s.PushFront(n);
  row->assign(n->row);
  return true;
}

void RowCache::Insert(std::string_view key, std::string_view row) {
  if (!enabled()) return;
  Shard& s = ShardOf(key);
  const size_t charge = key.size() + row.size() + kEntryOverhead;
  std::lock_guard lock(s.mu);
  auto it = s.map.find(key);
  if (it != s.map.end()) s.Remove(it->second);
  // One huge row must not empty a shard of hundreds of small ones.
  if (charge > s.capacity / 8) return;
  while (s.bytes + charge > s.capacity && s.head.prev != &s.head) s.Remove(s.head.prev);
  auto* n = new Node;
  n->charge = charge;
  n->key.assign(key);
  n->row.assign(row);
  s.PushFront(n);
  s.map.emplace(std::string_view(n->key), n);
  s.bytes += charge;
}

void RowCache::Erase(std::string_view key) {
  if (!enabled()) return;
  Shard& s = ShardOf(key);
  std::lock_guard lock(s.mu);
  // Most writes are of keys nobody read: an empty shard answers at once.
  if (s.map.empty()) return;
  auto it = s.map.find(key);
  if (it != s.map.end()) s.Remove(it->second);
}

void RowCache::Clear() {
  for (auto& s : shards_) {
    std::lock_guard lock(s->mu);
    s->DropAll();
  }
}

RowCacheStats RowCache::Stats() const {
  RowCacheStats st;
  st.capacity = capacity_;
  for (const auto& s : shards_) {
    std::lock_guard lock(s->mu);
    st.hits += s->hits;
    st.misses += s->misses;
    st.entries += s->map.size();
    st.bytes += s->bytes;
  }
  return st;
}

}  // namespace sidetable::internal
