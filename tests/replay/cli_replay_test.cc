// sidetable-cli replay, audit, rebuild and derive end to end: the real
// `sidetable` server and the real `sidetable-cli` binary, with the test as
// the independent oracle (it records every write it makes: LSN, caller,
// table, keys, operation and the entity before and after).
//
//   AuditListsExactlyTheWorkload     audit rows, callers, ops, property diffs,
//                                    every filter, --summary, --format csv
//   Resumed*                         --stop-after / SIGINT chunks + resume ==
//                                    one uninterrupted run, byte for byte
//   Rebuild*                         rebuild at random LSNs/times == what a
//                                    query of the live table returned then
//   Derive*                          derive under concurrent writes == the
//                                    index function of the source as of the
//                                    LSN it reports
//
// Randomness is seeded; the seed is printed with every failure and can be
// replayed with SIDETABLE_TEST_SEED=<seed>.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "client/client.h"
#include "client/entity_builder.h"
#include "events/entity_json.h"
#include "events/json_writer.h"
#include "patterns/index_table/index_table.h"
#include "patterns/registry.h"
#include "testing/child_process.h"
#include "testing/text.h"
#include "tests/sidecar/e2e_fixture.h"

namespace sidetable {
namespace {

using client::EntityBuilder;
using Key = std::pair<std::string, std::string>;
using Props = std::map<std::string, Value>;  // by name: the diff and the comparisons ignore order

// ---- seeds -----------------------------------------------------------------

uint64_t TestSeed() {
  if (const char* s = std::getenv("SIDETABLE_TEST_SEED")) return std::strtoull(s, nullptr, 10);
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

std::string SeedNote(uint64_t seed) {
  return "seed " + std::to_string(seed) + " (rerun with SIDETABLE_TEST_SEED=" + std::to_string(seed) + ")";
}

// ---- files and text ----------------------------------------------------------

std::string ReadAll(const std::string& path) { return testing::ReadWholeFile(path); }

void WriteAll(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

bool Exists(const std::string& path) { return std::filesystem::exists(path); }

using testing::Contains;
using testing::Lines;

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> Concat(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// ---- running the CLI ---------------------------------------------------------

struct CliRun {
  int exit_code = -1;
  std::string out, err;
};

std::string Describe(const CliRun& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout: " + r.out.substr(0, 3000) + "\nstderr: " + r.err;
}

// A sidetable-cli child whose stdout and stderr go to files.
struct CliChild {
  pid_t pid = -1;
  std::string out_path, err_path;
};

CliChild StartCli(const std::string& base, const std::vector<std::string>& args) {
  CliChild c;
  c.out_path = base + ".out";
  c.err_path = base + ".err";
  // SIDETABLE_CLI_UNDER_TEST runs the tests against another build of the CLI.
  const char* cli = std::getenv("SIDETABLE_CLI_UNDER_TEST");
  std::vector<std::string> argv_s = {cli && *cli ? cli : SIDETABLE_CLI};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  c.pid = fork();
  if (c.pid == 0) {
    int in = open("/dev/null", O_RDONLY);
    int out = open(c.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(c.err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (in < 0 || out < 0 || err < 0) _exit(126);
    dup2(in, STDIN_FILENO);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    unsetenv("SIDETABLE_ENDPOINT");
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return c;
}

// Waits at most `timeout` for the child (then kills it: exit_code -1).
CliRun WaitCli(CliChild& c, std::chrono::milliseconds timeout) {
  CliRun r;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (waitpid(c.pid, &status, WNOHANG) != c.pid) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(c.pid, SIGKILL);
      waitpid(c.pid, &status, 0);
      c.pid = -1;
      r.err = "timed out after " + std::to_string(timeout.count()) + " ms";
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  c.pid = -1;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = ReadAll(c.out_path);
  r.err = ReadAll(c.err_path);
  return r;
}

// ---- parsing the CLI's output --------------------------------------------------

// A value as an audit row writes it ("after":31 / "after":"7","after@odata.type":"Edm.Int64"),
// read by the documented rules of Azure's JSON format: an unannotated
// integer is Int32, a number with a fraction Double, a string String.
std::optional<Value> ParseSide(simdjson::dom::object row, const std::string& key, std::string* error) {
  simdjson::dom::element v;
  if (row[key].get(v) != simdjson::SUCCESS) return std::nullopt;
  std::string_view type;
  const bool annotated = row[key + "@odata.type"].get(type) == simdjson::SUCCESS;
  if (!annotated) {
    bool b;
    int64_t i;
    double d;
    std::string_view s;
    if (v.get(b) == simdjson::SUCCESS) return Value::Boolean(b);
    if (v.is_int64() && v.get(i) == simdjson::SUCCESS) return Value::Int32(static_cast<int32_t>(i));
    if (v.get(d) == simdjson::SUCCESS) return Value::Double(d);
    if (v.get(s) == simdjson::SUCCESS) return Value::String(std::string(s));
    *error = "unreadable value for " + key;
    return std::nullopt;
  }
  std::string_view s;
  if (v.get(s) != simdjson::SUCCESS) {
    *error = "annotated value " + key + " is not a string";
    return std::nullopt;
  }
  std::string text = R"({"PartitionKey":"k","RowKey":"k","V":)";
  json::AppendJsonString(s, &text);
  text += R"(,"V@odata.type":)";
  json::AppendJsonString(type, &text);
  text += "}";
  auto e = json::ParseEntityJson(text);
  if (!e.ok() || e->Find("V") == nullptr) {
    *error = "bad annotated value " + key + ": " + text;
    return std::nullopt;
  }
  return *e->Find("V");
}

struct SeenChange {
  std::string property, change;
  std::optional<Value> before, after;
};

struct AuditRow {
  uint64_t lsn = 0;
  std::string time, caller, table, op, etag;
  std::optional<std::string> pk, rk;
  bool has_changes = false;
  std::vector<SeenChange> changes;
};

std::string Str(simdjson::dom::object o, const char* key) {
  std::string_view s;
  return o[key].get(s) == simdjson::SUCCESS ? std::string(s) : std::string();
}

std::optional<std::string> OptStr(simdjson::dom::object o, const char* key) {
  std::string_view s;
  if (o[key].get(s) != simdjson::SUCCESS) return std::nullopt;
  return std::string(s);
}

// Audit JSON lines; adds a failure (and returns what it read) on a bad line.
std::vector<AuditRow> ParseAudit(const std::string& text) {
  std::vector<AuditRow> rows;
  simdjson::dom::parser parser;
  for (const std::string& line : Lines(text)) {
    simdjson::dom::object o;
    if (parser.parse(line).get(o) != simdjson::SUCCESS) {
      ADD_FAILURE() << "not a JSON object: " << line;
      continue;
    }
    AuditRow r;
    if (o["lsn"].get(r.lsn) != simdjson::SUCCESS) ADD_FAILURE() << "no lsn: " << line;
    r.time = Str(o, "time");
    r.caller = Str(o, "caller");
    r.table = Str(o, "table");
    r.op = Str(o, "op");
    r.etag = Str(o, "etag");
    r.pk = OptStr(o, "pk");
    r.rk = OptStr(o, "rk");
    simdjson::dom::array changes;
    if (o["changes"].get(changes) == simdjson::SUCCESS) {
      r.has_changes = true;
      for (simdjson::dom::element c : changes) {
        simdjson::dom::object co;
        if (c.get(co) != simdjson::SUCCESS) {
          ADD_FAILURE() << "a change is not an object: " << line;
          continue;
        }
        SeenChange sc;
        sc.property = Str(co, "property");
        sc.change = Str(co, "change");
        std::string error;
        sc.before = ParseSide(co, "before", &error);
        sc.after = ParseSide(co, "after", &error);
        if (!error.empty()) ADD_FAILURE() << error << " in " << line;
        r.changes.push_back(std::move(sc));
      }
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

// RFC 4180 records (CRLF line ends; quoted fields may hold commas, quotes, CR and LF).
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> fields;
  std::string field;
  size_t i = 0;
  bool at_field_start = true;
  while (i < text.size()) {
    const char c = text[i];
    if (at_field_start && c == '"') {
      i++;
      for (;;) {
        if (i >= text.size()) {
          ADD_FAILURE() << "unterminated quoted CSV field";
          return records;
        }
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            field.push_back('"');
            i += 2;
            continue;
          }
          i++;
          break;
        }
        field.push_back(text[i++]);
      }
      at_field_start = false;
      continue;
    }
    if (c == ',') {
      fields.push_back(std::move(field));
      field.clear();
      at_field_start = true;
      i++;
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      fields.push_back(std::move(field));
      field.clear();
      records.push_back(std::move(fields));
      fields.clear();
      at_field_start = true;
      i += 2;
    } else if (c == '\n' || c == '\r' || c == '"') {
      ADD_FAILURE() << "bare CR, LF or quote in an unquoted CSV field at byte " << i;
      return records;
    } else {
      field.push_back(c);
      at_field_start = false;
      i++;
    }
  }
  if (!fields.empty() || !field.empty()) ADD_FAILURE() << "CSV does not end with CRLF";
  return records;
}

// Entities from JSON lines (rebuild --output).
std::vector<Entity> ParseEntities(const std::string& text) {
  std::vector<Entity> out;
  for (const std::string& line : Lines(text)) {
    auto e = json::ParseEntityJson(line);
    if (!e.ok()) {
      ADD_FAILURE() << e.status().ToString() << ": " << line;
      continue;
    }
    out.push_back(std::move(e).value());
  }
  return out;
}

Props PropsOf(const Entity& e) {
  Props p;
  for (const Property& prop : e.properties) p[prop.name] = prop.value;
  return p;
}

// Keys -> properties (the content of a table, ignoring ETags and Timestamps).
using Content = std::map<Key, Props>;

Content ContentOf(const std::vector<Entity>& entities) {
  Content c;
  for (const Entity& e : entities) c[{e.partition_key, e.row_key}] = PropsOf(e);
  return c;
}

std::string PropsText(const Props& p) {
  std::string out = "{";
  for (const auto& [name, v] : p) out += name + ":" + v.ToString() + "(" + std::string(EdmTypeName(v.type())) + ") ";
  return out + "}";
}

// Where two contents differ, briefly (empty when equal).
std::string ContentDiff(const Content& want, const Content& got) {
  std::string out;
  size_t shown = 0, missing = 0, extra = 0, different = 0;
  for (const auto& [k, p] : want) {
    auto it = got.find(k);
    if (it == got.end()) {
      missing++;
      if (shown++ < 5) out += "missing (" + k.first + ", " + k.second + ") " + PropsText(p) + "\n";
    } else if (it->second != p) {
      different++;
      if (shown++ < 5) {
        out += "differs (" + k.first + ", " + k.second + "): want " + PropsText(p) + " got " + PropsText(it->second) + "\n";
      }
    }
  }
  for (const auto& [k, p] : got) {
    if (want.count(k) == 0) {
      extra++;
      if (shown++ < 5) out += "extra (" + k.first + ", " + k.second + ") " + PropsText(p) + "\n";
    }
  }
  if (missing + extra + different == 0) return "";
  return "missing " + std::to_string(missing) + ", extra " + std::to_string(extra) + ", different " +
         std::to_string(different) + "\n" + out;
}

// ---- the oracle: a random workload that records what it did -----------------------

struct ExpectedChange {
  std::string property, change;
  std::optional<Value> before, after;
};

// One audit row the test expects: an entity operation or a table event.
struct ExpectedRow {
  uint64_t lsn = 0;
  std::string caller, table, op;
  std::optional<std::string> pk, rk;
  std::vector<ExpectedChange> changes;
};

std::vector<ExpectedChange> DiffProps(const Props* before, const Props* after) {
  static const Props kNone;
  const Props& b = before ? *before : kNone;
  const Props& a = after ? *after : kNone;
  std::set<std::string> names;
  for (const auto& [n, v] : b) names.insert(n);
  for (const auto& [n, v] : a) names.insert(n);
  std::vector<ExpectedChange> out;
  for (const std::string& n : names) {  // byte order, as the audit sorts
    auto bi = b.find(n), ai = a.find(n);
    if (bi == b.end()) {
      out.push_back({n, "added", std::nullopt, ai->second});
    } else if (ai == a.end()) {
      out.push_back({n, "removed", bi->second, std::nullopt});
    } else if (bi->second != ai->second) {
      out.push_back({n, "modified", bi->second, ai->second});
    }
  }
  return out;
}

// The identifying part of a row, for readable list comparisons.
std::string RowId(uint64_t lsn, const std::string& caller, const std::string& table,
                  const std::optional<std::string>& pk, const std::optional<std::string>& rk, const std::string& op) {
  return std::to_string(lsn) + " by '" + caller + "' " + table + " (" + pk.value_or("-") + ", " + rk.value_or("-") +
         ") " + op;
}
std::string RowId(const ExpectedRow& r) { return RowId(r.lsn, r.caller, r.table, r.pk, r.rk, r.op); }
std::string RowId(const AuditRow& r) { return RowId(r.lsn, r.caller, r.table, r.pk, r.rk, r.op); }

const char* kPropertyNames[] = {"Age", "Name", "Email", "Big", "Score", "Active", "When", "Id", "Raw", "Note"};
const char* kStrings[] = {"plain", "with, comma", "a \"quoted\" word", "two\nlines", "\xc3\xa9t\xc3\xa9 \xe2\x82\xac",
                          "", "trailing space ", "cr\r\nlf"};

Value RandomValue(std::mt19937_64& rng) {
  switch (rng() % 8) {
    case 0: return Value::Int32(static_cast<int32_t>(rng() % 200) - 50);
    case 1: return Value::Int64(static_cast<int64_t>(rng() % 2'000'000'000'000ULL) - 1'000'000'000'000LL);
    case 2: return Value::String(kStrings[rng() % std::size(kStrings)]);
    case 3: return Value::Double(static_cast<double>(rng() % 100000) / 8.0 - 5000.5);
    case 4: return Value::Boolean(rng() % 2 == 0);
    case 5:
      return Value::DateTime(kUnixEpochTicks + static_cast<int64_t>(rng() % 2'000'000'000) * kTicksPerSecond +
                             static_cast<int64_t>(rng() % kTicksPerSecond));
    case 6: {
      Guid g;
      for (auto& b : g) b = static_cast<uint8_t>(rng());
      return Value::MakeGuid(g);
    }
    default: {
      std::string bytes(rng() % 6, '\0');
      for (auto& b : bytes) b = static_cast<char>(rng());
      return Value::Binary(bytes);
    }
  }
}

Props RandomProps(std::mt19937_64& rng, size_t min, size_t max) {
  Props p;
  const size_t n = min + rng() % (max - min + 1);
  for (size_t i = 0; i < n; i++) p[kPropertyNames[rng() % std::size(kPropertyNames)]] = RandomValue(rng);
  return p;
}

Entity ToEntity(const Key& k, const Props& p) {
  Entity e;
  e.partition_key = k.first;
  e.row_key = k.second;
  for (const auto& [n, v] : p) e.properties.push_back({n, v});
  return e;
}

// Random writes through several clients (one per caller identity), with a
// model of every table's content and the expected audit rows.
class Workload {
 public:
  struct Writer {
    std::string caller;
    client::Client* client;
  };

  Workload(uint64_t seed, std::vector<Writer> writers) : rng_(seed), writers_(std::move(writers)) {}

  std::mt19937_64& rng() { return rng_; }
  const std::vector<ExpectedRow>& rows() const { return rows_; }
  const std::map<Key, Props>& table(const std::string& name) { return tables_[Lower(name)]; }
  uint64_t last_lsn() const { return last_lsn_; }

  Writer& AnyWriter() { return writers_[rng_() % writers_.size()]; }

  void CreateTable(const std::string& table, Writer* w = nullptr) {
    if (!w) w = &AnyWriter();
    ASSERT_TRUE(w->client->CreateTable(table).ok()) << table;
    TableEvent(table, "TableCreated", *w);
    tables_[Lower(table)].clear();
  }
  void DeleteTable(const std::string& table, Writer* w = nullptr) {
    if (!w) w = &AnyWriter();
    ASSERT_TRUE(w->client->DeleteTable(table).ok()) << table;
    TableEvent(table, "TableDeleted", *w);
    tables_.erase(Lower(table));
  }

  // One random EGT of 1..max_ops operations on `table`, keys from
  // partitions p0.. and rows r00..; returns its LSN.
  uint64_t RandomWrite(const std::string& table, int partitions, int rows, size_t max_ops, Writer* w = nullptr) {
    if (!w) w = &AnyWriter();
    auto& content = tables_[Lower(table)];
    const std::string pk = "p" + std::to_string(rng_() % partitions);
    const size_t n = 1 + rng_() % max_ops;
    std::set<std::string> rks;
    while (rks.size() < n) {
      char rk[8];
      std::snprintf(rk, sizeof rk, "r%02d", static_cast<int>(rng_() % rows));
      rks.insert(rk);
    }
    std::vector<std::string> order(rks.begin(), rks.end());
    std::shuffle(order.begin(), order.end(), rng_);
    Batch batch(table);
    struct Planned {
      std::string rk;
      OpKind kind;
      std::optional<Props> before, after;
    };
    std::vector<Planned> planned;
    for (const std::string& rk : order) {
      const Key key{pk, rk};
      auto it = content.find(key);
      const bool present = it != content.end();
      Planned p{rk, OpKind::kInsert, present ? std::optional<Props>(it->second) : std::nullopt, std::nullopt};
      static const OpKind kPresent[] = {OpKind::kUpdate, OpKind::kMerge, OpKind::kMerge, OpKind::kDelete,
                                        OpKind::kInsertOrReplace, OpKind::kInsertOrMerge};
      static const OpKind kAbsent[] = {OpKind::kInsert, OpKind::kInsert, OpKind::kInsertOrReplace,
                                       OpKind::kInsertOrMerge};
      p.kind = present ? kPresent[rng_() % std::size(kPresent)] : kAbsent[rng_() % std::size(kAbsent)];
      switch (p.kind) {
        case OpKind::kInsert:
        case OpKind::kInsertOrReplace:
        case OpKind::kUpdate: {
          Props props = RandomProps(rng_, 0, 4);
          p.after = props;
          batch.Add(p.kind, ToEntity(key, props), p.kind == OpKind::kUpdate ? "*" : "");
          break;
        }
        case OpKind::kMerge:
        case OpKind::kInsertOrMerge: {
          Props given = RandomProps(rng_, 1, 3);
          Props merged = p.before.value_or(Props{});
          for (const auto& [name, v] : given) merged[name] = v;
          p.after = merged;
          batch.Add(p.kind, ToEntity(key, given), p.kind == OpKind::kMerge ? "*" : "");
          break;
        }
        case OpKind::kDelete:
          batch.Delete(pk, rk, "*");
          break;
        case OpKind::kFencedUpsert:
        case OpKind::kFencedDelete:
          // Fenced writes are the workers' own; the tables above never pick one.
          ADD_FAILURE() << "a fenced operation was planned";
          break;
      }
      planned.push_back(std::move(p));
    }
    auto r = w->client->Execute(batch);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return 0;
    EXPECT_GT(r->lsn, last_lsn_);
    last_lsn_ = r->lsn;
    for (Planned& p : planned) {
      ExpectedRow row;
      row.lsn = r->lsn;
      row.caller = w->caller;
      row.table = table;
      row.op = std::string(OpKindName(p.kind));
      row.pk = pk;
      row.rk = p.rk;
      row.changes = DiffProps(p.before ? &*p.before : nullptr, p.after ? &*p.after : nullptr);
      rows_.push_back(std::move(row));
      if (p.after) content[{pk, p.rk}] = *p.after;
      else content.erase({pk, p.rk});
    }
    return r->lsn;
  }

  // A write the test spells out; returns its LSN.
  uint64_t Write(Writer& w, const std::string& table, OpKind kind, const Key& key, const Props& given) {
    auto& content = tables_[Lower(table)];
    auto it = content.find(key);
    std::optional<Props> before = it != content.end() ? std::optional<Props>(it->second) : std::nullopt;
    std::optional<Props> after;
    Batch batch(table);
    if (kind == OpKind::kDelete) {
      batch.Delete(key.first, key.second, "*");
    } else if (kind == OpKind::kMerge || kind == OpKind::kInsertOrMerge) {
      Props merged = before.value_or(Props{});
      for (const auto& [n, v] : given) merged[n] = v;
      after = merged;
      batch.Add(kind, ToEntity(key, given), kind == OpKind::kMerge ? "*" : "");
    } else {
      after = given;
      batch.Add(kind, ToEntity(key, given), kind == OpKind::kUpdate ? "*" : "");
    }
    auto r = w.client->Execute(batch);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok()) return 0;
    last_lsn_ = r->lsn;
    ExpectedRow row;
    row.lsn = r->lsn;
    row.caller = w.caller;
    row.table = table;
    row.op = std::string(OpKindName(kind));
    row.pk = key.first;
    row.rk = key.second;
    row.changes = DiffProps(before ? &*before : nullptr, after ? &*after : nullptr);
    rows_.push_back(std::move(row));
    if (after) content[key] = *after;
    else content.erase(key);
    return r->lsn;
  }

 private:
  void TableEvent(const std::string& table, const char* op, Writer& w) {
    auto ping = w.client->Ping();
    ASSERT_TRUE(ping.ok());
    ASSERT_GT(ping->last_lsn, last_lsn_);
    last_lsn_ = ping->last_lsn;
    ExpectedRow row;
    row.lsn = last_lsn_;
    row.caller = w.caller;
    row.table = table;
    row.op = op;
    rows_.push_back(std::move(row));
  }

  std::mt19937_64 rng_;
  std::vector<Writer> writers_;
  std::map<std::string, std::map<Key, Props>> tables_;  // by lower-case name
  std::vector<ExpectedRow> rows_;
  uint64_t last_lsn_ = 0;
};

// ---- the fixture ------------------------------------------------------------------

class CliReplayTest : public testing::SidecarTest {
 protected:
  void SetUp() override {
    SidecarTest::SetUp();
    seed_ = TestSeed();
    std::printf("[          ] %s\n", SeedNote(seed_).c_str());
  }

  // sidetable-cli --endpoint <server> args...
  CliRun Cli(const std::vector<std::string>& args, std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
    CliChild c = StartCli(dir_.Sub("cli" + std::to_string(counter_++)),
                          Concat({"--endpoint", server_->endpoint()}, args));
    return WaitCli(c, timeout);
  }
  CliChild StartInBackground(const std::vector<std::string>& args) {
    return StartCli(dir_.Sub("cli" + std::to_string(counter_++)), Concat({"--endpoint", server_->endpoint()}, args));
  }
  // A command that must exit 0; its stdout.
  std::string Ok(const std::vector<std::string>& args) {
    CliRun r = Cli(args);
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
    return r.out;
  }

  std::unique_ptr<client::Client> ConnectAs(const std::string& caller) {
    client::ClientOptions o;
    o.endpoint = server_->endpoint();
    o.timeout = std::chrono::milliseconds(10000);
    o.caller = caller;
    auto c = client::Client::Connect(o);
    return c.ok() ? std::move(c).value() : nullptr;
  }

  uint64_t LastLsn() {
    auto p = client_->Ping();
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? p->last_lsn : 0;
  }

  std::vector<Entity> QueryAll(const std::string& table) {
    std::vector<Entity> out;
    auto it = client_->Query({.table = table});
    for (Entity e; it.Next(&e);) out.push_back(e);
    EXPECT_TRUE(it.status().ok()) << table << ": " << it.status().ToString();
    return out;
  }

  // Runs `args` + --checkpoint C --stop-after k until it exits 0 (at most
  // `max_runs` runs); every run before the last must exit 5 and leave C.
  // `between` runs after each stopped run. Returns the number of runs (0 on failure).
  int RunInChunks(const std::vector<std::string>& args, const std::string& checkpoint, uint64_t k,
                  const std::function<void(int)>& between = {}, int max_runs = 200) {
    for (int run = 1; run <= max_runs; run++) {
      CliRun r = Cli(Concat(args, {"--checkpoint", checkpoint, "--stop-after", std::to_string(k)}));
      if (r.exit_code == 0) {
        EXPECT_FALSE(Exists(checkpoint)) << "a finished run removes its checkpoint";
        return run;
      }
      if (r.exit_code != 5) {
        ADD_FAILURE() << "run " << run << ": " << Describe(r);
        return 0;
      }
      EXPECT_TRUE(Exists(checkpoint)) << "run " << run << " stopped without a checkpoint";
      EXPECT_TRUE(Contains(r.err, "resume")) << r.err;
      if (between) between(run);
    }
    ADD_FAILURE() << "did not finish in " << max_runs << " runs";
    return 0;
  }

  uint64_t seed_ = 0;
  int counter_ = 0;
};

// The rows of `expected` that `keep` accepts, as RowIds.
std::vector<std::string> ExpectedIds(const std::vector<ExpectedRow>& expected,
                                     const std::function<bool(const ExpectedRow&)>& keep) {
  std::vector<std::string> out;
  for (const ExpectedRow& r : expected) {
    if (keep(r)) out.push_back(RowId(r));
  }
  return out;
}

std::vector<std::string> Ids(const std::vector<AuditRow>& rows) {
  std::vector<std::string> out;
  for (const AuditRow& r : rows) out.push_back(RowId(r));
  return out;
}

std::string ChangeText(const std::string& property, const std::string& change, const std::optional<Value>& before,
                       const std::optional<Value>& after) {
  auto side = [](const std::optional<Value>& v) {
    return v ? v->ToString() + "(" + std::string(EdmTypeName(v->type())) + ")" : std::string("none");
  };
  return property + " " + change + " " + side(before) + " -> " + side(after);
}

std::vector<std::string> ChangeTexts(const std::vector<ExpectedChange>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs) out.push_back(ChangeText(c.property, c.change, c.before, c.after));
  return out;
}
std::vector<std::string> ChangeTexts(const std::vector<SeenChange>& cs) {
  std::vector<std::string> out;
  for (const auto& c : cs) out.push_back(ChangeText(c.property, c.change, c.before, c.after));
  return out;
}

// =====================================================================================
// 1. audit lists exactly what the workload did
// =====================================================================================

TEST_F(CliReplayTest, AuditListsExactlyTheWorkload) {
  SCOPED_TRACE(SeedNote(seed_));
  auto alice = ConnectAs("alice"), bob = ConnectAs("bob"), carol = ConnectAs("carol"), anon = ConnectAs("");
  ASSERT_TRUE(alice && bob && carol && anon);
  Workload w(seed_, {{"alice", alice.get()}, {"bob", bob.get()}, {"carol", carol.get()}, {"", anon.get()}});
  Workload::Writer wa{"alice", alice.get()}, wb{"bob", bob.get()}, wc{"carol", carol.get()}, wn{"", anon.get()};

  w.CreateTable("People", &wa);
  w.CreateTable("Orders", &wn);
  // The scenario spelled out: Age 30 -> 31 and Email added, then Age's type
  // changes (Int32 -> Int64) and Email is removed by a replace.
  const Key ann{"known", "ann"};
  const uint64_t insert_lsn =
      w.Write(wa, "People", OpKind::kInsert, ann, {{"Age", Value::Int32(30)}, {"Name", Value::String("Ann")}});
  const uint64_t merge_lsn =
      w.Write(wb, "People", OpKind::kMerge, ann, {{"Age", Value::Int32(31)}, {"Email", Value::String("ann@x")}});
  const uint64_t replace_lsn =
      w.Write(wc, "People", OpKind::kUpdate, ann, {{"Age", Value::Int64(31)}, {"Name", Value::String("Ann")}});
  const uint64_t delete_lsn = w.Write(wn, "People", OpKind::kDelete, ann, {});

  for (int step = 0; step < 260; step++) {
    if (step == 90) w.CreateTable("Temp");
    if (step == 170) w.DeleteTable("Temp");
    const bool temp = step > 90 && step < 170 && w.rng()() % 4 == 0;
    const std::string table = temp ? "Temp" : (w.rng()() % 3 == 0 ? "Orders" : "People");
    const size_t max_ops = w.rng()() % 4 == 0 ? 5 : 1;
    ASSERT_NE(w.RandomWrite(table, 3, 12, max_ops), 0u);
  }
  const auto& expected = w.rows();

  // ---- the whole audit ----
  const std::string full_text = Ok({"audit", "--progress", "never"});
  const std::vector<AuditRow> full = ParseAudit(full_text);
  ASSERT_EQ(Ids(full), ExpectedIds(expected, [](const ExpectedRow&) { return true; }));
  size_t change_mismatches = 0;
  for (size_t i = 0; i < full.size(); i++) {
    const bool entity = expected[i].pk.has_value();
    EXPECT_EQ(full[i].has_changes, entity) << RowId(full[i]);
    if (ChangeTexts(full[i].changes) != ChangeTexts(expected[i].changes) && change_mismatches++ < 5) {
      ADD_FAILURE() << RowId(full[i]) << "\n" << ::testing::PrintToString(ChangeTexts(full[i].changes))
                    << "\nexpected\n" << ::testing::PrintToString(ChangeTexts(expected[i].changes));
    }
    if (entity && expected[i].op != "Delete") {
      EXPECT_EQ(full[i].etag, "W/\"" + std::to_string(full[i].lsn) + "\"") << RowId(full[i]);
    }
    if (i > 0) {
      EXPECT_LE(ParseDateTime(full[i - 1].time), ParseDateTime(full[i].time)) << RowId(full[i]);
    }
  }
  EXPECT_EQ(change_mismatches, 0u);

  // The spelled-out rows, by hand.
  auto row_at = [&](uint64_t lsn) -> const AuditRow* {
    for (const AuditRow& r : full) {
      if (r.lsn == lsn) return &r;
    }
    return nullptr;
  };
  {
    const AuditRow* ins = row_at(insert_lsn);
    ASSERT_NE(ins, nullptr);
    EXPECT_EQ(ins->caller, "alice");
    EXPECT_EQ(ins->op, "Insert");
    EXPECT_EQ(ChangeTexts(ins->changes), (std::vector<std::string>{"Age added none -> 30(Edm.Int32)",
                                                                   "Name added none -> Ann(Edm.String)"}));
    const AuditRow* merge = row_at(merge_lsn);
    ASSERT_NE(merge, nullptr);
    EXPECT_EQ(merge->caller, "bob");
    EXPECT_EQ(merge->op, "Merge");
    EXPECT_EQ(ChangeTexts(merge->changes),
              (std::vector<std::string>{"Age modified 30(Edm.Int32) -> 31(Edm.Int32)",
                                        "Email added none -> ann@x(Edm.String)"}));
    const AuditRow* replace = row_at(replace_lsn);
    ASSERT_NE(replace, nullptr);
    EXPECT_EQ(replace->caller, "carol");
    EXPECT_EQ(replace->op, "Update");
    EXPECT_EQ(ChangeTexts(replace->changes),
              (std::vector<std::string>{"Age modified 31(Edm.Int32) -> 31(Edm.Int64)",
                                        "Email removed ann@x(Edm.String) -> none"}));
    const AuditRow* del = row_at(delete_lsn);
    ASSERT_NE(del, nullptr);
    EXPECT_EQ(del->caller, "");
    EXPECT_EQ(del->op, "Delete");
    EXPECT_EQ(del->etag, "");
    EXPECT_EQ(ChangeTexts(del->changes), (std::vector<std::string>{"Age removed 31(Edm.Int64) -> none",
                                                                   "Name removed Ann(Edm.String) -> none"}));
  }

  // ---- filters ----
  auto check = [&](const std::vector<std::string>& filter, const std::function<bool(const ExpectedRow&)>& keep) {
    SCOPED_TRACE("audit " + ::testing::PrintToString(filter));
    CliRun r = Cli(Concat({"audit", "--progress", "never"}, filter));
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    const auto want = ExpectedIds(expected, keep);
    EXPECT_FALSE(want.empty()) << "a filter that keeps nothing proves little";
    EXPECT_LT(want.size(), expected.size()) << "a filter that keeps everything proves little";
    EXPECT_EQ(Ids(ParseAudit(r.out)), want);
  };
  for (const std::string caller : {"alice", "bob", "carol", ""}) {
    check({"--by", caller}, [&](const ExpectedRow& r) { return r.caller == caller; });
  }
  check({"--table", "orders"}, [](const ExpectedRow& r) { return r.table == "Orders"; });
  check({"--table", "Temp"}, [](const ExpectedRow& r) { return r.table == "Temp"; });
  check({"--pk", "p1"}, [](const ExpectedRow& r) { return r.pk == "p1"; });
  check({"--rk-from", "r03", "--rk-to", "r07"},
        [](const ExpectedRow& r) { return r.rk && *r.rk >= "r03" && *r.rk < "r07"; });
  check({"--table", "People", "--pk", "p2", "--rk-from", "r05", "--by", "bob"}, [](const ExpectedRow& r) {
    return r.table == "People" && r.pk == "p2" && r.rk >= "r05" && r.caller == "bob";
  });
  // --since/--until with times from the output: [since, until).
  std::mt19937_64 pick(seed_ ^ 0x5eed);
  for (int round = 0; round < 3; round++) {
    size_t i = pick() % (full.size() / 2), j = i + 1 + pick() % (full.size() / 2);
    while (j < full.size() && full[j].time == full[i].time) j++;
    ASSERT_LT(j, full.size());
    const int64_t since = *ParseDateTime(full[i].time), until = *ParseDateTime(full[j].time);
    std::set<uint64_t> lsns;
    for (const AuditRow& r : full) {
      const int64_t t = *ParseDateTime(r.time);
      if (t >= since && t < until) lsns.insert(r.lsn);
    }
    check({"--since", full[i].time, "--until", full[j].time},
          [&](const ExpectedRow& r) { return lsns.count(r.lsn) != 0; });
  }
  {
    const uint64_t from = expected[expected.size() / 3].lsn, to = expected[2 * expected.size() / 3].lsn;
    check({"--from-lsn", std::to_string(from), "--to-lsn", std::to_string(to)},
          [&](const ExpectedRow& r) { return r.lsn >= from && r.lsn <= to; });
  }

  // ---- --summary ----
  auto check_summary = [&](const std::vector<std::string>& filter, const std::function<bool(const ExpectedRow&)>& keep) {
    SCOPED_TRACE("audit --summary " + ::testing::PrintToString(filter));
    std::map<std::tuple<std::string, std::string, std::string>, uint64_t> want;
    uint64_t want_rows = 0;
    for (const ExpectedRow& r : expected) {
      if (!keep(r)) continue;
      want[{r.table, r.op, r.caller}]++;
      want_rows++;
    }
    CliRun r = Cli(Concat({"audit", "--summary", "--progress", "never"}, filter));
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    ASSERT_EQ(Lines(r.out).size(), 1u) << r.out;
    simdjson::dom::parser parser;
    simdjson::dom::object o;
    ASSERT_EQ(parser.parse(r.out).get(o), simdjson::SUCCESS) << r.out;
    uint64_t rows = 0;
    ASSERT_EQ(o["rows"].get(rows), simdjson::SUCCESS);
    EXPECT_EQ(rows, want_rows);
    std::map<std::tuple<std::string, std::string, std::string>, uint64_t> got;
    simdjson::dom::array counts;
    ASSERT_EQ(o["counts"].get(counts), simdjson::SUCCESS);
    for (simdjson::dom::element el : counts) {
      simdjson::dom::object c;
      ASSERT_EQ(el.get(c), simdjson::SUCCESS);
      uint64_t n = 0;
      ASSERT_EQ(c["count"].get(n), simdjson::SUCCESS);
      got[{Str(c, "table"), Str(c, "op"), Str(c, "caller")}] = n;
    }
    EXPECT_EQ(got, want);
    // byCaller agrees too.
    std::map<std::string, uint64_t> by_caller_want, by_caller_got;
    for (const auto& [k, n] : want) by_caller_want[std::get<2>(k)] += n;
    simdjson::dom::object by_caller;
    ASSERT_EQ(o["byCaller"].get(by_caller), simdjson::SUCCESS);
    for (auto field : by_caller) {
      uint64_t n = 0;
      ASSERT_EQ(field.value.get(n), simdjson::SUCCESS);
      by_caller_got[std::string(field.key)] = n;
    }
    EXPECT_EQ(by_caller_got, by_caller_want);
  };
  check_summary({}, [](const ExpectedRow&) { return true; });
  check_summary({"--table", "People", "--by", "alice"},
                [](const ExpectedRow& r) { return r.table == "People" && r.caller == "alice"; });

  // ---- --format csv: a header, then one line per changed property ----
  {
    CliRun r = Cli({"audit", "--format", "csv", "--progress", "never"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    const auto records = ParseCsv(r.out);
    ASSERT_FALSE(records.empty());
    EXPECT_EQ(records[0], (std::vector<std::string>{"lsn", "time", "caller", "table", "pk", "rk", "op", "property",
                                                    "change", "before", "after"}));
    size_t want_lines = 1;
    for (const ExpectedRow& e : expected) want_lines += std::max<size_t>(1, e.changes.size());
    ASSERT_EQ(records.size(), want_lines);
    auto value_text = [](const std::optional<Value>& v) -> std::string {
      if (!v) return "";
      if (v->type() == EdmType::kString) return v->bytes();
      return v->ToString() + " (" + std::string(EdmTypeName(v->type())) + ")";
    };
    size_t line = 1, mismatches = 0;
    for (size_t i = 0; i < expected.size(); i++) {
      const ExpectedRow& e = expected[i];
      const size_t n = std::max<size_t>(1, e.changes.size());
      for (size_t c = 0; c < n; c++, line++) {
        const auto& f = records[line];
        std::vector<std::string> want = {std::to_string(e.lsn), full[i].time, e.caller, e.table, e.pk.value_or(""),
                                         e.rk.value_or(""), e.op};
        if (e.changes.empty()) {
          want.insert(want.end(), {"", "", "", ""});
        } else {
          const ExpectedChange& ch = e.changes[c];
          want.insert(want.end(), {ch.property, ch.change, value_text(ch.before), value_text(ch.after)});
        }
        if (f != want && mismatches++ < 5) {
          ADD_FAILURE() << "CSV line " << line << ": " << ::testing::PrintToString(f) << "\nexpected "
                        << ::testing::PrintToString(want);
        }
      }
    }
    EXPECT_EQ(mismatches, 0u);
  }
}

// =====================================================================================
// 2. interrupted and resumed == one run
// =====================================================================================

// A workload for the resume tests: Employees (with LastName, for derive) and Other.
void ResumeWorkload(Workload& w, client::Client* c, int employees, int steps) {
  w.CreateTable("Employees");
  w.CreateTable("Other");
  static const char* kLast[] = {"Smith", "Jones", "Brown", "Garcia", "Miller", "Davis", "Lopez", "Khan"};
  for (int b = 0; b * 100 < employees; b++) {
    Batch batch("Employees");
    for (int i = b * 100; i < std::min(employees, (b + 1) * 100); i++) {
      char rk[16];
      std::snprintf(rk, sizeof rk, "e%05d", i);
      batch.Insert(EntityBuilder("d" + std::to_string(b % 4), rk)
                       .String("LastName", kLast[i % std::size(kLast)])
                       .String("FirstName", "f" + std::to_string(i))
                       .Int32("Age", 20 + i % 40)
                       .Build());
    }
    ASSERT_TRUE(c->Execute(batch).ok());
  }
  for (int i = 0; i < steps; i++) {
    const std::string table = w.rng()() % 3 == 0 ? "Other" : "Employees";
    ASSERT_NE(w.RandomWrite(table, 4, 30, w.rng()() % 5 == 0 ? 4 : 1), 0u);
    if (table == "Employees" && w.rng()() % 3 == 0) {
      // Keep LastName common among the random properties.
      const std::string pk = "d" + std::to_string(w.rng()() % 4);
      char rk[16];
      std::snprintf(rk, sizeof rk, "e%05d", static_cast<int>(w.rng()() % std::max(employees, 1)));
      Batch b("Employees");
      b.InsertOrMerge(EntityBuilder(pk, rk).String("LastName", kLast[w.rng()() % std::size(kLast)]).Build());
      ASSERT_TRUE(c->Execute(b).ok());
    }
  }
}

TEST_F(CliReplayTest, ResumedReplayAndAuditEqualOneRun) {
  SCOPED_TRACE(SeedNote(seed_));
  Workload w(seed_, {{"", client_.get()}});
  ResumeWorkload(w, client_.get(), 300, 500);
  const uint64_t records = LastLsn();
  ASSERT_GT(records, 400u);
  std::mt19937_64 rng(seed_ + 1);

  struct Variant {
    std::string name;
    std::vector<std::string> args;
  };
  const std::vector<Variant> variants = {
      {"replay", {"replay"}},
      {"replay filtered", {"replay", "--table", "Employees", "--rk-from", "e00010", "--rk-to", "r20"}},
      {"audit", {"audit"}},
      {"audit filtered", {"audit", "--table", "employees", "--pk", "d1"}},
      {"audit csv", {"audit", "--format", "csv"}},
      {"audit summary", {"audit", "--summary"}},
      {"audit summary csv", {"audit", "--summary", "--format", "csv"}},
  };
  for (size_t v = 0; v < variants.size(); v++) {
    SCOPED_TRACE(variants[v].name);
    const std::string one = dir_.Sub("one" + std::to_string(v)), chunked = dir_.Sub("chunked" + std::to_string(v)),
                      cp = dir_.Sub("cp" + std::to_string(v));
    const auto base = Concat(variants[v].args, {"--progress", "never"});
    CliRun single = Cli(Concat(base, {"--output", one}));
    ASSERT_EQ(single.exit_code, 0) << Describe(single);
    EXPECT_EQ(single.out, "") << "--output takes the rows";
    ASSERT_FALSE(ReadAll(one).empty());
    const uint64_t k = records / 8 + rng() % (records / 6);
    const int runs = RunInChunks(Concat(base, {"--output", chunked}), cp, k);
    EXPECT_GE(runs, 3) << "k " << k;
    EXPECT_TRUE(ReadAll(chunked) == ReadAll(one))
        << "k " << k << ", " << runs << " runs; sizes " << ReadAll(chunked).size() << " vs " << ReadAll(one).size();
  }
}

// kill -9 between two checkpoints leaves rows in the output that the
// checkpoint does not cover; the resume must drop them, not write them twice.
// Simulated exactly: each stopped run's output gets a partial row appended
// (as a killed process would leave), then the next run resumes.
TEST_F(CliReplayTest, ResumeDropsRowsWrittenAfterTheCheckpoint) {
  SCOPED_TRACE(SeedNote(seed_));
  Workload w(seed_, {{"", client_.get()}});
  ResumeWorkload(w, client_.get(), 200, 300);
  for (const std::string cmd : {"audit", "replay"}) {
    SCOPED_TRACE(cmd);
    const std::string one = dir_.Sub(cmd + ".k9.one"), chunked = dir_.Sub(cmd + ".k9.chunked"),
                      cp = dir_.Sub(cmd + ".k9.cp");
    CliRun r = Cli({cmd, "--progress", "never", "--output", one});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    int torn = 0;
    const int runs = RunInChunks({cmd, "--progress", "never", "--output", chunked}, cp, 97, [&](int) {
      std::ofstream(chunked, std::ios::app) << "{\"lsn\":999999,\"torn";
      torn++;
    });
    EXPECT_GE(torn, 2);
    EXPECT_GT(runs, torn);
    EXPECT_TRUE(ReadAll(chunked) == ReadAll(one)) << ReadAll(chunked).size() << " vs " << ReadAll(one).size();
  }
}

// Outputs that are not regular files are written, not truncated; a path
// that cannot be written fails before any history is read.
TEST_F(CliReplayTest, OutputToADeviceOrABadPath) {
  SCOPED_TRACE(SeedNote(seed_));
  Workload w(seed_, {{"", client_.get()}});
  ResumeWorkload(w, client_.get(), 50, 20);
  for (const std::string cmd : {"audit", "replay"}) {
    CliRun r = Cli({cmd, "--progress", "never", "--output", "/dev/null"});
    EXPECT_EQ(r.exit_code, 0) << Describe(r);
  }
  CliRun r = Cli({"rebuild", "Employees", "--at-lsn", "3", "--output", "/dev/null"});
  EXPECT_EQ(r.exit_code, 0) << Describe(r);
  const std::string bad = dir_.Sub("no/such/dir/out.jsonl");
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"audit", "--output", bad}, {"rebuild", "Employees", "--at-lsn", "3", "--output", bad}}) {
    r = Cli(args);
    EXPECT_EQ(r.exit_code, 2) << Describe(r);
    EXPECT_TRUE(Contains(r.err, "cannot open")) << r.err;
    EXPECT_FALSE(Contains(r.err, "rebuilt")) << "the history was read before the output was checked";
  }
}

TEST_F(CliReplayTest, ResumedRunKeepsTheRangeFixedAtFirstOpen) {
  SCOPED_TRACE(SeedNote(seed_));
  Workload w(seed_, {{"", client_.get()}});
  ResumeWorkload(w, client_.get(), 100, 400);
  std::mt19937_64 rng(seed_ + 2);
  int extra = 0;
  auto write_more = [&](int) {
    for (int i = 0; i < 15; i++) {
      extra++;
      ASSERT_TRUE(
          client_->InsertOrReplace("Other", EntityBuilder("late", "x" + std::to_string(extra)).Int32("N", extra).Build())
              .ok());
    }
  };
  for (const std::string cmd : {"audit", "replay"}) {
    SCOPED_TRACE(cmd);
    const std::string chunked = dir_.Sub(cmd + ".chunked"), bounded = dir_.Sub(cmd + ".bounded"),
                      now = dir_.Sub(cmd + ".now"), cp = dir_.Sub(cmd + ".cp");
    const uint64_t end = LastLsn();
    const uint64_t k = 50 + rng() % 60;
    const int runs = RunInChunks({cmd, "--progress", "never", "--output", chunked}, cp, k, write_more);
    EXPECT_GE(runs, 3);
    // One run bounded at the first run's end gives the same bytes...
    CliRun r = Cli({cmd, "--progress", "never", "--to-lsn", std::to_string(end), "--output", bounded});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_TRUE(ReadAll(chunked) == ReadAll(bounded)) << ReadAll(chunked).size() << " vs " << ReadAll(bounded).size();
    // ... while a run now sees the writes made meanwhile (so they were there to be wrongly included).
    r = Cli({cmd, "--progress", "never", "--output", now});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_GT(ReadAll(now).size(), ReadAll(bounded).size());
    EXPECT_TRUE(ReadAll(now).starts_with(ReadAll(bounded)));
  }
  // The summary's counts too.
  const std::string cp = dir_.Sub("summary.cp"), chunked = dir_.Sub("summary.chunked"), bounded = dir_.Sub("summary.b");
  const uint64_t end2 = LastLsn();
  EXPECT_GE(RunInChunks({"audit", "--summary", "--progress", "never", "--output", chunked}, cp, 97, write_more), 3);
  ASSERT_EQ(Cli({"audit", "--summary", "--to-lsn", std::to_string(end2), "--output", bounded}).exit_code, 0);
  EXPECT_EQ(ReadAll(chunked), ReadAll(bounded));
}

TEST_F(CliReplayTest, ResumedRebuildEqualsOneRun) {
  SCOPED_TRACE(SeedNote(seed_));
  Workload w(seed_, {{"", client_.get()}});
  ResumeWorkload(w, client_.get(), 200, 500);
  const uint64_t newest = LastLsn();
  std::mt19937_64 rng(seed_ + 3);
  const uint64_t at = newest / 2 + rng() % (newest / 2);
  const std::string at_s = std::to_string(at);

  // --output
  const std::string one = dir_.Sub("one.jsonl"), chunked = dir_.Sub("chunked.jsonl"), cp = dir_.Sub("cp");
  CliRun single = Cli({"rebuild", "Employees", "--at-lsn", at_s, "--output", one, "--progress", "never"});
  ASSERT_EQ(single.exit_code, 0) << Describe(single);
  ASSERT_FALSE(ReadAll(one).empty());
  const uint64_t k = at / 7 + rng() % (at / 7);
  EXPECT_GE(RunInChunks({"rebuild", "Employees", "--at-lsn", at_s, "--output", chunked, "--progress", "never"}, cp, k),
            3);
  EXPECT_TRUE(ReadAll(chunked) == ReadAll(one)) << ReadAll(chunked).size() << " vs " << ReadAll(one).size();
  // With a key range.
  const std::string one_r = dir_.Sub("one_r.jsonl"), chunked_r = dir_.Sub("chunked_r.jsonl");
  const std::vector<std::string> range = {"rebuild", "Employees", "--at-lsn", at_s, "--pk", "d2", "--rk-from",
                                          "e00050", "--rk-to", "r10", "--progress", "never", "--output"};
  ASSERT_EQ(Cli(Concat(range, {one_r})).exit_code, 0);
  EXPECT_GE(RunInChunks(Concat(range, {chunked_r}), cp, k), 3);
  EXPECT_TRUE(ReadAll(chunked_r) == ReadAll(one_r));
  EXPECT_FALSE(ReadAll(one_r).empty());

  // --into-table: one run and a chunked run give the same content, that of --output.
  CliRun into = Cli({"rebuild", "Employees", "--at-lsn", at_s, "--into-table", "RebuiltOne", "--progress", "never"});
  ASSERT_EQ(into.exit_code, 0) << Describe(into);
  EXPECT_TRUE(Contains(into.out, "into RebuiltOne")) << into.out;
  EXPECT_GE(RunInChunks({"rebuild", "Employees", "--at-lsn", at_s, "--into-table", "RebuiltChunked", "--progress",
                         "never"},
                        cp, k),
            3);
  const Content want = ContentOf(ParseEntities(ReadAll(one)));
  EXPECT_EQ(ContentDiff(want, ContentOf(QueryAll("RebuiltOne"))), "");
  EXPECT_EQ(ContentDiff(want, ContentOf(QueryAll("RebuiltChunked"))), "");
}

// The index_table configuration over Employees (LastName, projecting FirstName).
std::string IndexConfig(const std::string& target) {
  return "patterns:\n"
         "  - name: index_table\n"
         "    source: Employees\n"
         "    target: " + target + "\n"
         "    properties: LastName\n"
         "    project: [FirstName]\n";
}

TEST_F(CliReplayTest, ResumedDeriveEqualsOneRun) {
  SCOPED_TRACE(SeedNote(seed_));
  Workload w(seed_, {{"", client_.get()}});
  // Over 1000 entities: the snapshot has several pages to resume between.
  ResumeWorkload(w, client_.get(), 2300, 200);
  const std::string config = dir_.Sub("worker.yaml");
  WriteAll(config, IndexConfig("EmployeesByLastName"));

  CliRun single = Cli({"derive", "--config", config, "--into", "IdxOne", "--progress", "never"});
  ASSERT_EQ(single.exit_code, 0) << Describe(single);
  EXPECT_TRUE(Contains(single.out, "missing 0, extra 0, stale 0")) << single.out;
  const Content one = ContentOf(QueryAll("IdxOne"));
  ASSERT_GT(one.size(), 2000u);

  const std::string cp = dir_.Sub("derive.cp");
  std::mt19937_64 rng(seed_ + 4);
  EXPECT_GE(RunInChunks({"derive", "--config", config, "--into", "IdxChunked", "--progress", "never"}, cp,
                        300 + rng() % 400),
            3);
  EXPECT_EQ(ContentDiff(one, ContentOf(QueryAll("IdxChunked"))), "");

  // Writes between the chunks: the log phase catches up, and the final
  // verify (run by the last chunk) passes.
  int n = 0;
  auto write_more = [&](int) {
    for (int i = 0; i < 10; i++) {
      ASSERT_NE(w.RandomWrite("Employees", 4, 30, 2), 0u);
      Batch b("Employees");
      b.InsertOrMerge(EntityBuilder("d" + std::to_string(n % 4), "e0" + std::to_string(n % 2000 + 1000))
                          .String("LastName", "Moved" + std::to_string(n % 7))
                          .Build());
      n++;
      ASSERT_TRUE(client_->Execute(b).ok());
    }
  };
  const std::string cp2 = dir_.Sub("derive2.cp");
  EXPECT_GE(RunInChunks({"derive", "--config", config, "--into", "IdxMoving", "--progress", "never"}, cp2,
                        200 + rng() % 200, write_more),
            3);
  EXPECT_GT(n, 0);
  CliRun verify = Cli({"verify", "--config", [&] {
                         const std::string c = dir_.Sub("moving.yaml");
                         WriteAll(c, IndexConfig("IdxMoving"));
                         return c;
                       }()});
  EXPECT_EQ(verify.exit_code, 0) << Describe(verify);
}

TEST_F(CliReplayTest, ResumedAfterSigintEqualsOneRun) {
  SCOPED_TRACE(SeedNote(seed_));
  ASSERT_TRUE(client_->CreateTable("Big").ok());
  // Several thousand records, written by a few clients at once.
  constexpr int kThreads = 4, kPerThread = 1500;
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; t++) {
    threads.emplace_back([&, t] {
      auto c = Connect();
      if (!c) {
        failures++;
        return;
      }
      for (int i = 0; i < kPerThread; i++) {
        Batch b("Big");
        b.SetCaller("writer" + std::to_string(t));
        b.InsertOrReplace(EntityBuilder("t" + std::to_string(t), std::to_string(i % 700))
                              .Int32("N", i)
                              .String("Pad", std::string(200, static_cast<char>('a' + i % 26)))
                              .Build());
        if (!c->Execute(b).ok()) failures++;
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(failures.load(), 0);
  ASSERT_GE(LastLsn(), 6000u);

  for (const std::string cmd : {"replay", "audit"}) {
    SCOPED_TRACE(cmd);
    const std::string one = dir_.Sub(cmd + ".one"), out = dir_.Sub(cmd + ".out"), cp = dir_.Sub(cmd + ".cp");
    CliRun single = Cli({cmd, "--progress", "never", "--output", one});
    ASSERT_EQ(single.exit_code, 0) << Describe(single);

    const std::vector<std::string> args = {cmd, "--progress", "never", "--output", out, "--checkpoint", cp};
    CliChild child = StartInBackground(args);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    bool signalled = false;
    int status = 0;
    bool exited = false;
    while (std::chrono::steady_clock::now() < deadline) {
      struct stat st;
      if (::stat(out.c_str(), &st) == 0 && st.st_size > 0) {
        kill(child.pid, SIGINT);
        signalled = true;
        break;
      }
      if (waitpid(child.pid, &status, WNOHANG) == child.pid) {
        exited = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ASSERT_TRUE(signalled || exited) << "no output within 20 s";
    int code;
    if (exited) {
      child.pid = -1;
      code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    } else {
      CliRun r = WaitCli(child, std::chrono::seconds(30));
      code = r.exit_code;
      EXPECT_TRUE(code == 5 || code == 0) << Describe(r);
      if (code == 5) {
        EXPECT_TRUE(Exists(cp));
        EXPECT_TRUE(Contains(r.err, "resume")) << r.err;
      }
    }
    std::printf("[          ] %s: SIGINT %s, exit %d\n", cmd.c_str(), signalled ? "sent" : "not sent", code);
    int runs = 0;
    while (code == 5 && runs++ < 20) {
      CliRun r = Cli(args);
      code = r.exit_code;
      EXPECT_TRUE(code == 0 || code == 5) << Describe(r);
    }
    EXPECT_EQ(code, 0);
    EXPECT_FALSE(Exists(cp));
    EXPECT_TRUE(ReadAll(out) == ReadAll(one)) << ReadAll(out).size() << " vs " << ReadAll(one).size();
  }
}

TEST_F(CliReplayTest, ResumeWithOtherArgumentsOrACorruptCheckpointIsRefused) {
  SCOPED_TRACE(SeedNote(seed_));
  Workload w(seed_, {{"", client_.get()}});
  ResumeWorkload(w, client_.get(), 50, 300);
  const std::string out = dir_.Sub("a.out"), cp = dir_.Sub("a.cp"), one = dir_.Sub("one.out");
  const std::vector<std::string> args = {"audit", "--progress", "never", "--output", out, "--checkpoint", cp};
  CliRun first = Cli(Concat(args, {"--stop-after", "100"}));
  ASSERT_EQ(first.exit_code, 5) << Describe(first);
  const std::string saved_cp = ReadAll(cp), saved_out = ReadAll(out);
  ASSERT_FALSE(saved_cp.empty());
  ASSERT_FALSE(saved_out.empty());

  const std::vector<std::vector<std::string>> others = {
      Concat(args, {"--table", "Other"}),
      Concat(args, {"--format", "csv"}),
      Concat(args, {"--by", ""}),
      {"replay", "--progress", "never", "--output", out, "--checkpoint", cp},
      {"rebuild", "Employees", "--at-lsn", "10", "--output", out, "--checkpoint", cp},
  };
  for (const auto& other : others) {
    CliRun r = Cli(other);
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(other) << "\n" << Describe(r);
    EXPECT_TRUE(Contains(r.err, "other arguments")) << r.err;
    EXPECT_EQ(ReadAll(cp), saved_cp) << "a refused resume leaves the checkpoint";
    EXPECT_EQ(ReadAll(out), saved_out) << "a refused resume leaves the output";
  }
  // The same arguments still resume, to the same bytes as one run.
  CliRun rest = Cli(args);
  ASSERT_EQ(rest.exit_code, 0) << Describe(rest);
  ASSERT_EQ(Cli({"audit", "--progress", "never", "--output", one}).exit_code, 0);
  EXPECT_TRUE(ReadAll(out) == ReadAll(one));

  // Corrupt checkpoints.
  const std::vector<std::string> corrupt = {
      "garbage",
      "not json at all\n",
      saved_cp.substr(0, saved_cp.size() / 2) + "\n",
      R"({"checkpoint":2,"command":"audit"})" "\n",
      "\n",
  };
  for (const std::string& text : corrupt) {
    WriteAll(cp, text);
    WriteAll(out, "keep me");
    CliRun r = Cli(args);
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(text) << "\n" << Describe(r);
    EXPECT_EQ(ReadAll(cp), text);
    EXPECT_EQ(ReadAll(out), "keep me");
  }
  // And for rebuild and derive.
  WriteAll(cp, "garbage\n");
  EXPECT_EQ(Cli({"rebuild", "Employees", "--at-lsn", "10", "--output", out, "--checkpoint", cp}).exit_code, 2);
  const std::string config = dir_.Sub("w.yaml");
  WriteAll(config, IndexConfig("Idx"));
  EXPECT_EQ(Cli({"derive", "--config", config, "--checkpoint", cp}).exit_code, 2);
  auto idx = client_->QueryPage({.table = "Idx"});
  EXPECT_FALSE(idx.ok()) << "derive wrote nothing";
}

// =====================================================================================
// 3. rebuild at random points == the live table then
// =====================================================================================

TEST_F(CliReplayTest, RebuildAtRandomPointsMatchesWhatQueriesSawThen) {
  SCOPED_TRACE(SeedNote(seed_));
  auto writer = ConnectAs("w");
  ASSERT_TRUE(writer);
  Workload w(seed_, {{"w", writer.get()}});
  w.CreateTable("Live");
  w.CreateTable("Side");
  w.CreateTable("Gone");
  ASSERT_NE(w.RandomWrite("Gone", 2, 5, 3), 0u);
  const uint64_t gone_alive = w.last_lsn();
  w.DeleteTable("Gone");
  const uint64_t before_later = w.last_lsn();

  constexpr int kSteps = 400;
  std::set<int> capture_steps;
  while (capture_steps.size() < 10) capture_steps.insert(static_cast<int>(w.rng()() % kSteps));
  struct Capture {
    uint64_t lsn;
    std::vector<Entity> entities;
  };
  std::vector<Capture> captures;
  for (int step = 0; step < kSteps; step++) {
    if (step == kSteps / 2) w.CreateTable("Later");
    const uint32_t dice = w.rng()() % 10;
    const std::string table = dice < 7 ? "Live" : dice < 9 ? "Side" : (step > kSteps / 2 ? "Later" : "Side");
    ASSERT_NE(w.RandomWrite(table, 3, 15, w.rng()() % 4 == 0 ? 5 : 1), 0u);
    if (capture_steps.count(step)) {
      ASSERT_EQ(LastLsn(), w.last_lsn());
      captures.push_back({w.last_lsn(), QueryAll("Live")});
      // The test's own model agrees with the live table.
      ASSERT_EQ(ContentDiff(w.table("Live"), ContentOf(captures.back().entities)), "");
    }
  }
  const uint64_t newest = LastLsn();

  // Commit times, from replay.
  const std::string all = dir_.Sub("all.jsonl");
  ASSERT_EQ(Cli({"replay", "--progress", "never", "--output", all}).exit_code, 0);
  std::map<uint64_t, int64_t> times;
  {
    simdjson::dom::parser parser;
    for (const std::string& line : Lines(ReadAll(all))) {
      simdjson::dom::object o;
      ASSERT_EQ(parser.parse(line).get(o), simdjson::SUCCESS) << line;
      uint64_t lsn = 0;
      ASSERT_EQ(o["lsn"].get(lsn), simdjson::SUCCESS);
      auto t = ParseDateTime(Str(o, "time"));
      ASSERT_TRUE(t) << line;
      times[lsn] = *t;
    }
  }
  ASSERT_EQ(times.size(), newest);

  int time_cuts = 0;
  for (size_t i = 0; i < captures.size(); i++) {
    const Capture& c = captures[i];
    SCOPED_TRACE("cut at LSN " + std::to_string(c.lsn));
    std::string want;
    for (const Entity& e : c.entities) want += json::EntityToJson(e) + "\n";
    const std::string f = dir_.Sub("at" + std::to_string(i));
    CliRun r = Cli({"rebuild", "Live", "--at-lsn", std::to_string(c.lsn), "--output", f, "--progress", "never"});
    ASSERT_EQ(r.exit_code, 0) << Describe(r);
    EXPECT_TRUE(ReadAll(f) == want) << "got\n" << ReadAll(f).substr(0, 2000) << "\nwant\n" << want.substr(0, 2000);
    EXPECT_TRUE(Contains(r.err, "as at LSN " + std::to_string(c.lsn))) << r.err;

    // The same cut by time: at the commit's time, and between it and the next commit.
    const int64_t t = times.at(c.lsn);
    const int64_t next = c.lsn < newest ? times.at(c.lsn + 1) : t + kTicksPerSecond;
    if (next > t) {
      for (const int64_t cut : {t, t + (next - t - 1) / 2}) {
        const std::string ft = dir_.Sub("time" + std::to_string(i) + "_" + std::to_string(cut));
        CliRun rt = Cli({"rebuild", "Live", "--at-time", FormatDateTime(cut), "--output", ft, "--progress", "never"});
        ASSERT_EQ(rt.exit_code, 0) << Describe(rt);
        EXPECT_TRUE(ReadAll(ft) == want) << "--at-time " << FormatDateTime(cut);
      }
      time_cuts++;
    }
    // A key range of the same cut.
    {
      const std::string fr = dir_.Sub("range" + std::to_string(i));
      CliRun rr = Cli({"rebuild", "Live", "--at-lsn", std::to_string(c.lsn), "--pk", "p1", "--rk-from", "r04",
                       "--rk-to", "r11", "--output", fr, "--progress", "never"});
      ASSERT_EQ(rr.exit_code, 0) << Describe(rr);
      std::string want_range;
      for (const Entity& e : c.entities) {
        if (e.partition_key == "p1" && e.row_key >= "r04" && e.row_key < "r11") want_range += json::EntityToJson(e) + "\n";
      }
      EXPECT_TRUE(ReadAll(fr) == want_range) << ReadAll(fr) << "\nwant\n" << want_range;
    }
    // Into a new table, for a few of the cuts.
    if (i % 4 == 0) {
      const std::string into = "Rebuilt" + std::to_string(i);
      CliRun ri = Cli({"rebuild", "Live", "--at-lsn", std::to_string(c.lsn), "--into-table", into, "--progress",
                       "never"});
      ASSERT_EQ(ri.exit_code, 0) << Describe(ri);
      EXPECT_EQ(ContentDiff(ContentOf(c.entities), ContentOf(QueryAll(into))), "");
    }
  }
  EXPECT_GE(time_cuts, 5) << "commit times should mostly differ";

  // ---- refusals ----
  const Content live = ContentOf(QueryAll("Live")), side = ContentOf(QueryAll("Side"));
  const uint64_t lsn_now = LastLsn();
  const std::string at = std::to_string(captures[0].lsn);
  for (const std::string name : {"Live", "LIVE", "live"}) {
    CliRun r = Cli({"rebuild", "Live", "--at-lsn", at, "--into-table", name});
    EXPECT_EQ(r.exit_code, 2) << name << ": " << Describe(r);
  }
  CliRun existing = Cli({"rebuild", "Live", "--at-lsn", at, "--into-table", "Side"});
  EXPECT_EQ(existing.exit_code, 1) << Describe(existing);
  EXPECT_TRUE(Contains(existing.err, "TableAlreadyExists")) << existing.err;
  EXPECT_EQ(LastLsn(), lsn_now) << "nothing written";
  EXPECT_EQ(ContentDiff(live, ContentOf(QueryAll("Live"))), "");
  EXPECT_EQ(ContentDiff(side, ContentOf(QueryAll("Side"))), "");

  // Tables that did not exist at the cut.
  const std::string f = dir_.Sub("refused");
  CliRun later = Cli({"rebuild", "Later", "--at-lsn", std::to_string(before_later), "--output", f});
  EXPECT_EQ(later.exit_code, 1) << Describe(later);
  CliRun gone = Cli({"rebuild", "Gone", "--at-lsn", std::to_string(newest), "--output", f});
  EXPECT_EQ(gone.exit_code, 1) << Describe(gone);
  CliRun gone_then = Cli({"rebuild", "Gone", "--at-lsn", std::to_string(gone_alive), "--output", f});
  EXPECT_EQ(gone_then.exit_code, 0) << "it did exist at " << gone_alive << ": " << Describe(gone_then);
  CliRun never = Cli({"rebuild", "NoSuchTable", "--at-lsn", std::to_string(newest), "--output", f});
  EXPECT_EQ(never.exit_code, 1) << Describe(never);
  CliRun future = Cli({"rebuild", "Live", "--at-lsn", std::to_string(lsn_now + 1000), "--output", f});
  EXPECT_EQ(future.exit_code, 1) << "a cut past the newest LSN: " << Describe(future);
  CliRun later_into = Cli({"rebuild", "Later", "--at-lsn", std::to_string(before_later), "--into-table", "NotMade"});
  EXPECT_EQ(later_into.exit_code, 1) << Describe(later_into);

  // Usage errors.
  EXPECT_EQ(Cli({"rebuild", "Live", "--at-lsn", at, "--at-time", FormatDateTime(times.at(captures[0].lsn))}).exit_code,
            2);
  EXPECT_EQ(Cli({"rebuild", "Live"}).exit_code, 2);
  EXPECT_EQ(Cli({"rebuild", "Live", "--at-lsn", at, "--output", f, "--into-table", "X"}).exit_code, 2);
  EXPECT_EQ(Cli({"rebuild", "Live", "--at-time", "yesterday"}).exit_code, 2);
  EXPECT_EQ(LastLsn(), lsn_now) << "nothing written by the refused rebuilds";
  auto tables = client_->ListTables();
  ASSERT_TRUE(tables.ok());
  for (const std::string& t : *tables) EXPECT_NE(Lower(t), "notmade");
}

// =====================================================================================
// 4. derive under concurrent writes
// =====================================================================================

TEST_F(CliReplayTest, DeriveUnderConcurrentWritesEqualsTheIndexAsOfItsLsn) {
  SCOPED_TRACE(SeedNote(seed_));
  static const char* kLast[] = {"Smith", "Jones", "Brown", "Garcia", "Miller", "Davis", "Lopez", "Khan",
                                "Wilson", "Moore", "Taylor", "Lee", "Walker", "Hall", "Young", "Allen"};
  ASSERT_TRUE(client_->CreateTable("Employees").ok());
  // The source as the test knows it: key -> (properties, version).
  struct State {
    Props props;
    uint64_t version;
  };
  std::map<Key, State> base;
  constexpr int kEmployees = 3000;
  for (int b = 0; b < kEmployees / 100; b++) {
    Batch batch("Employees");
    std::vector<Key> keys;
    for (int i = b * 100; i < (b + 1) * 100; i++) {
      char rk[16];
      std::snprintf(rk, sizeof rk, "e%05d", i);
      Entity e = EntityBuilder("d" + std::to_string(b % 10), rk)
                     .String("LastName", kLast[i % std::size(kLast)])
                     .String("FirstName", "f" + std::to_string(i))
                     .Int32("Age", 20 + i % 40)
                     .Build();
      keys.push_back({e.partition_key, e.row_key});
      base[keys.back()] = {PropsOf(e), 0};
      batch.Insert(std::move(e));
    }
    auto r = client_->Execute(batch);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    for (const Key& k : keys) base[k].version = r->lsn;
  }

  // The writer: single-entity writes, each recorded with its LSN and result.
  struct Done {
    uint64_t lsn;
    Key key;
    std::optional<Props> after;
  };
  std::vector<Done> done;
  std::atomic<bool> stop{false};
  std::atomic<int> written{0};
  std::string writer_error;
  std::thread writer([&] {
    auto c = ConnectAs("writer");
    if (!c) {
      writer_error = "cannot connect";
      return;
    }
    std::mt19937_64 rng(seed_ + 5);
    std::map<Key, Props> live;
    for (const auto& [k, s] : base) live[k] = s.props;
    std::vector<Key> keys;
    for (const auto& [k, p] : live) keys.push_back(k);
    int inserted = 0;
    while (!stop.load()) {
      const uint32_t dice = rng() % 100;
      Key key = keys[rng() % keys.size()];
      const bool present = live.count(key) != 0;
      Batch b("Employees");
      std::optional<Props> after;
      if (dice < 15) {  // a new employee
        char rk[16];
        std::snprintf(rk, sizeof rk, "n%05d", inserted++);
        key = {"d" + std::to_string(rng() % 10), rk};
        Props p = {{"LastName", Value::String(kLast[rng() % std::size(kLast)])},
                   {"FirstName", Value::String("new" + std::to_string(inserted))}};
        b.Insert(ToEntity(key, p));
        after = p;
        keys.push_back(key);
      } else if (!present) {  // re-insert a deleted one
        Props p = {{"LastName", Value::String(kLast[rng() % std::size(kLast)])},
                   {"FirstName", Value::String("back")}};
        b.InsertOrReplace(ToEntity(key, p));
        after = p;
      } else if (dice < 55) {  // the indexed property moves
        Props p = live[key];
        p["LastName"] = Value::String(kLast[rng() % std::size(kLast)]);
        b.Merge(ToEntity(key, {{"LastName", p["LastName"]}}));
        after = p;
      } else if (dice < 65) {  // the projected property changes
        Props p = live[key];
        p["FirstName"] = Value::String("renamed" + std::to_string(rng() % 1000));
        b.Merge(ToEntity(key, {{"FirstName", p["FirstName"]}}));
        after = p;
      } else if (dice < 75) {  // the indexed property goes away
        Props p = {{"FirstName", Value::String("nolast")}, {"Age", Value::Int32(1)}};
        b.Update(ToEntity(key, p));
        after = p;
      } else if (dice < 90) {
        b.Delete(key.first, key.second);
      } else {  // replaced with a new indexed value
        Props p = {{"LastName", Value::String(kLast[rng() % std::size(kLast)])},
                   {"FirstName", Value::String("repl")}};
        b.InsertOrReplace(ToEntity(key, p));
        after = p;
      }
      auto r = c->Execute(b);
      if (!r.ok()) {
        writer_error = r.status().ToString();
        return;
      }
      if (after) live[key] = *after;
      else live.erase(key);
      done.push_back({r->lsn, key, after});
      written++;
      // About a thousand writes a second: plenty during the derive, without
      // drowning it (it reads every one of them back from the log).
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
  });
  struct JoinOnExit {
    std::thread& t;
    std::atomic<bool>& stop;
    ~JoinOnExit() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } join_on_exit{writer, stop};

  const std::string config = dir_.Sub("worker.yaml");
  WriteAll(config, IndexConfig("EmployeesByLastName"));
  const auto wait_start = std::chrono::steady_clock::now();
  while (written.load() < 50 && std::chrono::steady_clock::now() - wait_start < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_GE(written.load(), 50) << writer_error;
  const int written_before = written.load();
  CliChild derive = StartInBackground({"derive", "--config", config, "--into", "NewIndex", "--no-verify", "--progress",
                                       "never"});
  CliRun r = WaitCli(derive, std::chrono::seconds(60));
  const int written_during = written.load() - written_before;
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  stop = true;
  writer.join();
  ASSERT_EQ(writer_error, "");
  ASSERT_EQ(r.exit_code, 0) << Describe(r);
  std::printf("[          ] %s[          ] %d writes during the derive\n", r.out.c_str(), written_during);

  std::smatch m;
  const std::regex report(R"(snapshot at LSN (\d+) \((\d+) entities\), then (\d+) log records \((\d+) operations )"
                          R"(already in the snapshot\); (\d+) table operations; consistent as of LSN (\d+))");
  ASSERT_TRUE(std::regex_search(r.out, m, report)) << r.out;
  const uint64_t l0 = std::stoull(m[1]), x = std::stoull(m[6]);
  EXPECT_GE(x, l0);
  // The derive's own writes are in the log too: count the source's.
  size_t overlapping = 0;
  for (const Done& d : done) overlapping += d.lsn > l0 && d.lsn <= x;
  std::printf("[          ] %zu source writes between LSN %llu and %llu\n", overlapping,
              static_cast<unsigned long long>(l0), static_cast<unsigned long long>(x));
  EXPECT_GT(overlapping, 10u) << "the writes did not overlap the derive: the test proves little";

  // The source as of X, from the test's own record...
  std::map<Key, State> source = base;
  size_t after_x = 0;
  for (const Done& d : done) {
    if (d.lsn > x) {
      after_x++;
      continue;
    }
    if (d.after) source[d.key] = {*d.after, d.lsn};
    else source.erase(d.key);
  }
  std::printf("[          ] %zu writes after LSN %llu\n", after_x, static_cast<unsigned long long>(x));
  std::vector<Entity> entities;
  Content source_content;
  for (const auto& [k, s] : source) {
    Entity e = ToEntity(k, s.props);
    e.etag = "W/\"" + std::to_string(s.version) + "\"";
    entities.push_back(std::move(e));
    source_content[k] = s.props;
  }
  // ... agrees with rebuild's (an independent path to the same state).
  const std::string at_x = dir_.Sub("at_x.jsonl");
  CliRun rb = Cli({"rebuild", "Employees", "--at-lsn", std::to_string(x), "--output", at_x, "--progress", "never"});
  ASSERT_EQ(rb.exit_code, 0) << Describe(rb);
  const std::vector<Entity> rebuilt = ParseEntities(ReadAll(at_x));
  EXPECT_EQ(ContentDiff(source_content, ContentOf(rebuilt)), "");
  {
    std::map<Key, std::string> want_etags, got_etags;
    for (const Entity& e : entities) want_etags[{e.partition_key, e.row_key}] = e.etag;
    for (const Entity& e : rebuilt) got_etags[{e.partition_key, e.row_key}] = e.etag;
    EXPECT_TRUE(want_etags == got_etags) << "versions differ";
  }

  // The derived table is the index function of that source.
  patterns::PatternConfig pc{"index_table",
                             {{"source", {"Employees"}}, {"target", {"NewIndex"}}, {"properties", {"LastName"}},
                              {"project", {"FirstName"}}}};
  auto cfg = patterns::IndexTableConfig::FromSettings(pc);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  std::map<Key, std::vector<Property>> want_index, got_index;
  for (const Entity& e : patterns::ExpectedIndex(*cfg, entities)) want_index[{e.partition_key, e.row_key}] = e.properties;
  const std::vector<Entity> derived = QueryAll("NewIndex");
  for (const Entity& e : derived) got_index[{e.partition_key, e.row_key}] = e.properties;
  EXPECT_GT(want_index.size(), 2000u);
  Content want_c, got_c;
  for (const auto& [k, p] : want_index) want_c[k] = PropsOf(Entity{k.first, k.second, 0, "", p});
  for (const auto& [k, p] : got_index) got_c[k] = PropsOf(Entity{k.first, k.second, 0, "", p});
  EXPECT_EQ(ContentDiff(want_c, got_c), "");
  EXPECT_TRUE(want_index == got_index) << "same entries, other property order";

  // ---- refusals: a non-empty target, an archive-only configuration ----
  const uint64_t lsn_now = LastLsn();
  CliRun again = Cli({"derive", "--config", config, "--into", "NewIndex"});
  EXPECT_EQ(again.exit_code, 2) << Describe(again);
  EXPECT_TRUE(Contains(again.err, "not empty")) << again.err;
  const std::string archive = dir_.Sub("archive.yaml");
  WriteAll(archive, "patterns:\n  - name: archive\n    source: Employees\n    target: EmployeesArchive\n");
  CliRun arch = Cli({"derive", "--config", archive});
  EXPECT_EQ(arch.exit_code, 2) << Describe(arch);
  CliRun no_such = Cli({"derive", "--config", config, "--index", "NoSuchIndex"});
  EXPECT_EQ(no_such.exit_code, 2) << Describe(no_such);
  EXPECT_EQ(Cli({"derive", "--config", dir_.Sub("absent.yaml")}).exit_code, 2);
  CliRun onto_source = Cli({"derive", "--config", config, "--into", "employees"});
  EXPECT_EQ(onto_source.exit_code, 2) << "the target must not be the source: " << Describe(onto_source);
  EXPECT_EQ(LastLsn(), lsn_now) << "the refused derives wrote nothing";
  std::map<Key, std::vector<Property>> after_refusal;
  for (const Entity& e : QueryAll("NewIndex")) after_refusal[{e.partition_key, e.row_key}] = e.properties;
  EXPECT_TRUE(after_refusal == got_index);
}

}  // namespace
}  // namespace sidetable
