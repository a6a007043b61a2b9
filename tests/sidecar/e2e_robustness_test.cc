// Pipelining, overload, shutdown under load, bad input, health and metrics.
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <zmq.hpp>

#include "protocol/msgpack.h"
#include "protocol/wire.h"
#include "tests/sidecar/e2e_fixture.h"
#include "tests/sidecar/e2e_metrics.h"

namespace sidetable {
namespace {

using testing::kNoMetric;
using testing::Metric;
using testing::SidecarTest;

Batch WriteOf(const std::string& table, Entity e) {
  Batch b(table);
  b.Insert(std::move(e));
  return b;
}

// A hand-built request's "ops": one Insert of the entity ("p", `rk`).
void WriteOneInsert(msgpack::Writer& w, const char* rk) {
  w.Str("ops");
  w.ArrayHeader(1);
  w.MapHeader(2);
  w.Str("op");
  w.Str("Insert");
  w.Str("entity");
  w.MapHeader(2);
  w.Str("pk");
  w.Str("p");
  w.Str("rk");
  w.Str(rk);
}

// A slow table scan goes out first, then fast gets: the gets are answered
// while the scan still runs, so replies arrive out of order and each one must
// still reach its own callback. On a loaded machine the scan can finish
// before the server has even read the gets, which proves nothing about
// matching, so the round is repeated (at most 5 times) until one comes back
// out of order; every round checks every reply against its own request.
TEST_F(SidecarTest, PipelinedRepliesComeBackOutOfOrderAndMatch) {
  ASSERT_TRUE(client_->CreateTable("Big").ok());
  for (int b = 0; b < 200; b++) {
    Batch batch("Big");
    for (int i = 0; i < 100; i++) batch.Insert(Person("p" + std::to_string(b), "r" + std::to_string(i), i));
    ASSERT_TRUE(client_->Execute(batch).ok());
  }
  bool out_of_order = false;
  for (int round = 0; round < 5 && !out_of_order; round++) {
    std::vector<int> completion_order;
    client::QueryOptions scan;
    scan.table = "Big";
    scan.filter = "Age eq -1";  // examines every entity, matches none
    client_->SendQuery(scan, std::nullopt, [&](Result<client::Page> q) {
      ASSERT_TRUE(q.ok()) << q.status().ToString();
      EXPECT_EQ(q->examined, 20000u);
      completion_order.push_back(-1);
    });
    for (int i = 0; i < 50; i++) {
      client_->SendGet("Big", "p" + std::to_string(i), "r" + std::to_string(i % 100), [&, i](Result<Entity> r) {
        ASSERT_TRUE(r.ok()) << r.status().ToString();
        const Entity& e = *r;
        EXPECT_EQ(e.partition_key, "p" + std::to_string(i));  // matched by id, not by order
        EXPECT_EQ(e.Find("Age")->as_int32(), i % 100);
        completion_order.push_back(i);
      });
    }
    client_->Drain();
    ASSERT_EQ(completion_order.size(), 51u);
    out_of_order = completion_order.front() != -1;
  }
  EXPECT_TRUE(out_of_order) << "in 5 rounds the slow scan was always answered first";
}

class TinyQueueTest : public SidecarTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    // Every request through the one queue (none on the frontend).
    return {"--durability", "fsync", "--workers", "1", "--queue-depth", "1", "--inline-max-bytes", "0"};
  }
};

