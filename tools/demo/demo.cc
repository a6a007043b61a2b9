// sidetable-demo: the guide's employee example, through a running sidecar.
//
//   sidetable-demo --endpoint tcp://127.0.0.1:5555
//
// scripts/demo.sh starts a sidecar and runs this against it.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <thread>

#include "client/client.h"
#include "client/entity_builder.h"

using namespace sidetable;
using sidetable::client::EntityBuilder;

namespace {

Entity Employee(const std::string& dept, const std::string& id, const std::string& first,
                const std::string& last, int age, const std::string& email) {
  return EntityBuilder(dept, id)
      .String("FirstName", first)
      .String("LastName", last)
      .Int32("Age", age)
      .String("Email", email)
      .DateTime("HireDate", "2019-05-20T09:00:00Z")
      .Int64("Salary", 5'400'000'000LL)
      .Build();
}

void Show(const Entity& e) {
  std::printf("   (%s, %s) %s", e.partition_key.c_str(), e.row_key.c_str(), e.etag.c_str());
  for (const auto& p : e.properties) std::printf(" %s=%s", p.name.c_str(), p.value.ToString().c_str());
  std::printf("\n");
}

int Fail(const char* what, const Status& s) {
  std::fprintf(stderr, "demo: %s failed: %s\n", what, s.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  client::ClientOptions options;
  options.caller = "demo-app";
  CLI::App app{"sidetable demo: the employee example"};
  bool with_workers = false;
  app.add_option("--endpoint", options.endpoint, "sidecar endpoint");
  app.add_flag("--with-workers", with_workers,
               "also show the pattern workers' index and archive tables (configs/worker.dev.yaml)");
  CLI11_PARSE(app, argc, argv);
  auto connected = client::Client::Connect(options);
  if (!connected.ok()) return Fail("connect", connected.status());
  client::Client& db = **connected;

  auto ping = db.Ping();
  if (!ping.ok()) return Fail("ping", ping.status());
  std::printf("connected to sidecar '%s' at %s\n\n", ping->sidecar_id.c_str(), options.endpoint.c_str());

  Status created = db.CreateTable("Employees");
  if (!created.ok() && created.code() != Code::kTableAlreadyExists) return Fail("create table", created);

  std::printf("1. One entity group transaction hires three people in Sales (all or nothing):\n");
  Batch hire("Employees");
  hire.SetCaller("hr-app")
      .InsertOrReplace(Employee("Sales", "000223", "Jonas", "Jones", 34, "jonesj@contoso.com"))
      .InsertOrReplace(Employee("Sales", "000224", "Ana", "Silva", 29, "silvaa@contoso.com"))
      .InsertOrReplace(Employee("Sales", "000225", "Piotr", "Nowak", 41, "nowakp@contoso.com"));
  auto w = db.Execute(hire);
  if (!w.ok()) return Fail("batch", w.status());
  std::printf("   committed at LSN %llu\n\n", static_cast<unsigned long long>(w->lsn));

  std::printf("2. Optimistic concurrency: two updates from the same read.\n");
  auto jones = db.Get("Employees", "Sales", "000223");
  if (!jones.ok()) return Fail("get", jones.status());
  Entity raise = *jones;
  raise.Set("Salary", Value::Int64(5'600'000'000LL));
  auto first = db.Update("Employees", raise, jones->etag);
  auto second = db.Update("Employees", raise, jones->etag);
  std::printf("   first: %s; second with the same ETag: %s\n\n", first.status().ToString().c_str(),
              second.status().ToString().c_str());

  std::printf("3. Bad input gets Azure's error codes and changes nothing:\n");
  std::printf("   RowKey with '/': %s\n",
              db.Insert("Employees", Employee("Sales", "a/b", "x", "y", 1, "z")).status().ToString().c_str());
  Batch mixed("Employees");
  mixed.Insert(Employee("Sales", "000226", "New", "Person", 22, "n@x"))
      .Insert(Employee("Sales", "000224", "Dup", "Licate", 50, "d@x"));
  std::printf("   batch inserting an existing employee: %s\n",
              db.Execute(mixed).status().ToString().c_str());
  std::printf("   ...so 000226 was not written either: %s\n\n",
              db.Get("Employees", "Sales", "000226").status().ToString().c_str());

  std::printf("4. A query: Sales employees older than 30 (a partition scan, pages of 2):\n");
  auto it = db.Query({.table = "Employees", .filter = "PartitionKey eq 'Sales' and Age gt 30",
                      .select = {"PartitionKey", "RowKey", "FirstName", "LastName", "Age"}, .top = 2});
  Entity e;
  while (it.Next(&e)) Show(e);
  if (!it.status().ok()) return Fail("query", it.status());
  std::printf("   (%zu page(s))\n\n", it.pages());

  std::printf("5. The change log every committed write lands in (Kafka is fed from it):\n");
  auto changes = db.ReadChanges(1, 100);
  if (!changes.ok()) return Fail("changes", changes.status());
  for (const ChangeRecord& r : changes->records) {
    std::printf("   LSN %llu %s %-12s table=%s pk=%s caller=%s ops=%zu\n",
                static_cast<unsigned long long>(r.lsn), FormatDateTime(r.commit_time).c_str(),
                std::string(ChangeKindName(r.kind)).c_str(), r.table.c_str(), r.partition_key.c_str(),
                r.caller.c_str(), r.ops.size());
  }
  if (with_workers) {
    std::printf("\n6. Piotr Nowak leaves: the app asks for an archive move (recorded in the change log).\n");
    auto lsn = db.RequestArchive("Employees", "Sales", {"000225"}, "EmployeesArchive");
    if (!lsn.ok()) return Fail("archive request", lsn.status());
    std::printf("   archive request at LSN %llu; the workers copy, then delete if unchanged\n",
                static_cast<unsigned long long>(*lsn));

    std::printf("\n7. Waiting for the workers (eventually consistent; at most 60 s)...\n");
    bool indexed = false, archived = false;
    for (int i = 0; i < 600 && !(indexed && archived); i++) {
      auto by_name = db.QueryPage({.table = "EmployeesByLastName", .filter = "PartitionKey eq 'Jones'"});
      indexed = by_name.ok() && !by_name->entities.empty();
      archived = db.Get("EmployeesArchive", "Sales", "000225").ok() &&
                 db.Get("Employees", "Sales", "000225").status().code() == Code::kResourceNotFound;
      if (!(indexed && archived)) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!indexed || !archived) {
      std::fprintf(stderr, "demo: the workers did not converge in 60 s (indexed=%d archived=%d)\n",
                   indexed, archived);
      return 1;
    }
    std::printf("\n8. Lookup by last name through the index table (one partition read):\n");
    auto it2 = db.Query({.table = "EmployeesByLastName", .filter = "PartitionKey eq 'Jones'"});
    while (it2.Next(&e)) Show(e);
    std::printf("\n9. Lookup by email:\n");
    auto it3 = db.Query({.table = "EmployeesByEmail", .filter = "PartitionKey eq 'silvaa@contoso.com'"});
    while (it3.Next(&e)) Show(e);
    std::printf("\n10. The archive now holds the former employee (and Employees no longer does):\n");
    auto it4 = db.Query({.table = "EmployeesArchive"});
    while (it4.Next(&e)) Show(e);
  }
  std::printf("\ndone.\n");
  return 0;
}
