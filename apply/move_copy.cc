#include "apply/move_copy.h"

#include "engine/limits.h"

namespace sidetable::apply {
namespace {

// A property's share of Azure's entity size (EntitySize less its 4 fixed bytes).
size_t PropertyBytes(const std::string& name, const Value& value) {
  Entity one;
  one.Set(name, value);
  return EntitySize(one) - EntitySize(Entity());
}

}  // namespace

std::string MoveName(const patterns::TableOp& move) {
  return move.source_table + "(" + move.entity.partition_key + ", " + move.entity.row_key +
         ") -> " + move.table;
}

Status NameMove(const patterns::TableOp& move, const Status& s) {
  if (s.ok()) return s;
  return Status(s.code(), "move " + MoveName(move) + ": " + s.message());
}

Status CheckMoveCopy(const patterns::TableOp& move, const Entity& source) {
  const std::string name = patterns::kSourceVersionProperty;
  const Value* own = source.Find(name);  // the copy overwrites it rather than adding one
  const size_t properties = source.properties.size() + (own == nullptr ? 1 : 0);
  if (properties > Limits::kMaxUserProperties) {
    return Status(Code::kTooManyProperties,
                  "move " + MoveName(move) + ": cannot be archived: its copy would have " +
                      std::to_string(properties) + " user properties with " + name + ", at most " +
                      std::to_string(Limits::kMaxUserProperties));
  }
  const size_t size = EntitySize(source) - (own == nullptr ? 0 : PropertyBytes(name, *own)) +
                      PropertyBytes(name, Value::Int64(0));
  if (size > Limits::kMaxEntityBytes) {
    return Status(Code::kEntityTooLarge,
                  "move " + MoveName(move) + ": cannot be archived: its copy would be " +
                      std::to_string(size) + " bytes with " + name + ", at most " +
                      std::to_string(Limits::kMaxEntityBytes) + " (1 MiB)");
  }
  return Status::OK();
}

}  // namespace sidetable::apply