// With one worker and a queue of one, a burst of pipelined writes must get
// ServerBusy for most of them at once, and a busy request is never executed.
TEST_F(TinyQueueTest, OverloadAnswersServerBusyAndBusyMeansNotWritten) {
  ASSERT_TRUE(client_->CreateTable("Load").ok());
  auto once = Connect(/*max_attempts=*/1);
  std::set<int> acked, busy;
  for (int i = 0; i < 300; i++) {
    once->SendWrite(WriteOf("Load", Person("p" + std::to_string(i % 7), std::to_string(i), i)),
               [&, i](Result<WriteResult> r) {
                 const Status& s = r.status();
                 if (s.ok()) acked.insert(i);
                 else if (s.code() == Code::kServerBusy) busy.insert(i);
                 else ADD_FAILURE() << s.ToString();
               });
  }
  once->Drain();
  EXPECT_EQ(acked.size() + busy.size(), 300u);
  EXPECT_GT(busy.size(), 0u);
  EXPECT_GT(acked.size(), 0u);
  for (int i = 0; i < 300; i++) {
    auto e = client_->Get("Load", "p" + std::to_string(i % 7), std::to_string(i));
    if (acked.count(i)) {
      EXPECT_TRUE(e.ok()) << i;
    } else {
      EXPECT_EQ(e.status().code(), Code::kResourceNotFound) << i;
    }
  }
  // With retries (back-off and jitter) every write gets through.
  auto patient = Connect(/*max_attempts=*/1000);
  int ok = 0;
  for (int i = 0; i < 100; i++) {
    patient->SendWrite(WriteOf("Load", Person("q", std::to_string(i), i)),
                  [&](Result<WriteResult> r) { ok += r.ok(); });
  }
  patient->Drain();
  EXPECT_EQ(ok, 100);
}

// SIGTERM while writes stream in: the server stops taking requests, finishes
// and answers the ones it accepted, exits 0, and after a restart every
// acknowledged write is there.
TEST_F(SidecarTest, SigtermUnderLoadLosesNothingAcknowledged) {
  ASSERT_TRUE(client_->CreateTable("Load").ok());
  auto writer = Connect(/*max_attempts=*/1);
  std::set<int> acked;
  int answered = 0;
  int sent = 0;
  bool stopped = false;
  for (int round = 0; round < 400 && !stopped; round++) {
    for (int k = 0; k < 20; k++, sent++) {
      writer->SendWrite(WriteOf("Load", Person("p" + std::to_string(sent % 13), std::to_string(sent), sent)),
                   [&, id = sent](Result<WriteResult> r) {
                     answered++;
                     if (r.ok()) acked.insert(id);
                   });
    }
    writer->Poll(std::chrono::milliseconds(1));
    if (acked.size() > 500 && !stopped) {
      kill(server_->pid(), SIGTERM);
      stopped = true;
    }
  }
  ASSERT_TRUE(stopped);
  // Everything still pending either gets its reply or times out (max_attempts 1).
  writer->Drain();
  EXPECT_EQ(answered, sent);
  EXPECT_EQ(server_->Stop(), 0) << server_->Log();
  ASSERT_TRUE(server_->Start()) << server_->Log();
  client_ = Connect();
  for (int id : acked) {
    ASSERT_TRUE(client_->Get("Load", "p" + std::to_string(id % 13), std::to_string(id)).ok()) << id;
  }
}

