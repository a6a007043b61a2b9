#include "engine/batch.h"

#include "engine/limits.h"

namespace sidetable {
namespace {
constexpr std::string_view kOpNames[] = {"", "Insert", "Update", "Merge", "Delete",
                                         "InsertOrReplace", "InsertOrMerge"};
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

Batch& Batch::Add(OpKind kind, Entity e, std::string if_match) {
  ops_.push_back({kind, std::move(e), std::move(if_match)});
  return *this;
}

size_t Batch::PayloadBytes() const {
  size_t total = 0;
  for (const auto& op : ops_) total += EntitySize(op.entity) + op.if_match.size();
  return total;
}

}  // namespace sidetable
