// A fresh engine in a scratch directory, plus helpers to prove that a failed
// call changed nothing.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "engine/engine.h"
#include "testing/temp_dir.h"

namespace sidetable::testing {

inline Entity MakeEntity(std::string pk, std::string rk, int n = 0) {
  Entity e;
  e.partition_key = std::move(pk);
  e.row_key = std::move(rk);
  e.Set("n", Value::Int32(n)).Set("name", Value::String("entity " + std::to_string(n)));
  return e;
}

// Every table's entities (keys, ETag, properties) and the change log position.
inline std::string DumpState(const Engine& engine) {
  std::string out;
  for (const TableInfo& t : engine.ListTables()) {
    out += "table " + t.name + "#" + std::to_string(t.id) + "\n";
    auto cur = engine.Scan(t.name, ScanBounds{}, nullptr);
    if (!cur.ok()) return "scan failed: " + cur.status().ToString();
    for (; (*cur)->Valid(); (*cur)->Next()) {
      Entity e;
      if (!(*cur)->Read(&e).ok()) return "read failed";
      out += "  (" + e.partition_key + "," + e.row_key + ") " + e.etag;
      for (const auto& p : e.properties) {
        out += " " + p.name + ":" + std::string(EdmTypeName(p.value.type())) + "=" + p.value.ToString();
      }
      out += "\n";
    }
  }
  out += "lsn " + std::to_string(engine.Stats().last_lsn) + "\n";
  return out;
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }

  void Reopen() {
    engine_.reset();
    auto e = Engine::Open(options_, dir_.Sub("db"));
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
  }

  Result<WriteResult> Run(Batch b) { return engine_->Execute(b); }
  Result<WriteResult> Insert(const std::string& table, Entity e) {
    return Run(std::move(Batch(table).Insert(std::move(e))));
  }

  EngineOptions options_ = [] {
    EngineOptions o;
    o.durability = Durability::kOs;
    o.block_cache_bytes = 8 << 20;
    o.write_buffer_bytes = 4 << 20;
    return o;
  }();
  TempDir dir_;
  std::unique_ptr<Engine> engine_;
};

// Runs `call`, expects `code`, and checks that the state did not change.
#define EXPECT_FAILS_UNCHANGED(call, expected_code)                         \
  do {                                                                      \
    std::string before_ = ::sidetable::testing::DumpState(*engine_);        \
    auto status_ = (call);                                                  \
    EXPECT_EQ(::sidetable::testing::StatusOf(status_).code(), expected_code) \
        << ::sidetable::testing::StatusOf(status_).ToString();              \
    EXPECT_EQ(::sidetable::testing::DumpState(*engine_), before_);          \
  } while (0)

inline const Status& StatusOf(const Status& s) { return s; }
template <typename T>
const Status& StatusOf(const Result<T>& r) { return r.status(); }

}  // namespace sidetable::testing