TEST_F(SidecarTest, BadFramesGetErrorsAndTheServerKeepsServing) {
  auto lsn_before = client_->Ping()->last_lsn;
  auto raw = Connect();
  auto status_of = [&](const std::string& frame) {
    auto reply = raw->RawRoundTrip(frame);
    EXPECT_TRUE(reply.ok());
    wire::Header h;
    std::string_view body;
    Status s = wire::DecodeReply(*reply, &h, &body);
    return std::make_pair(h.status, s.code());
  };
  std::string header;
  wire::AppendHeader(&header, wire::Header{1, 5, 0, 77});
  EXPECT_EQ(status_of("xx"), std::make_pair(uint16_t{400}, Code::kInvalidInput));
  std::string v9;
  wire::AppendHeader(&v9, wire::Header{9, 1, 0, 1});
  EXPECT_EQ(status_of(v9 + "\x80"), std::make_pair(uint16_t{400}, Code::kInvalidInput));
  std::string op42;
  wire::AppendHeader(&op42, wire::Header{1, 42, 0, 1});
  EXPECT_EQ(status_of(op42 + "\x80"), std::make_pair(uint16_t{400}, Code::kInvalidInput));
  EXPECT_EQ(status_of(header + "garbage"), std::make_pair(uint16_t{400}, Code::kInvalidInput));
  // Over max_request_bytes (6 MiB by default): 413.
  EXPECT_EQ(status_of(header + std::string(7 << 20, 'x')),
            std::make_pair(uint16_t{413}, Code::kRequestBodyTooLarge));
  // A message of three non-delimiter frames has no request id: dropped.
  // So is one of 12 frames, longer than the frontend reads at once (9), and
  // after it a valid request on the same connection is still answered.
  const uint64_t malformed_before = Metric(*server_, "sidetable_malformed_frames_total");
  ASSERT_NE(malformed_before, kNoMetric);
  {
    zmq::context_t ctx;
    zmq::socket_t s(ctx, zmq::socket_type::dealer);
    s.set(zmq::sockopt::linger, 0);
    s.connect(server_->endpoint());
    s.send(zmq::str_buffer("a"), zmq::send_flags::sndmore);
    s.send(zmq::str_buffer("b"), zmq::send_flags::sndmore);
    s.send(zmq::str_buffer("c"), zmq::send_flags::none);
    for (int i = 0; i < 11; i++) s.send(zmq::str_buffer("x"), zmq::send_flags::sndmore);
    s.send(zmq::str_buffer("x"), zmq::send_flags::none);
    std::string ping;
    const auto ping_op = static_cast<uint8_t>(wire::Op::kPing);
    wire::AppendHeader(&ping, wire::Header{wire::kVersion, ping_op, 0, 4242});
    ping.push_back('\x80');
    s.send(zmq::buffer(ping), zmq::send_flags::none);
    zmq::pollitem_t item{s.handle(), 0, ZMQ_POLLIN, 0};
    ASSERT_EQ(zmq::poll(&item, 1, std::chrono::milliseconds(5000)), 1)
        << "the Ping after the long message";
    zmq::message_t reply;
    ASSERT_TRUE(s.recv(reply));
    wire::Header h;
    std::string_view body;
    ASSERT_TRUE(wire::DecodeReply(reply.to_string_view(), &h, &body).ok());
    EXPECT_EQ(h.request_id, 4242u);
    EXPECT_EQ(h.status, 200);
  }
  const uint64_t malformed_after = Metric(*server_, "sidetable_malformed_frames_total");
  ASSERT_NE(malformed_after, kNoMetric);
  EXPECT_GE(malformed_after - malformed_before, 2u);
  // Still serving, nothing written.
  auto p = client_->Ping();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->last_lsn, lsn_before);
}

