#include "bench/entity_factory.h"

#include <cstdio>
#include <cstring>
#include <random>

#include "bench/harness.h"
#include "engine/internal/codec.h"

namespace sidetable::bench {

EntityFactory::EntityFactory() {
  std::mt19937_64 rng(42);
  static constexpr char kAlphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,";
  pool_.resize(1 << 16);
  for (char& c : pool_) c = kAlphabet[rng() % (sizeof kAlphabet - 1)];

  Guid g{};
  for (auto& b : g) b = static_cast<uint8_t>(rng());
  template_.Set("Name", Value::String("customer-000000"));
  template_.Set("Age", Value::Int32(42));
  template_.Set("Balance", Value::Double(1234.5));
  template_.Set("Active", Value::Boolean(true));
  template_.Set("Joined", Value::DateTime(kUnixEpochTicks + 1'700'000'000 * kTicksPerSecond));
  template_.Set("CustomerId", Value::MakeGuid(g));
  template_.Set("Notes", Value::String(std::string(Notes(0))));

  codec::EncodeRow(template_, /*version=*/1'000'000, NowTicks(), &row_);
  size_t at = row_.find(Notes(0));
  if (at == std::string::npos) Die("template row does not contain its Notes string");
  notes_offset_ = at;
}

std::string_view EntityFactory::Notes(uint64_t n) const {
  size_t span = pool_.size() - kNotesChars;
  return std::string_view(pool_).substr((n * 7919) % span, kNotesChars);
}

Entity EntityFactory::Make(std::string pk, std::string rk, uint64_t n) const {
  Entity e;
  e.partition_key = std::move(pk);
  e.row_key = std::move(rk);
  e.properties = template_.properties;
  e.properties[1].value = Value::Int32(static_cast<int32_t>(n % 100));
  e.properties[2].value = Value::Double(static_cast<double>(n) * 0.25);
  e.properties[6].value = Value::String(std::string(Notes(n)));
  return e;
}

void EntityFactory::RawValue(uint64_t n, std::string* out) const {
  out->assign(row_);
  std::memcpy(out->data() + notes_offset_, Notes(n).data(), kNotesChars);
}

std::string EntityFactory::PartitionKey(uint64_t p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "p%06llu", static_cast<unsigned long long>(p));
  return buf;
}

std::string EntityFactory::RowKey(uint64_t r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%010llu", static_cast<unsigned long long>(r));
  return buf;
}

}  // namespace sidetable::bench
