// sidetable-zmq-echo: the bare ZeroMQ floor under the sidecar's round trip.
//
//   sidetable-zmq-echo --serve --endpoint tcp://127.0.0.1:5600   # ROUTER, echoes every message
//   sidetable-zmq-echo --endpoint tcp://127.0.0.1:5600 --bytes 1024 --requests 20000
//
// The server is one thread with one ROUTER socket that sends each message
// (identity + payload) straight back; the client is one DEALER that keeps
// --depth messages in flight (1 = strict round trip) and reports p50/p99 and
// the rate. Both use the same socket options as the sidecar's client
// (no high-water marks, linger 0). The server stops on SIGTERM/SIGINT or
// after --max-seconds.
//
// --store DIR makes the server the floor of a storage server with the same
// hops (issue 17's single-insert rows): every message that one poll finds
// waiting is Put into RocksDB, opened with the engine's options
// (bench/stores.h RawDbOptions), under a key of its own over 1,000
// partitions, in one WriteBatch with the WAL on and no sync (the sidecar's
// `os` mode and its write group), and only then are the replies sent.
// --store-get also reads each key first, as an Insert must to refuse an
// existing row. The sidecar does more for an insert (validation, the change
// record, the request id, the reply's ETag): this is what no design can skip.
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <CLI/CLI.hpp>
#include <zmq.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/stores.h"

namespace {

using Clock = std::chrono::steady_clock;
std::atomic<bool> g_stop{false};
void OnSignal(int) { g_stop.store(true); }

// The storage floor of --store: one WriteBatch per burst.
class BurstStore {
 public:
  BurstStore(const std::string& dir, bool get_first) : get_first_(get_first) {
    rocksdb::DB* db = nullptr;
    rocksdb::Status st = rocksdb::DB::Open(sidetable::bench::RawDbOptions({}), dir, &db);
    if (!st.ok()) throw std::runtime_error("rocksdb open " + dir + ": " + st.ToString());
    db_.reset(db);
  }
  void Add(const zmq::message_t& body) {
    char key[48];
    const int n = std::snprintf(key, sizeof key, "t1|p%03llu|r%016llu",
                                static_cast<unsigned long long>(next_ % 1000),
                                static_cast<unsigned long long>(next_));
    next_++;
    const rocksdb::Slice k(key, static_cast<size_t>(n));
    if (get_first_) {
      std::string old;
      if (db_->Get(rocksdb::ReadOptions(), k, &old).ok()) throw std::runtime_error("key exists");
    }
    batch_.Put(k, rocksdb::Slice(static_cast<const char*>(body.data()), body.size()));
  }
  void Write() {
    if (batch_.Count() == 0) return;
    rocksdb::Status st = db_->Write(rocksdb::WriteOptions(), &batch_);
    if (!st.ok()) throw std::runtime_error("rocksdb write: " + st.ToString());
    batch_.Clear();
    writes_++;
  }
  uint64_t rows() const { return next_; }
  uint64_t writes() const { return writes_; }

 private:
  std::unique_ptr<rocksdb::DB> db_;
  rocksdb::WriteBatch batch_;
  bool get_first_;
  uint64_t next_ = 0, writes_ = 0;
};

int Serve(const std::string& endpoint, double max_seconds, BurstStore* store) {
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  zmq::context_t ctx(1);
  zmq::socket_t s(ctx, zmq::socket_type::router);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::sndhwm, 0);
  s.set(zmq::sockopt::rcvhwm, 0);
  s.bind(endpoint);
  std::fprintf(stderr, "zmq echo serving on %s\n", endpoint.c_str());
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(max_seconds));
  uint64_t echoed = 0;
  while (!g_stop.load() && Clock::now() < until) {
    zmq::pollitem_t item = {s.handle(), 0, ZMQ_POLLIN, 0};
    int rc = zmq_poll(&item, 1, 100);
    if (rc <= 0) continue;
    std::vector<std::pair<zmq::message_t, zmq::message_t>>
        burst;  // --store: replied after the write
    for (int i = 0; i < 1024; i++) {
      zmq::message_t id, body;
      if (!s.recv(id, zmq::recv_flags::dontwait)) break;
      if (!id.more()) continue;  // not from a DEALER: ignore
      (void)s.recv(body, zmq::recv_flags::none);
      while (body.more()) (void)s.recv(body, zmq::recv_flags::none);  // keep the last frame
      echoed++;
      if (store) {
        store->Add(body);
        burst.emplace_back(std::move(id), std::move(body));
        continue;
      }
      s.send(id, zmq::send_flags::sndmore);
      s.send(body, zmq::send_flags::none);
    }
    if (store) {
      store->Write();
      for (auto& [id, body] : burst) {
        s.send(id, zmq::send_flags::sndmore);
        s.send(body, zmq::send_flags::none);
      }
    }
  }
  std::fprintf(stderr, "zmq echo: %llu messages echoed\n", static_cast<unsigned long long>(echoed));
  if (store) {
    std::fprintf(stderr, "zmq echo: %llu rows in %llu RocksDB writes\n",
                 static_cast<unsigned long long>(store->rows()),
                 static_cast<unsigned long long>(store->writes()));
  }
  return 0;
}