// Requests that name no key, an empty client request id, a property name
// that is no identifier: each is refused with InvalidInput (or
// PropertyNameInvalid) through a real sidecar, and nothing is written. A
// RequestArchive without 'pk' used to commit a record for PartitionKey "",
// and a Get without 'rk' read the entity whose RowKey is "".
TEST_F(SidecarTest, RequestsWithoutTheirKeysOrWithBadNamesWriteNothing) {
  ASSERT_TRUE(client_->CreateTable("Keys").ok());
  Entity empty_rk;
  empty_rk.partition_key = "p";
  empty_rk.Set("a", Value::Int32(1));
  ASSERT_TRUE(client_->Insert("Keys", empty_rk).ok());
  const uint64_t lsn_before = client_->Ping()->last_lsn;
  auto raw = Connect();
  auto call = [&](wire::Op op, uint32_t fields, auto body) {
    std::string f;
    wire::AppendHeader(&f, wire::Header{wire::kVersion, static_cast<uint8_t>(op), 0, 9});
    msgpack::Writer w(&f);
    w.MapHeader(fields);
    body(w);
    auto reply = raw->RawRoundTrip(f);
    EXPECT_TRUE(reply.ok());
    wire::Header h;
    std::string_view rest;
    Status s = wire::DecodeReply(*reply, &h, &rest);
    return std::make_pair(h.status, s.code());
  };
  const auto invalid = std::make_pair(uint16_t{400}, Code::kInvalidInput);
  EXPECT_EQ(call(wire::Op::kGet, 2,
                 [](msgpack::Writer& w) {
                   w.Str("table");
                   w.Str("Keys");
                   w.Str("pk");
                   w.Str("p");
                 }),
            invalid);
  EXPECT_EQ(call(wire::Op::kRequestArchive, 3,
                 [](msgpack::Writer& w) {
                   w.Str("table");
                   w.Str("Keys");
                   w.Str("rks");
                   w.ArrayHeader(1);
                   w.Str("");
                   w.Str("target");
                   w.Str("KeysArchive");
                 }),
            invalid);
  Entity other = empty_rk;
  other.row_key = "r2";
  EXPECT_EQ(call(wire::Op::kWrite, 3,
                 [&](msgpack::Writer& w) {
                   w.Str("table");
                   w.Str("Keys");
                   w.Str("clientRequestId");
                   w.Str("");
                   WriteOneInsert(w, "r2");  // valid
                 }),
            invalid);
  for (const char* name : {"\u00d7", "a\u00a0b", "\U0001F600", "x\u200by"}) {
    Entity bad = other;
    bad.Set(name, Value::Int32(2));
    auto w = client_->Insert("Keys", bad);
    ASSERT_FALSE(w.ok()) << name;
    EXPECT_EQ(w.status().code(), Code::kPropertyNameInvalid) << name;
  }
  // Nothing committed; the entity at ("p", "") is as it was, "r2" absent.
  EXPECT_EQ(client_->Ping()->last_lsn, lsn_before);
  auto e = client_->Get("Keys", "p", "");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->properties.size(), 1u);
  EXPECT_EQ(client_->Get("Keys", "p", "r2").status().code(), Code::kResourceNotFound);
  // An ordinary name that happens to be ETag is stored and read back.
  Entity etag = other;
  etag.row_key = "r3";
  etag.Set("ETag", Value::String("mine"));
  ASSERT_TRUE(client_->Insert("Keys", etag).ok());
  auto back = client_->Get("Keys", "p", "r3");
  ASSERT_TRUE(back.ok());
  ASSERT_NE(back->Find("ETag"), nullptr);
  EXPECT_EQ(back->Find("ETag")->bytes(), "mine");
}

// A request field given twice is refused by the real server (400
// InvalidInput naming it) and nothing is written: a Write naming table A,
// then table B, used to go to B; a Get with two pks read the second.
TEST_F(SidecarTest, ARepeatedRequestFieldIsRefusedAndWritesNothing) {
  ASSERT_TRUE(client_->CreateTable("TwiceA").ok());
  ASSERT_TRUE(client_->CreateTable("TwiceB").ok());
  const uint64_t lsn_before = client_->Ping()->last_lsn;
  // {"table": "TwiceA", "ops": [Insert p/r], "table": "TwiceB"}, hand-built.
  std::string f;
  wire::AppendHeader(&f,
                     wire::Header{wire::kVersion, static_cast<uint8_t>(wire::Op::kWrite), 0, 31});
  msgpack::Writer w(&f);
  w.MapHeader(3);
  w.Str("table");
  w.Str("TwiceA");
  WriteOneInsert(w, "r");
  w.Str("table");
  w.Str("TwiceB");
  auto raw = Connect();
  auto reply = raw->RawRoundTrip(f);
  ASSERT_TRUE(reply.ok()) << reply.status().ToString();
  wire::Header h;
  std::string_view body;
  Status s = wire::DecodeReply(*reply, &h, &body);
  EXPECT_EQ(h.request_id, 31u);
  EXPECT_EQ(h.status, 400);
  EXPECT_EQ(s.code(), Code::kInvalidInput);
  EXPECT_NE(s.message().find("request field 'table' repeated"), std::string::npos) << s.message();
  // Nothing written, in either table.
  EXPECT_EQ(client_->Ping()->last_lsn, lsn_before);
  EXPECT_EQ(client_->Get("TwiceA", "p", "r").status().code(), Code::kResourceNotFound);
  EXPECT_EQ(client_->Get("TwiceB", "p", "r").status().code(), Code::kResourceNotFound);
}

