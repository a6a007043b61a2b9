// RowCache (internal/row_cache.h): per shard, an open-addressing table of
// (hash, node) and a second-chance (CLOCK) list of nodes.
//
// Why this shape: a hit should touch as few cache lines as possible, since
// the point of the cache is to avoid the memtable's chain of misses. A hit
// reads one slot (the hash is compared there), the node (its key and row
// lie right behind it, one allocation), and sets the node's referenced bit;
// it does not relink the node, which an LRU list would (two neighbours, two
// more misses). std::unordered_map cost a hit ~3 misses more than this
// (perf: its bucket walk was 6.6% of a point read's server samples).
#include "engine/internal/row_cache.h"

#include <xxhash.h>

#include <cstring>
#include <mutex>
#include <new>
#include <vector>

namespace sidetable::internal {

// One cached row: the node's header, then its key's and its row's bytes.
struct RowCache::Node {
  Node* prev;
  Node* next;
  size_t charge;
  uint64_t hash;  // of the key: eviction finds the node's slot by it
  uint32_t key_len;
  uint32_t row_len;
  bool referenced;  // read since it last passed the eviction hand

  const char* bytes() const { return reinterpret_cast<const char*>(this + 1); }
  std::string_view key() const { return {bytes(), key_len}; }
  std::string_view row() const { return {bytes() + key_len, row_len}; }

  static Node* Make(std::string_view key, std::string_view row, size_t charge, uint64_t hash) {
    void* mem = ::operator new(sizeof(Node) + key.size() + row.size());
    Node* n = new (mem) Node{nullptr,
                             nullptr,
                             charge,
                             hash,
                             static_cast<uint32_t>(key.size()),
                             static_cast<uint32_t>(row.size()),
                             false};
    char* p = reinterpret_cast<char*>(n + 1);
    std::memcpy(p, key.data(), key.size());
    std::memcpy(p + key.size(), row.data(), row.size());
    return n;
  }
  static void Free(Node* n) { ::operator delete(static_cast<void*>(n)); }
};

struct RowCache::Shard {
  // A slot's node is null when the slot is empty; its hash is compared
  // before the node is touched.
  struct Slot {
    uint64_t hash = 0;
    Node* node = nullptr;
  };
  static constexpr size_t kMinSlots = 64;

  explicit Shard(size_t cap) : capacity(cap), slots(kMinSlots) {}
  ~Shard() { DropAll(); }

  size_t mask() const { return slots.size() - 1; }

  // The slot holding `key`, or slots.size().
  size_t Find(std::string_view key, uint64_t h) const {
    for (size_t i = h & mask();; i = (i + 1) & mask()) {
      const Slot& s = slots[i];
      if (s.node == nullptr) return slots.size();
      if (s.hash == h && s.node->key() == key) return i;
    }
  }

  void Place(uint64_t h, Node* n) {
    size_t i = h & mask();
    while (slots[i].node != nullptr) i = (i + 1) & mask();
    slots[i] = Slot{h, n};
  }

  void Grow() {
    std::vector<Slot> old(slots.size() * 2);
    old.swap(slots);
    for (const Slot& s : old) {
      if (s.node != nullptr) Place(s.hash, s.node);
    }
  }

  // Empties slot i, shifting back the entries of its probe run that would
  // otherwise no longer be found (linear probing without tombstones).
  void EraseSlot(size_t i) {
    slots[i].node = nullptr;
    for (size_t j = (i + 1) & mask(); slots[j].node != nullptr; j = (j + 1) & mask()) {
      const size_t home = slots[j].hash & mask();
      // The entry at j stays if its home lies cyclically in (i, j].
      const bool stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
      if (stays) continue;
      slots[i] = slots[j];
      slots[j].node = nullptr;
      i = j;
    }
  }

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
  // `i` is n's slot.
  void Remove(size_t i) {
    Node* n = slots[i].node;
    EraseSlot(i);
    Unlink(n);
    bytes -= n->charge;
    entries--;
    Node::Free(n);
  }
  // Second chance: the oldest node goes unless it was read since it last
  // came round; then it goes to the front and the next oldest is tried.
  void EvictOne() {
    for (;;) {
      Node* n = head.prev;
      if (n->referenced) {
        n->referenced = false;
        Unlink(n);
        PushFront(n);
        continue;
      }
      Remove(Find(n->key(), n->hash));
      return;
    }
  }
  void DropAll() {
    for (Node* n = head.next; n != &head;) {
      Node* next = n->next;
      Node::Free(n);
      n = next;
    }
    head.prev = head.next = &head;
    std::vector<Slot>(kMinSlots).swap(slots);
    bytes = 0;
    entries = 0;
  }

  std::mutex mu;
  const size_t capacity;
  size_t bytes = 0;
  size_t entries = 0;
  uint64_t hits = 0, misses = 0;
  Node head{&head, &head, 0, 0, 0, 0, false};  // sentinel: head.next newest, head.prev oldest
  std::vector<Slot> slots;                     // a power of two, at most half full
};

RowCache::RowCache(size_t capacity_bytes, size_t shards) : capacity_(capacity_bytes) {
  if (shards == 0) shards = 1;
  shards_.reserve(shards);
  for (size_t i = 0; i < shards; i++) {
    shards_.push_back(std::make_unique<Shard>(capacity_bytes / shards));
  }
}

RowCache::~RowCache() = default;

RowCache::Shard& RowCache::ShardOf(std::string_view key, uint64_t* hash) {
  *hash = XXH3_64bits(key.data(), key.size());
  // The top bits: a shard's slots are chosen by the low ones.
  return *shards_[(*hash >> 48) % shards_.size()];
}

bool RowCache::Lookup(std::string_view key, std::string* row) {
  if (!enabled()) return false;
  uint64_t h;
  Shard& s = ShardOf(key, &h);
  std::lock_guard lock(s.mu);
  const size_t i = s.Find(key, h);
  if (i == s.slots.size()) {
    s.misses++;
    return false;
  }
  s.hits++;
  Node* n = s.slots[i].node;
  n->referenced = true;
  row->assign(n->row());
  return true;
}

void RowCache::Insert(std::string_view key, std::string_view row) {
  if (!enabled()) return;
  uint64_t h;
  Shard& s = ShardOf(key, &h);
  const size_t charge = key.size() + row.size() + kEntryOverhead;
  std::lock_guard lock(s.mu);
  const size_t i = s.Find(key, h);
  if (i != s.slots.size()) s.Remove(i);
  // One huge row must not empty a shard of hundreds of small ones.
  if (charge > s.capacity / 8) return;
  while (s.bytes + charge > s.capacity && s.entries > 0) s.EvictOne();
  if ((s.entries + 1) * 2 > s.slots.size()) s.Grow();
  Node* n = Node::Make(key, row, charge, h);
  s.PushFront(n);
  s.Place(h, n);
  s.bytes += charge;
  s.entries++;
}

void RowCache::Erase(std::string_view key) {
  if (!enabled()) return;
  uint64_t h;
  Shard& s = ShardOf(key, &h);
  std::lock_guard lock(s.mu);
  // Most writes are of keys nobody read: an empty shard answers at once.
  if (s.entries == 0) return;
  const size_t i = s.Find(key, h);
  if (i != s.slots.size()) s.Remove(i);
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
    st.entries += s->entries;
    st.bytes += s->bytes;
  }
  return st;
}

}  // namespace sidetable::internal
