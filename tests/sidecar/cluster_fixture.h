// The fixture of the in-process scale-out tests (cluster_test.cc,
// cluster_misconfig_test.cc, cluster_health_test.cc): librdkafka's mock cluster with three brokers,
// Cluster instances in one process with hooks that record into memory
// (Recorder), and helpers that produce what owners and old owners write.
//
// The mock takes ~3 s to form a new group and a cooperative rebalance takes
// two rounds, each up to session timeout - 1 s: the waits are bounded
// polling loops with a 30-60 s deadline.
#pragma once

#include "sidecar/cluster/cluster.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <atomic>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "common/kafka/embedded_kafka.h"
#include "common/kafka/partitioner.h"
#include "events/chunk.h"
#include "events/event.h"
#include "sidecar/cluster/records.h"
#include "sidecar/cluster/state_records.h"
#include "sidecar/cluster/table_incarnations.h"
#include "testing/kafka_reader.h"
#include "testing/temp_dir.h"

namespace sidetable::cluster {
namespace {

using namespace std::chrono_literals;

constexpr int kShards = 6;
const std::string kChangeTopic = "sidetable.orders.changes";
const std::string kClusterTopic = "sidetable.orders.cluster";

// What one sidecar's engine would have seen.
struct Recorder {
  std::mutex mu;
  std::map<int32_t, std::vector<ChangeRecord>> rows;  // shard -> applied records, in order
  std::vector<std::pair<std::string, bool>> tables;
  std::vector<TableEventStamp> table_stamps;  // of each entry of `tables`
  int drops = 0;
  std::atomic<int> failing_applies{0};  // the next n applies fail (a full disk, say)
  // With track_ids: the local tables and their ids, as the engine keeps
  // them (ids never reused), and a table_id hook.
  bool track_ids = false;
  std::map<std::string, uint32_t> local_ids;
  uint32_t next_id = 100;

  ClusterHooks Hooks() {
    ClusterHooks h;
    h.apply = [this](const ChangeRecord& r) {
      if (failing_applies.load() > 0 && failing_applies.fetch_sub(1) > 0) {
        return Status(Code::kInsufficientStorage, "injected: no space left");
      }
      std::lock_guard l(mu);
      rows[kafka::KafkaPartitionFor(r.table + "/" + r.partition_key, kShards)].push_back(r);
      return Status::OK();
    };
    h.drop_shards = [this](const std::vector<int32_t>& shards) -> Result<uint64_t> {
      std::lock_guard l(mu);
      uint64_t n = 0;
      for (int32_t s : shards) {
        n += rows[s].size();
        rows.erase(s);
      }
      drops++;
      return n;
    };
    h.apply_table = [this](const std::string& t, bool created, const TableEventStamp& stamp) {
      std::lock_guard l(mu);
      tables.emplace_back(t, created);
      table_stamps.push_back(stamp);
      if (created && !local_ids.count(t)) local_ids[t] = ++next_id;
      if (!created) local_ids.erase(t);
      return Status::OK();
    };
    if (track_ids) {
      h.table_id = [this](const std::string& t) -> uint32_t {
        std::lock_guard l(mu);
        auto it = local_ids.find(t);
        return it == local_ids.end() ? 0 : it->second;
      };
    }
    return h;
  }
  // The rows the applied records leave, as Engine::ApplyReplicated would:
  // "<pk>/<rk>" -> version; an op not newer than the stored row is skipped.
  std::map<std::string, uint64_t> Rows(int32_t shard) {
    std::lock_guard l(mu);
    std::map<std::string, uint64_t> out;
    for (const auto& r : rows[shard]) {
      for (const auto& op : r.ops) {
        const std::string key = r.partition_key + "/" + op.row_key;
        auto it = out.find(key);
        if (it != out.end() && it->second >= op.version) continue;
        if (op.after)
          out[key] = op.version;
        else if (it != out.end())
          out.erase(it);
      }
    }
    return out;
  }
  std::vector<uint64_t> Lsns(int32_t shard) {
    std::lock_guard l(mu);
    std::vector<uint64_t> out;
    for (const auto& r : rows[shard]) out.push_back(r.lsn);
    return out;
  }
};

struct Member {
  std::string id;
  Recorder rec;
  std::unique_ptr<Cluster> cluster;
};

template <typename F>
bool Eventually(F f, std::chrono::seconds limit = 30s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (f()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return f();
}

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto k = kafka::EmbeddedKafka::Start(3);
    ASSERT_TRUE(k.ok()) << k.status().ToString();
    kafka_ = std::move(*k);
    options_.service = "orders";
    options_.session_timeout_ms = 3000;
    // These tests follow the change topic record by record; the state
    // topic (which replaces most of a restore's records with a projection)
    // has its own tests below.
    options_.state_topic = "";
    kopts_.bootstrap = kafka_->bootstraps();
    kopts_.partitions = kShards;
    ASSERT_TRUE(kafka_->CreateTopic(kChangeTopic, kShards).ok());
    ASSERT_TRUE(kafka_->CreateTopic(kClusterTopic, 1).ok());
  }