TEST_F(SidecarTest, HealthAndMetricsOverHttp) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  ASSERT_TRUE(client_->Insert("People", Person("p", "r", 1)).ok());
  EXPECT_EQ(client_->Insert("People", Person("p", "r", 1)).status().code(), Code::kEntityAlreadyExists);
  auto colon = server_->http().rfind(':');
  httplib::Client http(server_->http().substr(0, colon), std::stoi(server_->http().substr(colon + 1)));
  auto health = http.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_NE(health->body.find("\"status\":\"ok\""), std::string::npos);
  EXPECT_NE(health->body.find("\"lsn\":2"), std::string::npos) << health->body;
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  const std::string& m = metrics->body;
  EXPECT_NE(m.find("sidetable_requests_total{op=\"Write\"} 2"), std::string::npos) << m;
  EXPECT_NE(m.find("sidetable_errors_total{code=\"EntityAlreadyExists\"} 1"), std::string::npos);
  EXPECT_NE(m.find("sidetable_table_operations_total{table=\"People\"} 1"), std::string::npos);
  EXPECT_NE(m.find("sidetable_changelog_lsn 2"), std::string::npos);
  EXPECT_NE(m.find("sidetable_request_duration_seconds_bucket{op=\"Write\",le=\"+Inf\"} 2"),
            std::string::npos);
}

// A TCP connection to `port` on loopback that sends nothing (-1 on failure).
int IdleConnection(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (fd >= 0) ::close(fd);
    return -1;
  }
  return fd;
}

// Found by an outside test in session 41: cpp-httplib's 8 pool threads each
// held a connection until it closed, so 8 idle connections (or 8 scrapers
// keeping theirs alive) left /health and /ready unanswered for 4-5 s, and a
// probe's 1 s time-out failed on a healthy sidecar.
TEST_F(SidecarTest, IdleAndKeptAliveHttpConnectionsDoNotStarveTheProbes) {
  auto colon = server_->http().rfind(':');
  const std::string host = server_->http().substr(0, colon);
  const int port = std::stoi(server_->http().substr(colon + 1));
  std::vector<int> idle;
  for (int i = 0; i < 16; i++) idle.push_back(IdleConnection(port));
  std::vector<std::unique_ptr<httplib::Client>> scrapers;
  for (int i = 0; i < 8; i++) {
    scrapers.push_back(std::make_unique<httplib::Client>(host, port));
    scrapers.back()->set_keep_alive(true);
    auto page = scrapers.back()->Get("/metrics");
    ASSERT_TRUE(page);
    // The answer closes the connection, so a scraper holds no thread.
    EXPECT_EQ(page->get_header_value("Connection"), "close");
  }
  for (const char* path : {"/health", "/ready"}) {
    httplib::Client probe(host, port);
    probe.set_connection_timeout(1, 0);
    probe.set_read_timeout(1, 0);
    const auto start = std::chrono::steady_clock::now();
    auto res = probe.Get(path);
    ASSERT_TRUE(res) << path << " unanswered within 1 s beside 16 idle connections and 8 scrapers";
    EXPECT_EQ(res->status, 200) << path;
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(500)) << path;
  }
  // An idle connection is dropped after the read time-out (1 s), not 5 s.
  char byte;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(::recv(idle[0], &byte, 1, 0), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(2500));
  for (int fd : idle) {
    if (fd >= 0) ::close(fd);
  }
  auto health = httplib::Client(host, port).Get("/health");
  ASSERT_TRUE(health);
  EXPECT_NE(health->body.find("\"status\":\"ok\""), std::string::npos) << health->body;
}

