// EntityBuilder: a typed, fluent way to build entities.
//
//   Entity e = EntityBuilder("Sales", "000223")
//                  .String("Name", "Jones").Int32("Age", 34)
//                  .Int64("Salary", 5'400'000'000).DateTime("Hired", "2019-05-20T09:00:00Z")
//                  .Build();
#pragma once

#include <string>

#include "engine/edm.h"

namespace sidetable::client {

class EntityBuilder {
 public:
  EntityBuilder(std::string pk, std::string rk) {
    e_.partition_key = std::move(pk);
    e_.row_key = std::move(rk);
  }
  EntityBuilder& String(std::string name, std::string v) { return Set(std::move(name), Value::String(std::move(v))); }
  EntityBuilder& Binary(std::string name, std::string v) { return Set(std::move(name), Value::Binary(std::move(v))); }
  EntityBuilder& Boolean(std::string name, bool v) { return Set(std::move(name), Value::Boolean(v)); }
  EntityBuilder& Double(std::string name, double v) { return Set(std::move(name), Value::Double(v)); }
  EntityBuilder& Int32(std::string name, int32_t v) { return Set(std::move(name), Value::Int32(v)); }
  EntityBuilder& Int64(std::string name, int64_t v) { return Set(std::move(name), Value::Int64(v)); }
  EntityBuilder& Guid(std::string name, const sidetable::Guid& g) { return Set(std::move(name), Value::MakeGuid(g)); }
  EntityBuilder& DateTimeTicks(std::string name, int64_t ticks) { return Set(std::move(name), Value::DateTime(ticks)); }
  // ISO 8601 UTC text; an unparsable text sets ticks 0, which the server
  // rejects as OutOfRangeInput (so the mistake is reported, not hidden).
  EntityBuilder& DateTime(std::string name, std::string_view iso) {
    return DateTimeTicks(std::move(name), ParseDateTime(iso).value_or(0));
  }
  // Moves the entity out: call once, last.
  Entity Build() { return std::move(e_); }
  const Entity& entity() const { return e_; }

 private:
  EntityBuilder& Set(std::string name, Value v) {
    e_.Set(std::move(name), std::move(v));
    return *this;
  }
  Entity e_;
};

}  // namespace sidetable::client
