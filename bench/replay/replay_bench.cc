// sidetable-replay-bench: how fast the change stream replays, from the
// sidecar's change log and from Kafka, side by side with the ceiling each
// source has (docs/performance.md, "Replay and audit (issue 7)").
//
//   change log  tools/replay's change-log source over the protocol, against
//               Engine::ReadChanges in-process on the same data (the sidecar
//               stopped): the cost of the protocol and the client. Pages as
//               raw records (the default) and as MessagePack records (the
//               form before issue 17, still what old clients get).
//   Kafka       tools/replay's Kafka source (merge by LSN, JSON decode),
//               against a bare librdkafka consumer reading the same messages
//               without decoding them: the cost of decoding and merging.
//   audit       audit rows (property diffs, JSON lines) over the change log.
//   rebuild     a point-in-time rebuild of the whole table over the change log.
//
// One repeat: a fresh mock Kafka cluster and sidecar, a load of EGTs, then
// every reader in turn; medians over --repeat.
#include <librdkafka/rdkafka.h>

#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "bench/harness.h"
#include "client/client.h"
#include "client/entity_builder.h"
#include "common/kafka/embedded_kafka.h"
#include "engine/engine.h"
#include "testing/sidecar_process.h"
#include "tools/replay/audit.h"
#include "tools/replay/kafka_consumer.h"
#include "tools/replay/point_in_time.h"
#include "tools/replay/runner.h"
#include "tools/replay/source.h"