// With the change stream on, so that the publisher's families are there too.
class MetricsTextTest : public SidecarTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    return {"--durability", "os", "--kafka", "embedded"};
  }
};

// The family of a sample line: its name without the labels, and without a
// histogram's _bucket/_sum/_count when `types` knows the histogram.
std::string FamilyOf(const std::string& line, const std::map<std::string, std::string>& types) {
  std::string name = line.substr(0, line.find_first_of("{ "));
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.ends_with(s)) {
      const std::string base = name.substr(0, name.size() - s.size());
      auto t = types.find(base);
      if (t != types.end() && t->second == "histogram") return base;
    }
  }
  return name;
}

// Found by an outside test in session 41: ten families (in_flight,
// malformed_frames_total, the publisher's bytes and errors, table_batches_total,
// ...) had a # TYPE line and no # HELP. Prometheus takes them, but the text
// format's contract is HELP and TYPE for every family; checked here with the
// rest of it: no sample without its family's TYPE, no series twice.
TEST_F(MetricsTextTest, EveryFamilyHasHelpAndTypeAndNoSeriesRepeats) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  ASSERT_TRUE(client_->Insert("People", Person("p", "r", 1)).ok());
  auto colon = server_->http().rfind(':');
  httplib::Client http(server_->http().substr(0, colon),
                       std::stoi(server_->http().substr(colon + 1)));
  auto page = http.Get("/metrics");
  ASSERT_TRUE(page);
  std::map<std::string, std::string> types;
  std::set<std::string> helps, series;
  std::istringstream in(page->body);
  std::vector<std::string> samples;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# HELP ", 0) == 0) {
      EXPECT_TRUE(helps.insert(line.substr(7, line.find(' ', 7) - 7)).second)
          << "HELP twice: " << line;
    } else if (line.rfind("# TYPE ", 0) == 0) {
      const auto end = line.find(' ', 7);
      EXPECT_TRUE(types.emplace(line.substr(7, end - 7), line.substr(end + 1)).second)
          << "TYPE twice: " << line;
    } else if (!line.empty()) {
      samples.push_back(line);
      EXPECT_TRUE(series.insert(line.substr(0, line.rfind(' '))).second)
          << "series twice: " << line;
    }
  }
  EXPECT_TRUE(types.count("sidetable_publisher_bytes_total"))
      << "the change stream's families are missing";
  for (const auto& [family, type] : types)
    EXPECT_TRUE(helps.count(family)) << family << " has no # HELP";
  for (const auto& line : samples)
    EXPECT_TRUE(types.count(FamilyOf(line, types))) << "no # TYPE for " << line;
}

// Found by an outside test in session 41: the per-table counters were kept
// per spelling, so writes to "obs", "OBS" and "oBs" (one table) made three
// series, 8,000 spellings of one 13-letter name grew /metrics from 31 KB to
// 1.4 MB, and 300 tables created and deleted left 900 series behind.
TEST_F(SidecarTest, PerTableSeriesAreOnePerTableAndGoWithIt) {
  ASSERT_TRUE(client_->CreateTable("People").ok());
  for (const char* spelling : {"People", "people", "PEOPLE", "pEoPlE"}) {
    ASSERT_TRUE(client_->InsertOrReplace(spelling, Person("p", spelling, 1)).ok()) << spelling;
  }
  EXPECT_EQ(Metric(*server_, "sidetable_table_operations_total{table=\"People\"}"), 4u);
  EXPECT_EQ(Metric(*server_, "sidetable_table_batches_total{table=\"People\"}"), 4u);
  for (const char* other : {"people", "PEOPLE", "pEoPlE"}) {
    EXPECT_EQ(
        Metric(*server_, std::string("sidetable_table_operations_total{table=\"") + other + "\"}"),
        kNoMetric)
        << other;
  }
  ASSERT_TRUE(client_->DeleteTable("PEOPLE").ok());
  EXPECT_EQ(Metric(*server_, "sidetable_table_operations_total{table=\"People\"}"), kNoMetric);
  // A write refused for the missing table adds no series.
  EXPECT_EQ(client_->InsertOrReplace("People", Person("p", "r", 1)).status().code(),
            Code::kTableNotFound);
  EXPECT_EQ(Metric(*server_, "sidetable_table_operations_total{table=\"People\"}"), kNoMetric);
  ASSERT_TRUE(client_->CreateTable("people").ok());
  ASSERT_TRUE(client_->InsertOrReplace("PEOPLE", Person("p", "r", 1)).ok());
  EXPECT_EQ(Metric(*server_, "sidetable_table_operations_total{table=\"people\"}"), 1u);
  EXPECT_EQ(Metric(*server_, "sidetable_table_operations_total{table=\"PEOPLE\"}"), kNoMetric);
}