  // The Orders table in the cluster catalog, as a CreateTable through any
  // member would put it: restores, copies and state loads skip the records
  // of tables the catalog does not hold (deleted ones).
  void CreateOrdersTable() {
    ProduceTo(kClusterTopic, 0, "table/Orders", EncodeTable(TableRecord{true, "setup", "test", 1}));
  }

  void TearDown() override {
    for (auto& m : members_) {
      if (m->cluster) m->cluster->Stop();
    }
    members_.clear();
    if (producer_) rd_kafka_destroy(producer_);
  }

  // Starts the members concurrently, so that they join in one round.
  // `prepare` (may be null) sets up each new member's recorder first.
  void StartMembers(std::vector<std::string> ids,
                    const std::function<void(Member*)>& prepare = nullptr) {
    std::vector<Member*> started;
    for (const auto& id : ids) {
      members_.push_back(std::make_unique<Member>());
      members_.back()->id = id;
      if (prepare) prepare(members_.back().get());
      started.push_back(members_.back().get());
    }
    std::vector<std::thread> threads;
    std::vector<Status> results(started.size());
    for (size_t i = 0; i < started.size(); i++) {
      threads.emplace_back([&, i] {
        Member* m = started[i];
        auto c = Cluster::Start(options_, kopts_, kChangeTopic, m->id, "tcp://" + m->id + ":7400",
                                m->rec.Hooks(), kafka_.get());
        if (c.ok())
          m->cluster = std::move(*c);
        else
          results[i] = c.status();
      });
    }
    for (auto& t : threads) t.join();
    for (const auto& s : results) ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::vector<Member*> Running() {
    std::vector<Member*> out;
    for (auto& m : members_) {
      if (m->cluster) out.push_back(m.get());
    }
    return out;
  }

  // Every shard served by exactly one running member, and every running
  // member routes every shard to it.
  bool Stable() {
    auto running = Running();
    std::map<int32_t, std::string> owner;
    for (Member* m : running) {
      for (int32_t s : m->cluster->Stats().serving) {
        if (!owner.emplace(s, m->id).second) return false;  // overlap
      }
    }
    if (owner.size() != kShards) return false;
    for (Member* m : running) {
      auto routes = m->cluster->Routes();
      if (routes.size() != kShards) return false;
      for (const Route& r : routes) {
        if (r.member != owner[r.shard]) return false;
        const bool local = r.member == m->id;
        if (r.kind != (local ? Route::Kind::kLocal : Route::Kind::kRemote)) return false;
        if (!local && r.endpoint != "tcp://" + r.member + ":7400") return false;
      }
      if (m->cluster->Stats().owned != m->cluster->Stats().serving) return false;
    }
    return true;
  }

  // Members a and b with cluster.standby_replicas: 1, stable: each keeps
  // copies of the other's shards. Returns a's shards (never empty).
  std::vector<int32_t> StartTwoWithStandbyCopies() {
    options_.standby_replicas = 1;
    StartMembers({"a", "b"});
    if (::testing::Test::HasFatalFailure()) return {};
    [&] { ASSERT_TRUE(Eventually([&] { return Stable(); }, 60s)) << Describe(); }();
    auto shards = members_[0]->cluster->Stats().serving;
    [&] { ASSERT_FALSE(shards.empty()) << Describe(); }();
    return shards;
  }

  std::string Describe() {
    std::string out;
    for (Member* m : Running()) out += m->cluster->StatusJson() + "\n";
    return out;
  }

  Status Fence(Cluster* c, int32_t shard = -1, uint64_t epoch = 0) {
    auto p = std::make_shared<std::promise<Status>>();
    auto f = p->get_future();
    c->CheckFence([p](Status s) { p->set_value(std::move(s)); }, shard, epoch);
    if (f.wait_for(30s) != std::future_status::ready)
      return Status(Code::kInternal, "no fence answer in 30 s");
    return f.get();
  }

  // Produces straight to a shard's partition, as an old owner's publisher would.
  void Produce(int32_t shard, const std::string& key, const std::string& value,
               const char* header = nullptr, const std::string& header_value = "") {
    ProduceTo(kChangeTopic, shard, key, value, header, header_value);
  }

  void ProduceTo(const std::string& topic, int32_t partition, const std::string& key,
                 const std::string& value, const char* header = nullptr,
                 const std::string& header_value = "") {
    if (producer_ == nullptr) {
      char err[256];
      rd_kafka_conf_t* conf = rd_kafka_conf_new();
      ASSERT_EQ(rd_kafka_conf_set(conf, "bootstrap.servers", kafka_->bootstraps().c_str(), err,
                                  sizeof err),
                RD_KAFKA_CONF_OK);
      producer_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
      ASSERT_NE(producer_, nullptr) << err;
    }
    rd_kafka_headers_t* h = nullptr;
    if (header) {
      h = rd_kafka_headers_new(1);
      rd_kafka_header_add(h, header, -1, header_value.data(), header_value.size());
    }
    ASSERT_EQ(rd_kafka_producev(
                  producer_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
                  RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_KEY(key.data(), key.size()),
                  RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                  RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    ASSERT_EQ(rd_kafka_flush(producer_, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
  }

  // `json` as a run of chunk messages of at most `chunk` bytes, as the publisher sends a large
  // event. With `table_incarnation` (not 0) every chunk has the st-ti header, as the publisher's.
  void ProduceChunked(int32_t shard, const std::string& key, const std::string& json, uint64_t lsn,
                      size_t chunk, uint64_t table_incarnation = 0) {
    const auto pieces = events::SplitEvent(json, chunk);
    ASSERT_GT(pieces.size(), 1u);
    for (size_t i = 0; i < pieces.size(); i++) {
      rd_kafka_headers_t* h = rd_kafka_headers_new(4);
      const std::string l = std::to_string(lsn), c = events::FormatChunkHeader(i, pieces.size()),
                        z = std::to_string(json.size()), ti = std::to_string(table_incarnation);
      rd_kafka_header_add(h, events::kLsnHeader, -1, l.data(), l.size());
      rd_kafka_header_add(h, events::kChunkHeader, -1, c.data(), c.size());
      rd_kafka_header_add(h, events::kSizeHeader, -1, z.data(), z.size());
      if (table_incarnation != 0)
        rd_kafka_header_add(h, events::kTableIncarnationHeader, -1, ti.data(), ti.size());
      ASSERT_EQ(
          rd_kafka_producev(producer_, RD_KAFKA_V_TOPIC(kChangeTopic.c_str()),
                            RD_KAFKA_V_PARTITION(shard), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_KEY(key.data(), key.size()),
                            RD_KAFKA_V_VALUE(const_cast<char*>(pieces[i].data()), pieces[i].size()),
                            RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END),
          RD_KAFKA_RESP_ERR_NO_ERROR);
    }
    ASSERT_EQ(rd_kafka_flush(producer_, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
  }

  // A one-operation change record on Orders/<pk>, with `epoch` in its JSON.
  // Returns the shard it belongs to.
  int32_t ProduceRecord(const std::string& pk, uint64_t lsn, uint64_t epoch, size_t chunk = 0) {
    ChangeRecord r;
    r.lsn = lsn;
    r.table = "Orders";
    r.table_id = 1;
    r.partition_key = pk;
    r.epoch = epoch;
    ChangeOp op;
    op.row_key = "r" + std::to_string(lsn);
    op.kind = OpKind::kDelete;
    op.version = lsn;
    r.ops.push_back(op);
    std::string json = events::EncodeEvent(r, "old-owner");
    // Until events/ encode the epoch, write it in by hand (DecodeEvent skips
    // keys it does not know).
    if (json.find("\"epoch\"") == std::string::npos)
      json.insert(json.find(',') + 1, "\"epoch\":" + std::to_string(epoch) + ",");
    const std::string key = "Orders/" + pk;
    const int32_t shard = kafka::KafkaPartitionFor(key, kShards);
    if (chunk > 0)
      ProduceChunked(shard, key, json, lsn, chunk);
    else
      Produce(shard, key, json);
    epoch_decoded_ = [&] {
      events::Event e;
      return events::DecodeEvent(json, &e).ok() && e.record.epoch == epoch;
    }();
    return shard;
  }

  // An insert (or, with `remove`, a delete) of Orders/<pk>/<rk> at version
  // `lsn` and `epoch`, as an owner's publisher writes it (stamped with
  // `table_incarnation` in st-ti when not 0). Returns the shard.
  int32_t ProduceEntity(const std::string& pk, const std::string& rk, uint64_t lsn, uint64_t epoch,
                        bool remove, const std::string& value = "v",
                        const std::string& table = "Orders", uint64_t table_incarnation = 0,
                        size_t chunk = 0) {
    ChangeRecord r;
    r.lsn = lsn;
    r.table = table;
    r.table_id = 1;
    r.partition_key = pk;
    r.epoch = epoch;
    r.commit_time = kUnixEpochTicks + std::chrono::duration_cast<std::chrono::microseconds>(
                                          std::chrono::system_clock::now().time_since_epoch())
                                              .count() *
                                          10;
    ChangeOp op;
    op.row_key = rk;
    op.kind = remove ? OpKind::kDelete : OpKind::kInsertOrReplace;
    op.version = lsn;
    op.etag = "W/\"" + std::to_string(lsn) + "\"";
    if (!remove) {
      Entity e;
      e.partition_key = pk;
      e.row_key = rk;
      e.timestamp = kUnixEpochTicks;
      e.etag = op.etag;
      e.Set("Value", Value::String(value));
      op.after = e;
    }
    r.ops.push_back(op);
    const std::string key = table + "/" + pk;
    const int32_t shard = kafka::KafkaPartitionFor(key, kShards);
    if (chunk > 0) {
      ProduceChunked(shard, key, events::EncodeEvent(r, "owner"), lsn, chunk, table_incarnation);
    } else if (table_incarnation != 0) {
      Produce(shard, key, events::EncodeEvent(r, "owner"), events::kTableIncarnationHeader,
              std::to_string(table_incarnation));
    } else {
      Produce(shard, key, events::EncodeEvent(r, "owner"));
    }
    return shard;
  }

  // `copied`: then a second hand-over, from b to a new member c, through
  // b's copy of a's projection (needs `state_topic`).
  void RecreatedTableCase(bool state_topic, bool copied = false);

  // Partition keys of `shard`, "<prefix>0", "<prefix>1", ...
  std::vector<std::string> KeysOf(int32_t shard, int n, const std::string& prefix) {
    std::vector<std::string> out;
    for (int i = 0; static_cast<int>(out.size()) < n; i++) {
      if (kafka::KafkaPartitionFor("Orders/" + prefix + std::to_string(i), kShards) == shard) {
        out.push_back(prefix + std::to_string(i));
      }
    }
    return out;
  }

  // True when `m` knows a state mark of every shard in `shards` that covers
  // its partition's every record, and (with `window_passed`) whose replay
  // point is right after it: nothing left in the retry window.
  bool MarksCover(Member* m, const std::vector<int32_t>& shards, bool window_passed) {
    const auto s = m->cluster->Stats();
    for (int32_t shard : shards) {
      auto it = s.state_marks.find(shard);
      if (it == s.state_marks.end() || it->second < EndOffset(shard) - 1) return false;
      if (window_passed && s.state_resume.at(shard) != it->second + 1) return false;
    }
    return true;
  }

  // Stops `from`'s cluster (its shards go to `to`) and waits until `to`
  // serves every shard of a stable cluster.
  ::testing::AssertionResult HandOver(Member* from, Member* to) {
    from->cluster->Stop();
    from->cluster.reset();
    if (Eventually([&] { return to->cluster->Stats().serving.size() == kShards && Stable(); },
                   60s)) {
      return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure() << "no hand-over within 60 s\n" << Describe();
  }

  std::vector<int32_t> AllShards() {
    std::vector<int32_t> out;
    for (int32_t s = 0; s < kShards; s++) out.push_back(s);
    return out;
  }

  // The change topic's end offset of `shard`.
  int64_t EndOffset(int32_t shard) {
    int64_t low = 0, high = 0;
    EXPECT_EQ(rd_kafka_query_watermark_offsets(producer_, kChangeTopic.c_str(), shard, &low, &high,
                                               10000),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    return high;
  }

  std::unique_ptr<kafka::EmbeddedKafka> kafka_;
  ClusterOptions options_;
  changestream::KafkaOptions kopts_;
  std::vector<std::unique_ptr<Member>> members_;
  rd_kafka_t* producer_ = nullptr;
  bool epoch_decoded_ = false;
};

}  // namespace
}  // namespace sidetable::cluster
