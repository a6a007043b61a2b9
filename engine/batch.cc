#include "engine/batch.h"

#include "engine/limits.h"

#include <charconv>

namespace sidetable {
namespace {
constexpr std::string_view kOpNames[] = {"", "Insert", "Update", "Merge", "Delete",
                                         "InsertOrReplace", "InsertOrMerge", "FencedUpsert",
                                         "FencedDelete"};
}

std::string_view OpKindName(OpKind kind) {
  auto i = static_cast<size_t>(kind);
  return i < std::size(kOpNames) ? kOpNames[i] : "";
}

bool ParseOpKind(std::string_view name, OpKind* kind) {
  for (size_t i = 1; i < std::size(kOpNames); i++) {
    if (kOpNames[i] == name) {
      *kind = static_cast<OpKind>(i);
      return true;
    }
  }
  return false;
}

Batch& Batch::Delete(std::string pk, std::string rk, std::string if_match) {
  Entity e;
  e.partition_key = std::move(pk);
  e.row_key = std::move(rk);
  return Add(OpKind::kDelete, std::move(e), std::move(if_match));
}

Batch& Batch::FencedUpsert(Entity e, uint64_t fence) {
  ops_.push_back({OpKind::kFencedUpsert, std::move(e), {}, fence});
  return *this;
}

Batch& Batch::FencedDelete(std::string pk, std::string rk, uint64_t fence) {
  Entity e;
  e.partition_key = std::move(pk);
  e.row_key = std::move(rk);
  ops_.push_back({OpKind::kFencedDelete, std::move(e), {}, fence});
  return *this;
}

uint64_t FenceOf(const Entity& e) {
  const Value* v = e.Find(kFenceProperty);
  if (v == nullptr) return 0;
  switch (v->type()) {
    case EdmType::kInt64: return v->as_int64() < 0 ? 0 : static_cast<uint64_t>(v->as_int64());
    case EdmType::kInt32: return v->as_int32() < 0 ? 0 : static_cast<uint64_t>(v->as_int32());
    case EdmType::kString: {
      uint64_t n = 0;
      const std::string& s = v->bytes();
      auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
      return ec == std::errc() && p == s.data() + s.size() ? n : 0;
    }
    default: return 0;
  }
}

Batch& Batch::Add(OpKind kind, Entity e, std::string if_match) {
  ops_.push_back({kind, std::move(e), std::move(if_match)});
  return *this;
}

size_t Batch::PayloadBytes() const {
  size_t total = 0;
  for (const auto& op : ops_) total += EntityPayloadBytes(op.entity) + op.if_match.size();
  return total;
}

}  // namespace sidetable