// A Kafka nobody answers at (port 1 on loopback refuses at once), logs in JSON.
class UnreachableKafkaJsonLogTest : public SidecarTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    return {"--durability", "os", "--kafka", "127.0.0.1:1", "--log-format", "json"};
  }
};

// Found by an outside test in session 41: the sidecar's librdkafka handles
// printed their own lines ("%3|1796621638.020|FAIL|sidetable-...#producer-1|
// ... Connection refused") straight to stderr, so with --log-format json
// every broker error was a line no JSON reader takes, and --log-level off
// did not silence them.
TEST_F(UnreachableKafkaJsonLogTest, KafkaErrorsAreJsonLinesOfTheSidecarsLog) {
  std::string log;
  for (int i = 0; i < 100 && log.find("Connection refused") == std::string::npos; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    log = server_->Log();
  }
  ASSERT_NE(log.find("Connection refused"), std::string::npos)
      << "librdkafka's error never logged:\n"
      << log;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    EXPECT_TRUE(line.front() == '{' && line.back() == '}') << "not a JSON line: " << line;
  }
  EXPECT_NE(log.find("\"level\":\"error\",\"logger\""), std::string::npos) << log;
}

class IpcTest : public SidecarTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    return {"--durability", "os", "--listen", "ipc://" + dir_.Sub("s.sock"), "--listen",
            "tcp://127.0.0.1:*"};
  }
};

TEST_F(IpcTest, ServesOnIpcAndTcpAtOnce) {
  ASSERT_EQ(server_->endpoints().size(), 2u);
  client::ClientOptions o;
  o.endpoint = "ipc://" + dir_.Sub("s.sock");
  auto ipc = client::Client::Connect(o);
  ASSERT_TRUE(ipc.ok());
  ASSERT_TRUE((*ipc)->CreateTable("Viaipc").ok());
  auto tables = client_->ListTables();  // the tcp client sees it
  ASSERT_TRUE(tables.ok());
  EXPECT_EQ(*tables, (std::vector<std::string>{"Viaipc"}));
}

TEST(SidecarConfig, BadConfigurationFailsFastWithTheKey) {
  testing::TempDir dir;
  std::string cfg = dir.Sub("bad.yaml");
  {
    std::ofstream out(cfg);
    out << "storage:\n  durability: sometimes\n";
  }
  std::string cmd = std::string(SIDETABLE_BIN) + " --config " + cfg + " > " + dir.Sub("out") + " 2>&1";
  int rc = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  std::ifstream in(dir.Sub("out"));
  std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_NE(text.find("storage.durability"), std::string::npos) << text;
  {
    std::ofstream out(cfg);
    out << "sidecar:\n  workers: 0\n";
  }
  rc = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
  {
    std::ofstream out(cfg);
    out << "unknown_section:\n  x: 1\n";
  }
  rc = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(rc), 2);
}

class JsonLogTest : public SidecarTest {
 protected:
  std::vector<std::string> ServerArgs() override {
    return {"--durability", "os", "--log-format", "json", "--log-level", "debug"};
  }
};