namespace sidetable::replaybench {
namespace {

using bench::Clock;
using bench::Die;
using bench::SecondsSince;
using bench::WithCommas;

constexpr const char* kTopic = "sidetable.replay-bench.changes";
constexpr const char* kTable = "Orders";

struct Config {
  std::string sidetable = SIDETABLE_DEFAULT_BIN;
  uint64_t egts = 30000;
  int ops_per_egt = 2;
  int partitions = 8;  // Kafka partitions of the topic
  int entity_bytes = 200;
  int repeat = 3;
  bool quick = false;
  std::string scratch = "/tmp";
  // The sidecar's changelog.write_images_once: records that refer to their
  // rows (resolved on every read) or carry copies (engine/internal/images.h).
  bool images_once = true;
  // librdkafka properties for the Kafka source (as the replay tool's
  // --kafka-property), to measure its consumer settings.
  std::map<std::string, std::string> kafka_properties;
  // perf's control FIFOs ("CTL,ACK", as `perf record --control
  // fifo:CTL,ACK -D -1` takes them): the bench enables the events around
  // each run of `perf_reader` only, so a profile holds that reader's span
  // alone (docs/performance.md, "Replay and the change log").
  std::string perf_control;
  std::string perf_reader = "kafka";  // kafka | bare
  // Records asked of a source per Next, as the replay tools ask
  // (RunControl::batch).
  size_t batch = replay::RunControl{}.batch;
};

// Tells perf to start or stop counting (see Config::perf_control).
void PerfControl(const Config& cfg, const std::string& reader, const char* command) {
  if (cfg.perf_control.empty() || reader != cfg.perf_reader) return;
  const size_t comma = cfg.perf_control.find(',');
  if (comma == std::string::npos) Die("--perf-control wants CTL,ACK");
  std::ofstream(cfg.perf_control.substr(0, comma)) << command << "\n" << std::flush;
  std::string ack;
  std::ifstream(cfg.perf_control.substr(comma + 1)) >> ack;  // "ack"
}

struct Sample {
  double seconds = 0;
  uint64_t records = 0, entities = 0;
  // CPU of this whole process over the same span: the reader's thread, its
  // librdkafka threads and the mock cluster's (the sidecar is another
  // process). The Kafka readers' fetch work is in their librdkafka threads,
  // which the wall time alone does not show on two cores.
  double cpu_seconds = 0;
  // CPU of the reading thread alone (the caller's: the source's merge and
  // decoding, or the bare consumer's polls); against `seconds`, the share of
  // the span it ran rather than waited.
  double thread_cpu_seconds = 0;
};

double ThreadCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// One reader's results over the repeats.
struct Series {
  std::vector<double> records_per_s, entities_per_s, cpu_us_per_record, thread_busy;
  void Add(const Sample& s) {
    records_per_s.push_back(static_cast<double>(s.records) / s.seconds);
    entities_per_s.push_back(static_cast<double>(s.entities) / s.seconds);
    thread_busy.push_back(s.thread_cpu_seconds / std::max(s.seconds, 1e-9));
    cpu_us_per_record.push_back(s.cpu_seconds * 1e6 /
                                static_cast<double>(std::max<uint64_t>(s.records, 1)));
  }
};

// Loads `egts` EGTs of `ops` new entities over 1,000 PartitionKeys, a quarter
// of them updates of earlier entities (so audits have diffs), pipelined.
void Load(client::Client* c, const Config& cfg) {
  std::mt19937_64 rng(42);
  const std::string pad(static_cast<size_t>(cfg.entity_bytes), 'x');
  size_t inflight = 0, failed = 0;
  for (uint64_t i = 0; i < cfg.egts; i++) {
    const std::string pk = "p" + std::to_string(i % 1000);
    Batch b(kTable);
    b.SetCaller("replay-bench");
    for (int k = 0; k < cfg.ops_per_egt; k++) {
      const bool update = i >= 4000 && rng() % 4 == 0;
      const uint64_t n = update ? (i - 1000 * (1 + rng() % 3)) : i;
      b.InsertOrReplace(client::EntityBuilder(pk, "r" + std::to_string(n) + "-" + std::to_string(k))
                            .Int64("Amount", static_cast<int64_t>(rng() % 100000))
                            .String("Status", update ? "shipped" : "new")
                            .String("Pad", pad)
                            .Build());
    }
    inflight++;
    c->SendWrite(b, [&](Result<WriteResult> w) {
      inflight--;
      if (!w.ok()) failed++;
    });
    while (inflight >= 64) c->Poll(std::chrono::milliseconds(100));
  }
  c->Drain();
  if (failed) Die(std::to_string(failed) + " load writes failed");
}

// Waits until the topic holds `messages` (the sidecar published everything).
void WaitPublished(const std::string& bootstrap, int partitions, uint64_t messages) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  const auto until = Clock::now() + std::chrono::seconds(120);
  for (;;) {
    uint64_t total = 0;
    for (int p = 0; p < partitions; p++) {
      int64_t lo = 0, hi = 0;
      if (rd_kafka_query_watermark_offsets(rk, kTopic, p, &lo, &hi, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) total += hi;
    }
    if (total >= messages) break;
    if (Clock::now() > until) Die("the sidecar published " + std::to_string(total) + " of " + std::to_string(messages));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  rd_kafka_destroy(rk);
}

uint64_t Entities(const std::vector<ChangeRecord>& batch) {
  uint64_t n = 0;
  for (const auto& r : batch) n += r.ops.size();
  return n;
}

using Opener = std::function<Result<std::unique_ptr<replay::RecordSource>>()>;

// Opens and drains a source (both timed, as a user waits for both); `each`
// sees every batch.
Sample Drain(size_t max_batch, const Opener& open,
             const std::function<void(std::vector<ChangeRecord>&)>& each) {
  Sample s;
  const auto t0 = Clock::now();
  const double cpu0 = ProcessCpuSeconds(), thread0 = ThreadCpuSeconds();
  auto opened = open();
  if (!opened.ok()) Die("open: " + opened.status().ToString());
  replay::RecordSource* src = opened->get();
  std::vector<ChangeRecord> batch;
  for (bool end = false; !end;) {
    src->Recycle(&batch);
    if (Status st = src->Next(max_batch, &batch, &end); !st.ok()) Die("replay: " + st.ToString());
    s.records += batch.size();
    s.entities += Entities(batch);
    if (each) each(batch);
  }
  s.seconds = SecondsSince(t0);
  s.cpu_seconds = ProcessCpuSeconds() - cpu0;
  s.thread_cpu_seconds = ThreadCpuSeconds() - thread0;
  return s;
}

// The bare consumer: every message of every partition, not decoded, timed
// from its creation like the source. It stops, as the source does, when each
// partition reaches the high watermark it had at the start (waiting for
// end-of-partition events instead would time the mock's fetch wait).
Sample RawKafka(const std::string& bootstrap, int partitions) {
  char err[512];
  const auto t0 = Clock::now();
  const double cpu0 = ProcessCpuSeconds(), thread0 = ThreadCpuSeconds();
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof err);
  rd_kafka_conf_set(conf, "group.id", "replay-bench-raw", err, sizeof err);
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
  rd_kafka_poll_set_consumer(rk);
  // Every partition's watermarks in two requests, as the Kafka source asks
  // them (a request per partition would put its round trips, and the
  // mock's occasional ~40 ms answer, into the reference).
  auto marks = replay::kafka::QueryAllWatermarks(rk, kTopic, partitions,
                                                 Clock::now() + std::chrono::seconds(10));
  if (!marks.ok()) Die("watermarks: " + marks.status().ToString());
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  int open_partitions = 0;
  std::vector<int64_t> high(static_cast<size_t>(partitions));
  for (int p = 0; p < partitions; p++) {
    const replay::kafka::Watermarks& w = (*marks)[static_cast<size_t>(p)];
    high[static_cast<size_t>(p)] = w.high;
    if (w.low < w.high) {
      rd_kafka_topic_partition_list_add(list, kTopic, p)->offset = w.low;
      open_partitions++;
    }
  }
  rd_kafka_assign(rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  Sample s;
  uint64_t bytes = 0;
  const auto until = Clock::now() + std::chrono::seconds(120);
  while (open_partitions > 0 && Clock::now() < until) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, 100);
    if (!m) continue;
    if (!m->err) {
      s.records++;
      bytes += m->len;
      if (m->offset + 1 == high[m->partition]) open_partitions--;
    }
    rd_kafka_message_destroy(m);
  }
  s.seconds = SecondsSince(t0);
  s.cpu_seconds = ProcessCpuSeconds() - cpu0;
  s.thread_cpu_seconds = ThreadCpuSeconds() - thread0;
  rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
  if (open_partitions > 0) Die("the raw consumer did not reach the end");
  if (bytes == 0) Die("the raw consumer read nothing");
  return s;
}

struct Results {
  // kafka_audit: audit rows (JSON lines) over the Kafka source, the replay
  // tool's heaviest consumer.
  Series changelog, changelog_msgpack, engine, kafka, raw_kafka, audit, rebuild, kafka_audit;
  uint64_t records = 0, entities = 0, topic_mib = 0;
};

void RunOnce(const Config& cfg, int run, Results* out) {
  bench::ScratchDir dir(cfg.scratch, "replaybench-", false);
  auto k = kafka::EmbeddedKafka::Start(1);
  if (!k.ok()) Die(k.status().ToString());
  auto kafka = std::move(k).value();
  if (Status s = kafka->CreateTopic(kTopic, cfg.partitions); !s.ok()) Die(s.ToString());
  const std::string cfg_path = dir.path() + "/sidecar.yaml";
  std::ofstream(cfg_path) << "sidecar:\n  id: replay-bench\nkafka:\n  bootstrap: " << kafka->bootstraps()
                          << "\n  partitions: " << cfg.partitions << "\nchangelog:\n  write_images_once: "
                          << (cfg.images_once ? "true" : "false") << "\n";
  auto server = std::make_unique<testing::SidecarProcess>(
      cfg.sidetable, dir.path() + "/db",
      std::vector<std::string>{"--config", cfg_path, "--durability", "os", "--log-level", "warn"});
  if (!server->Start()) Die("the sidecar did not start:\n" + server->Log());
  client::ClientOptions o;
  o.endpoint = server->endpoint();
  o.timeout = std::chrono::milliseconds(30000);
  o.caller = "replay-bench";
  auto client = std::move(client::Client::Connect(o)).value();
  if (Status s = client->CreateTable(kTable); !s.ok()) Die(s.ToString());
  Load(client.get(), cfg);
  const uint64_t records = cfg.egts + 1;  // + TableCreated
  WaitPublished(kafka->bootstraps(), cfg.partitions, records);

  // Change log over the protocol.
  replay::ChangeLogSourceOptions co;
  const Opener changelog = [&] { return replay::OpenChangeLogSource(client.get(), co); };
  Sample s = Drain(cfg.batch, changelog, nullptr);
  if (s.records != records) Die("change log: " + std::to_string(s.records) + " records, want " + std::to_string(records));
  out->changelog.Add(s);
  out->records = s.records;
  out->entities = s.entities;
  replay::ChangeLogSourceOptions mo;
  mo.raw_pages = false;
  s = Drain(
      cfg.batch, [&] { return replay::OpenChangeLogSource(client.get(), mo); }, nullptr);
  if (s.records != records) Die("change log (MessagePack): " + std::to_string(s.records) + " records");
  out->changelog_msgpack.Add(s);

  // Audit rows over the change log.
  const replay::AuditWriter writer(replay::AuditFormat::kJsonl, replay::ReplayFilter{});
  replay::AuditSummary summary;
  std::string rows;
  s = Drain(cfg.batch, changelog, [&](std::vector<ChangeRecord>& batch) {
    for (const auto& r : batch) writer.Write(r, &rows, &summary);
    rows.clear();
  });
  out->audit.Add(s);

  // Point-in-time rebuild of the whole table at its last LSN.
  replay::PointInTime pit(kTable, replay::ReplayFilter{}, replay::Cut{});
  s = Drain(cfg.batch, changelog, [&](std::vector<ChangeRecord>& batch) {
    for (auto& r : batch) pit.Apply(std::move(r));
  });
  auto state = pit.State();
  if (!state.ok()) Die(state.status().ToString());
  out->rebuild.Add(s);

  // Kafka: the replay source and the bare consumer, each first in every
  // other repeat, so that neither always reads a topic the other has just
  // brought into the page cache and the heap.
  replay::KafkaSourceOptions ko;
  ko.bootstrap = kafka->bootstraps();
  ko.topic = kTopic;
  ko.properties = cfg.kafka_properties;
  auto source = [&] {
    PerfControl(cfg, "kafka", "enable");
    Sample k = Drain(
        cfg.batch, [&] { return replay::OpenKafkaSource(ko); }, nullptr);
    PerfControl(cfg, "kafka", "disable");
    if (k.records != records)
      Die("kafka: " + std::to_string(k.records) + " records, want " + std::to_string(records));
    out->kafka.Add(k);
  };
  auto bare = [&] {
    PerfControl(cfg, "bare", "enable");
    Sample raw = RawKafka(kafka->bootstraps(), cfg.partitions);
    PerfControl(cfg, "bare", "disable");
    raw.entities = out->entities;
    out->raw_kafka.Add(raw);
  };
  if (run % 2 == 1) {
    source();
    bare();
  } else {
    bare();
    source();
  }
  Sample ka = Drain(
      cfg.batch, [&] { return replay::OpenKafkaSource(ko); },
      [&](std::vector<ChangeRecord>& batch) {
        for (const auto& r : batch) writer.Write(r, &rows, &summary);
        rows.clear();
      });
  if (ka.records != records) Die("kafka audit: " + std::to_string(ka.records) + " records");
  out->kafka_audit.Add(ka);

  // In-process reference: the same change log read by the engine itself.
  client.reset();
  if (server->Stop() != 0) Die("the sidecar did not stop cleanly");
  server.reset();
  EngineOptions eo;
  eo.durability = Durability::kOs;
  auto engine = Engine::Open(eo, dir.path() + "/db");
  if (!engine.ok()) Die(engine.status().ToString());
  Sample e;
  const auto t0 = Clock::now();
  for (uint64_t from = 1;;) {
    auto b = (*engine)->ReadChanges(from, 1000, 4 << 20);
    if (!b.ok()) Die(b.status().ToString());
    if (b->records.empty()) break;
    e.records += b->records.size();
    e.entities += Entities(b->records);
    from = b->records.back().lsn + 1;
  }
  e.seconds = SecondsSince(t0);
  out->engine.Add(e);
  std::printf(
      "repeat %d: %s records (%s entities) | change log %s rec/s (MessagePack pages %s, engine "
      "in-process %s) "
      "| kafka %s rec/s, %.1f us CPU/rec (bare consumer %s, %.1f us) | audit %s rows/s | rebuild "
      "%s rec/s\n",
      run, WithCommas(static_cast<double>(records)).c_str(),
      WithCommas(static_cast<double>(out->entities)).c_str(),
      WithCommas(out->changelog.records_per_s.back()).c_str(),
      WithCommas(out->changelog_msgpack.records_per_s.back()).c_str(),
      WithCommas(out->engine.records_per_s.back()).c_str(),
      WithCommas(out->kafka.records_per_s.back()).c_str(), out->kafka.cpu_us_per_record.back(),
      WithCommas(out->raw_kafka.records_per_s.back()).c_str(),
      out->raw_kafka.cpu_us_per_record.back(), WithCommas(out->audit.entities_per_s.back()).c_str(),
      WithCommas(out->rebuild.records_per_s.back()).c_str());
  std::fflush(stdout);
}

void Row(const char* what, Series& s, Series* ref, const char* ref_name) {
  const double rec = bench::Median(s.records_per_s), ent = bench::Median(s.entities_per_s);
  std::string ratio = "";
  if (ref) {
    ratio = std::to_string(rec / bench::Median(ref->records_per_s));
    ratio = ratio.substr(0, 4) + " of " + ref_name;
  }
  std::printf("| %s | %s | %s | %s |\n", what, WithCommas(rec).c_str(), WithCommas(ent).c_str(), ratio.c_str());
}

int Main(int argc, char** argv) {
  Config cfg;
  CLI::App app{"sidetable-replay-bench: replay throughput from the change log and from Kafka"};
  app.add_option("--sidetable", cfg.sidetable, "the sidetable binary")->capture_default_str();
  app.add_option("--egts", cfg.egts, "EGTs loaded (change records)")->capture_default_str();
  app.add_option("--ops-per-egt", cfg.ops_per_egt, "entities per EGT")->check(CLI::Range(1, 100))->capture_default_str();
  app.add_option("--partitions", cfg.partitions, "Kafka partitions of the topic")->check(CLI::Range(1, 64))->capture_default_str();
  app.add_option("--entity-bytes", cfg.entity_bytes, "padding per entity")->capture_default_str();
  app.add_option("--repeat", cfg.repeat, "repeats; medians reported")->check(CLI::Range(1, 20))->capture_default_str();
  app.add_option("--batch", cfg.batch,
                 "records asked of a source per call (the replay tools' RunControl::batch)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  app.add_flag("--quick", cfg.quick, "smoke run: 3,000 EGTs, one repeat");
  app.add_option("--write-images-once", cfg.images_once,
                 "the sidecar's changelog.write_images_once (false: records carry copies)")
      ->capture_default_str();
  std::vector<std::string> kafka_props;
  app.add_option("--kafka-property", kafka_props,
                 "K=V: a librdkafka property of the Kafka source (repeatable)");
  app.add_option("--perf-control", cfg.perf_control,
                 "CTL,ACK: perf's control FIFOs; the events run only while --perf-reader reads");
  app.add_option("--perf-reader", cfg.perf_reader,
                 "kafka or bare: the reader --perf-control profiles")
      ->check(CLI::IsMember({"kafka", "bare"}))
      ->capture_default_str();
  app.add_option("--scratch", cfg.scratch, "parent of the scratch directory")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  for (const std::string& kv : kafka_props) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) Die("--kafka-property wants K=V, got " + kv);
    cfg.kafka_properties[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  if (cfg.quick) {
    cfg.egts = 3000;
    cfg.repeat = 1;
  }
  // The mock keeps ~5 MiB per partition: refuse a load it would trim.
  const double mib = static_cast<double>(cfg.egts) * cfg.ops_per_egt * (cfg.entity_bytes + 250) * 1.2 / (1 << 20);
  if (mib > 4.0 * cfg.partitions) {
    Die("about " + std::to_string(static_cast<int>(mib)) + " MiB of events would overflow the mock cluster's ~5 MiB "
        "per partition: raise --partitions or lower --egts");
  }
  std::printf("sidetable-replay-bench on %s: %llu EGTs x %d entities, %d Kafka partitions, %d repeat(s)\n",
              bench::Hostname().c_str(), static_cast<unsigned long long>(cfg.egts), cfg.ops_per_egt, cfg.partitions,
              cfg.repeat);
  Results r;
  for (int i = 1; i <= cfg.repeat; i++) RunOnce(cfg, i, &r);
  std::printf("\nmedians of %d repeat(s), %s records, %s entities\n\n", cfg.repeat,
              WithCommas(static_cast<double>(r.records)).c_str(), WithCommas(static_cast<double>(r.entities)).c_str());
  std::printf("| reader | records/s | entities/s | ratio |\n|---|---:|---:|---|\n");
  Row("engine ReadChanges, in-process (reference)", r.engine, nullptr, "");
  Row("change-log source over the protocol (raw pages)", r.changelog, &r.engine, "in-process");
  Row("change-log source, MessagePack pages (old clients)", r.changelog_msgpack, &r.engine, "in-process");
  Row("audit rows over the change log (JSON lines)", r.audit, &r.engine, "in-process");
  Row("point-in-time rebuild over the change log", r.rebuild, &r.engine, "in-process");
  Row("bare librdkafka consumer, no decoding (reference)", r.raw_kafka, nullptr, "");
  Row("Kafka source (merge by LSN, decode)", r.kafka, &r.raw_kafka, "bare consumer");
  Row("audit rows over the Kafka source (JSON lines)", r.kafka_audit, &r.raw_kafka,
      "bare consumer");
  std::printf(
      "\nprocess CPU per record, all threads (medians): Kafka source %.1f us, bare consumer %.1f "
      "us\n",
      bench::Median(r.kafka.cpu_us_per_record), bench::Median(r.raw_kafka.cpu_us_per_record));
  std::printf(
      "reading thread on CPU, share of the span (medians): Kafka source %.2f, bare consumer %.2f\n",
      bench::Median(r.kafka.thread_busy), bench::Median(r.raw_kafka.thread_busy));
  // The two Kafka readers of a repeat run back to back on the same topic:
  // their ratio within a repeat shrugs off the host's drift between
  // repeats, which the ratio of medians above does not.
  std::vector<double> pairs;
  std::string listed;
  for (size_t i = 0; i < r.kafka.records_per_s.size(); i++) {
    pairs.push_back(r.kafka.records_per_s[i] / r.raw_kafka.records_per_s[i]);
    char one[16];
    std::snprintf(one, sizeof one, "%s%.2f", i ? ", " : "", pairs.back());
    listed += one;
  }
  std::printf("Kafka source / bare consumer within each repeat: %s (median %.2f)\n", listed.c_str(),
              bench::Median(pairs));
  return 0;
}

}  // namespace
}  // namespace sidetable::replaybench

int main(int argc, char** argv) { return sidetable::replaybench::Main(argc, argv); }
