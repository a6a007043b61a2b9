// A tour of the table engine, in process: the guide's employee example.
// Until the sidecar exists this is the project's main demo.
//
// usage: engine_demo [--dir PATH]   (default: a fresh directory under /tmp)
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "engine/engine.h"

using namespace sidetable;

namespace {

Entity Employee(const std::string& dept, const std::string& id, const std::string& first,
                const std::string& last, int age) {
  Entity e;
  e.partition_key = dept;
  e.row_key = id;
  e.Set("FirstName", Value::String(first))
      .Set("LastName", Value::String(last))
      .Set("Age", Value::Int32(age))
      .Set("HireDate", Value::DateTime(*ParseDateTime("2019-05-20T09:00:00Z")))
      .Set("Salary", Value::Int64(5'400'000'000LL));
  return e;
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) {
    std::fprintf(stderr, "%s failed: %s\n", what, s.ToString().c_str());
    std::exit(1);
  }
}

void Print(const Entity& e) {
  std::printf("  (%s, %s) %s", e.partition_key.c_str(), e.row_key.c_str(), e.etag.c_str());
  for (const auto& p : e.properties) std::printf(" %s=%s", p.name.c_str(), p.value.ToString().c_str());
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  if (argc == 3 && std::string(argv[1]) == "--dir") {
    dir = argv[2];
  } else {
    char tmpl[] = "/tmp/sidetable-demo-XXXXXX";
    dir = mkdtemp(tmpl);
  }
  EngineOptions options;
  options.durability = Durability::kFsync;
  auto opened = Engine::Open(options, dir + "/db");
  Check(opened.status(), "open");
  Engine& db = **opened;
  std::printf("sidetable engine demo, database in %s\n\n", dir.c_str());

  Status created = db.CreateTable("Employees", "demo");
  if (!created.ok() && created.code() != Code::kTableAlreadyExists) Check(created, "create table");

  std::printf("1. An entity group transaction inserts three employees of Sales atomically:\n");
  Batch hire("Employees");
  hire.SetCaller("hr-app")
      .InsertOrReplace(Employee("Sales", "000223", "Jonas", "Jones", 34))
      .InsertOrReplace(Employee("Sales", "000224", "Ana", "Silva", 29))
      .InsertOrReplace(Employee("Sales", "000225", "Piotr", "Nowak", 41));
  auto w = db.Execute(hire);
  Check(w.status(), "batch");
  std::printf("   committed at LSN %llu\n\n", static_cast<unsigned long long>(w->lsn));

  std::printf("2. Optimistic concurrency: two updates from the same read.\n");
  auto jones = db.Get("Employees", "Sales", "000223");
  Check(jones.status(), "get");
  Entity raise = *jones;
  raise.Set("Salary", Value::Int64(5'600'000'000LL));
  Check(db.Execute(std::move(Batch("Employees").Update(raise, jones->etag))).status(), "update");
  auto stale = db.Execute(std::move(Batch("Employees").Update(raise, jones->etag)));
  std::printf("   first update: OK; second with the stale ETag: %s\n\n",
              stale.status().ToString().c_str());

  std::printf("3. Limits are enforced with Azure's error codes:\n");
  Entity bad = Employee("Sales", "a/b", "x", "y", 1);
  std::printf("   RowKey with '/': %s\n\n",
              db.Execute(std::move(Batch("Employees").Insert(bad))).status().ToString().c_str());

  std::printf("4. The Sales partition, in key order:\n");
  auto cur = db.Scan("Employees", ScanBounds::Partition("Sales"), nullptr);
  Check(cur.status(), "scan");
  for (; (*cur)->Valid(); (*cur)->Next()) {
    Entity e;
    Check((*cur)->Read(&e), "read");
    Print(e);
  }

  std::printf("\n5. The change log (the outbox Kafka will be fed from):\n");
  auto log = db.ReadChanges(0, 100);
  Check(log.status(), "read changes");
  for (const ChangeRecord& r : log->records) {
    std::printf("  LSN %llu %s %s table=%s pk=%s caller=%s ops=%zu\n",
                static_cast<unsigned long long>(r.lsn), FormatDateTime(r.commit_time).c_str(),
                std::string(ChangeKindName(r.kind)).c_str(), r.table.c_str(),
                r.partition_key.c_str(), r.caller.c_str(), r.ops.size());
  }
  std::printf("\ndone.\n");
  return 0;
}