TEST_F(JsonLogTest, EveryLineIsAJsonObjectWithARequestId) {
  ASSERT_TRUE(client_->CreateTable("Quote").ok());
  EXPECT_FALSE(client_->Get("Quote", "a\"b", "c").ok());
  std::string log = server_->Log();
  std::istringstream lines(log);
  std::string line;
  int n = 0, with_request = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    n++;
    EXPECT_EQ(line.front(), '{') << line;
    EXPECT_EQ(line.back(), '}') << line;
    EXPECT_NE(line.find("\"level\":"), std::string::npos);
    if (line.find("req ") != std::string::npos) with_request++;
  }
  EXPECT_GT(n, 2);
  EXPECT_GE(with_request, 2);
}

// One Insert whose frame is about `bytes` long (a Binary property).
Batch InsertOfBytes(const std::string& table, size_t bytes) {
  Entity e;
  e.partition_key = "p";
  e.row_key = "big";
  e.Set("blob", Value::Binary(std::string(bytes, 'x')));
  Batch b(table);
  b.Insert(std::move(e));
  return b;
}

// A request over twice max_request_bytes (12 MiB at the default 6 MiB) is
// dropped by the sidecar's ZeroMQ with the connection (maxmsgsize), so the
// client used to wait out every attempt's time-out and end in NoReply. Now
// the client refuses it at once (RequestBodyTooLarge, never sent), through
// the synchronous and the pipelined calls alike; a request between the two
// limits still gets the sidecar's own 413. Nothing is written, and the
// client keeps working.
TEST_F(SidecarTest, ARequestOverTwiceTheLimitFailsAtOnceWithRequestBodyTooLarge) {
  ASSERT_TRUE(client_->CreateTable("Huge").ok());
  const uint64_t lsn_before = client_->Ping()->last_lsn;
  auto c = Connect(/*max_attempts=*/2);  // the old behaviour: 2 x 10 s, then NoReply
  ASSERT_NE(c, nullptr);
  using Clock = std::chrono::steady_clock;
  const auto quick = std::chrono::seconds(2);  // a time-out is 10 s per attempt here

  auto t0 = Clock::now();
  auto sync = c->Execute(InsertOfBytes("Huge", 13 << 20));
  EXPECT_LT(Clock::now() - t0, quick);
  EXPECT_EQ(sync.status().code(), Code::kRequestBodyTooLarge) << sync.status().ToString();
  EXPECT_NE(sync.status().message().find("max_request_bytes"), std::string::npos)
      << sync.status().message();

  // Pipelined: the callback runs from Poll(), not inside SendWrite().
  std::optional<Status> piped;
  t0 = Clock::now();
  c->SendWrite(InsertOfBytes("Huge", 13 << 20), [&](Result<WriteResult> r) { piped = r.status(); });
  EXPECT_FALSE(piped.has_value());
  c->Drain();
  EXPECT_LT(Clock::now() - t0, quick);
  ASSERT_TRUE(piped.has_value());
  EXPECT_EQ(piped->code(), Code::kRequestBodyTooLarge) << piped->ToString();

  // Between max_request_bytes and twice it: sent, and the sidecar answers 413.
  t0 = Clock::now();
  auto between = c->Execute(InsertOfBytes("Huge", 8 << 20));
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(5));
  EXPECT_EQ(between.status().code(), Code::kRequestBodyTooLarge) << between.status().ToString();
  EXPECT_NE(between.status().message().find("over the limit of"), std::string::npos)
      << between.status().message();

  // The same client still works; nothing was written.
  auto ping = c->Ping();
  ASSERT_TRUE(ping.ok()) << ping.status().ToString();
  EXPECT_EQ(ping->last_lsn, lsn_before);
  EXPECT_EQ(c->Get("Huge", "p", "big").status().code(), Code::kResourceNotFound);
}

}  // namespace
}  // namespace sidetable