double Pct(std::vector<uint64_t>& v, double p) {
  if (v.empty()) return 0;
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size() - 1) + 0.5));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return static_cast<double>(v[i]) / 1000.0;
}

int Client(const std::string& endpoint, size_t bytes, uint64_t requests, uint64_t warmup, int depth,
           const std::string& json_path, const std::string& label) {
  zmq::context_t ctx(1);
  zmq::socket_t s(ctx, zmq::socket_type::dealer);
  s.set(zmq::sockopt::linger, 0);
  s.set(zmq::sockopt::sndhwm, 0);
  s.set(zmq::sockopt::rcvhwm, 0);
  s.connect(endpoint);
  std::string payload(bytes, 'x');
  // Each message carries its send time in its first 8 bytes.
  std::vector<uint64_t> lat;
  lat.reserve(requests);
  const uint64_t total = warmup + requests;
  uint64_t sent = 0, received = 0;
  Clock::time_point t_measure{};
  const auto t_begin = Clock::now();
  auto send_one = [&] {
    int64_t now = Clock::now().time_since_epoch().count();
    std::memcpy(payload.data(), &now, std::min<size_t>(8, payload.size()));
    s.send(zmq::buffer(payload), zmq::send_flags::none);
    sent++;
  };
  while (received < total) {
    if (received == warmup && t_measure == Clock::time_point{}) t_measure = Clock::now();
    while (sent < total && sent - received < static_cast<uint64_t>(depth)) send_one();
    zmq::pollitem_t item = {s.handle(), 0, ZMQ_POLLIN, 0};
    if (zmq_poll(&item, 1, 5000) <= 0) {
      std::fprintf(stderr, "zmq echo client: no reply within 5 s from %s\n", endpoint.c_str());
      return 1;
    }
    zmq::message_t m;
    while (received < total && s.recv(m, zmq::recv_flags::dontwait)) {
      int64_t t0 = 0;
      std::memcpy(&t0, m.data(), std::min<size_t>(8, m.size()));
      const int64_t now = Clock::now().time_since_epoch().count();
      if (received >= warmup) lat.push_back(static_cast<uint64_t>(
                                  std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::duration(now - t0)).count()));
      received++;
    }
    if (Clock::now() - t_begin > std::chrono::minutes(10)) {
      std::fprintf(stderr, "zmq echo client: over 10 minutes, stopping\n");
      return 1;
    }
  }
  if (t_measure == Clock::time_point{}) t_measure = t_begin;
  const double seconds = std::chrono::duration<double>(Clock::now() - t_measure).count();
  const double rate = static_cast<double>(lat.size()) / seconds;
  const double p50 = Pct(lat, 50), p99 = Pct(lat, 99), p999 = Pct(lat, 99.9);
  std::printf("zmq echo %s: %zu B, depth %d, %zu round trips: %.0f /s, p50 %.1f us, p99 %.1f us, p999 %.1f us\n",
              label.c_str(), bytes, depth, lat.size(), rate, p50, p99, p999);
  if (!json_path.empty()) {
    std::ofstream f(json_path, std::ios::app);
    f << "{\"label\":\"" << label << "\",\"bytes\":" << bytes << ",\"depth\":" << depth
      << ",\"ops_per_s\":" << rate << ",\"p50_us\":" << p50 << ",\"p99_us\":" << p99
      << ",\"p999_us\":" << p999 << "}\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"sidetable-zmq-echo: bare ZeroMQ DEALER/ROUTER echo (server and client)"};
  std::string endpoint = "tcp://127.0.0.1:5600", json_path, label, store_dir;
  bool serve = false, store_get = false;
  double max_seconds = 1800;
  size_t bytes = 1024;
  uint64_t requests = 20000, warmup = 1000;
  int depth = 1;
  app.add_flag("--serve", serve, "run the echo server (else the client)");
  app.add_option("--endpoint", endpoint, "endpoint to bind (server) or connect (client)")->capture_default_str();
  app.add_option("--max-seconds", max_seconds, "server: stop after this long")->capture_default_str();
  app.add_option("--bytes", bytes, "client: message size")->check(CLI::Range(8, 1 << 24))->capture_default_str();
  app.add_option("--requests", requests, "client: measured round trips")->check(CLI::Range(1, 100000000))->capture_default_str();
  app.add_option("--warmup", warmup, "client: unmeasured round trips first")->capture_default_str();
  app.add_option("--depth", depth, "client: messages in flight (1 = strict round trip)")
      ->check(CLI::Range(1, 4096))->capture_default_str();
  app.add_option("--json", json_path, "client: append the result as JSON to this file");
  app.add_option("--label", label, "client: a name for this run");
  app.add_option(
      "--store", store_dir,
      "server: Put every message into RocksDB at DIR, one WriteBatch per burst, before replying");
  app.add_flag("--store-get", store_get,
               "server, with --store: read each key before its Put, as an Insert must");
  CLI11_PARSE(app, argc, argv);
  try {
    if (!serve) return Client(endpoint, bytes, requests, warmup, depth, json_path, label);
    std::unique_ptr<BurstStore> store;
    if (!store_dir.empty()) store = std::make_unique<BurstStore>(store_dir, store_get);
    return Serve(endpoint, max_seconds, store.get());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sidetable-zmq-echo: %s\n", e.what());
    return 1;
  }
}
