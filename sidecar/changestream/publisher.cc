// The publisher's start-up, admission and stats; the publishing thread is in
// publisher_loop.cc.
#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <map>
#include <tuple>

#include "common/kafka/embedded_kafka.h"
#include "common/kafka/log.h"
#include "common/process.h"
#include "sidecar/changestream/publisher_impl.h"

namespace sidetable::changestream {
namespace {

constexpr const char* kWatermarkKey = "publisher/watermark";

// Every occurrence of `from`, searching on after each replacement: `to` may
// contain `from` (a backup names its topic template with "{table}" for
// {table}, a sidecar id may hold "{sidecar}"), and searching from the start
// again would replace it forever (before session 42, `sidetable-cli backup`
// with a {table} topic never returned and its thread spun).
void Replace(std::string* s, std::string_view from, const std::string& to) {
  for (size_t pos = 0; (pos = s->find(from, pos)) != std::string::npos; pos += to.size()) {
    s->replace(pos, from.size(), to);
  }
}

// A stored value quoted for a message: printable ASCII, the rest as \xNN,
// cut short (it may be any bytes).
std::string Quote(std::string_view v) {
  static const char* hex = "0123456789abcdef";
  std::string out = "'";
  for (size_t i = 0; i < v.size() && i < 40; i++) {
    const auto c = static_cast<unsigned char>(v[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + (v.size() > 40 ? "...'" : "'");
}

}  // namespace

std::string TopicFor(const std::string& topic_template, const std::string& sidecar_id,
                     const std::string& table) {
  std::string t = topic_template;
  Replace(&t, "{sidecar}", sidecar_id);
  Replace(&t, "{table}", table);
  return t;
}

std::string KeyFor(const ChangeRecord& r) { return r.table + "/" + r.partition_key; }

// A start-up error, never an exception: the setting is written only by the
// publisher, as decimal digits, so anything else means a damaged store.
Status Publisher::Impl::ReadWatermark(uint64_t* watermark) {
  auto stored = engine_->GetSetting(kWatermarkKey);
  if (!stored.ok()) {
    return Status(stored.status().code(), std::string("cannot read the publish watermark (setting '") +
                                              kWatermarkKey + "'): " + stored.status().message());
  }
  *watermark = 0;
  if (!stored->has_value()) return Status::OK();
  const std::string& v = **stored;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), *watermark);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size()) {
    return Status(Code::kInvalidInput,
                  std::string("the publish watermark (setting '") + kWatermarkKey + "') is corrupt: " +
                      Quote(v) + " is not an LSN; the change log itself may be intact, but where "
                      "publishing stopped is unknown (docs/operations.md#faults)");
  }
  const uint64_t last = engine_->Stats().last_lsn;
  if (*watermark > last) {
    return Status(Code::kInvalidInput, std::string("the publish watermark (setting '") + kWatermarkKey +
                                           "') is " + v + ", beyond the last LSN " + std::to_string(last) +
                                           ": the store is inconsistent (docs/operations.md#faults)");
  }
  return Status::OK();
}

// Where publishing starts again on a Kafka that starts empty (`why` says
// which), after `watermark`: after `after`, the lowest LSN every derived
// table applied. Trimmed records cannot be sent again; the log keeps what
// retention allows (changelog.max_age_seconds, max_bytes), which does not
// wait for derived tables. A derived table whose worker was stopped longer
// than that lost those changes; the restart used to say only that it
// published again from the log's first LSN, "the oldest change a derived
// table has not applied". 0 is no known watermark (a partition that never
// reported): nothing to name then.
uint64_t Publisher::Impl::RepublishFrom(uint64_t after, uint64_t watermark, std::string_view why) {
  const EngineStats st = engine_->Stats();
  if (after > 0 && after + 1 < st.first_available_lsn) {
    log_->warn(
        "{}: changes {}..{}, which a derived table has not applied, were trimmed from the change "
        "log (changelog.max_age_seconds, changelog.max_bytes) and cannot be published again; "
        "rebuild that table from the change log (sidetable-cli derive, docs/cli.md)",
        why, after + 1, st.first_available_lsn - 1);
  }
  uint64_t from = std::max(after, st.first_available_lsn - 1);
  // What is published again counts in the backlog: bounded to half of
  // kafka.max_backlog_events, so that a derived table left behind long
  // ago cannot have writes refused (ServerBusy) while it goes out.
  const uint64_t most = options_.max_backlog_events / 2;
  if (watermark - from > most) {
    log_->warn(
        "{}: changes {}..{}, which a derived table has not applied, are not published again "
        "(more than half of kafka.max_backlog_events); rebuild that table from the change log "
        "(sidetable-cli derive, docs/cli.md)",
        why, from + 1, watermark - most);
    from = watermark - most;
  }
  log_->info(
      "{}: publishing again from LSN {} (the first change the change log still holds that is not "
      "known to be applied by every derived table; {} was published before)",
      why, from + 1, watermark);
  return from;
}

Status Publisher::Impl::Init(const std::string& bootstrap) {
  uint64_t watermark = 0;
  ST_RETURN_IF_ERROR(ReadWatermark(&watermark));
  const EngineStats st = engine_->Stats();
  if (watermark + 1 < st.first_available_lsn) {
    // Records were trimmed before they were published: only possible if the
    // log was trimmed by hand. Say so loudly and go on from what exists.
    log_->error("change log starts at LSN {} but only {} was published: records {}..{} are lost "
                "to the stream", st.first_available_lsn, watermark, watermark + 1,
                st.first_available_lsn - 1);
    watermark = st.first_available_lsn - 1;
  }
  if (options_.republish_after < watermark) {
    watermark = RepublishFrom(options_.republish_after, watermark, "embedded Kafka starts empty");
  }
  owner_->published_.store(watermark);
  persisted_ = progress_lsn_ = watermark;
  next_lsn_ = watermark + 1;
  progress_at_ = Clock::now();

  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  kafka::SendKafkaLogToOurs(conf);
  auto set = [&](const std::string& k, const std::string& v) -> Status {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
      return Status(Code::kInvalidInput, "kafka." + k + ": " + err);
    }
    return Status::OK();
  };
  Status s;
  for (const auto& [k, v] : std::map<std::string, std::string>{
           {"bootstrap.servers", bootstrap},
           {"enable.idempotence", "true"},  // acks=all, ordered retries, no duplicates per session
           {"acks", "all"},
           {"message.timeout.ms", "0"},  // never give up a record: outages only delay
           {"linger.ms", "2"},
           // librdkafka's default backs off up to 10 s between reconnects;
           // after an outage that delays catching up by seconds.
           {"reconnect.backoff.max.ms", "1000"},
           {"partitioner", "murmur2_random"},  // the Java client's partitioning
           {"compression.type", "lz4"},
           {"queue.buffering.max.messages", "100000"},
           {"client.id", "sidetable-" + sidecar_id_},
           {"log_level", "4"}}) {
    if (!(s = set(k, v)).ok()) {
      rd_kafka_conf_destroy(conf);
      return s;
    }
  }
  for (const auto& [k, v] : options_.properties) {
    if (!(s = set(k, v)).ok()) {
      rd_kafka_conf_destroy(conf);
      return s;
    }
  }
  // A chunk must fit the producer's own message limit, or it would be
  // refused on every attempt.
  char max_msg[32];
  size_t max_msg_size = sizeof max_msg;
  if (rd_kafka_conf_get(conf, "message.max.bytes", max_msg, &max_msg_size) == RD_KAFKA_CONF_OK &&
      options_.chunk_bytes + 4096 > std::strtoull(max_msg, nullptr, 10)) {
    rd_kafka_conf_destroy(conf);
    return Status(Code::kInvalidInput, "kafka.chunk_bytes (" + std::to_string(options_.chunk_bytes) +
                                           ") must be at least 4096 below message.max.bytes (" +
                                           max_msg + ")");
  }
  rd_kafka_conf_set_dr_msg_cb(conf, &Impl::OnDelivery);
  rd_kafka_conf_set_opaque(conf, this);
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk_ == nullptr) return Status(Code::kInvalidInput, std::string("kafka producer: ") + err);
  std::unique_ptr<TailCheck> check;
  if (options_.check_topic_tail && embedded_ == nullptr) {
    // Every LSN up to here is this directory's own; a topic holding more
    // was written by a newer copy of it.
    check = std::make_unique<TailCheck>(TailCheck{engine_->Stats().last_written_lsn, bootstrap,
                                                  options_.properties,
                                                  "sidetable." + sidecar_id_ + ".topic-check"});
  }
  topics_ =
      std::make_unique<TopicSetup>(rk_, embedded_, options_.partitions, options_.replication_factor,
                                   options_.topic_configs, std::move(check));
  return Status::OK();
}

Result<std::unique_ptr<Publisher>> Publisher::Start(Engine* engine, const KafkaOptions& options,
                                                    const std::string& sidecar_id,
                                                    EmbeddedKafka* embedded) {
  std::unique_ptr<Publisher> p(new Publisher());
  p->engine_ = engine;
  p->max_backlog_ = options.max_backlog_events;
  p->bootstrap_ = embedded ? embedded->bootstraps() : options.bootstrap;
  p->impl_ = std::make_unique<Impl>(p.get(), engine, options, sidecar_id, embedded);
  ST_RETURN_IF_ERROR(p->impl_->Init(p->bootstrap_));
  p->impl_->thread_ = common::NamedThread("st-publisher", [impl = p->impl_.get()] { impl->Run(); });
  return p;
}

Publisher::~Publisher() { Stop(); }

void Publisher::Notify() { impl_->Wake(); }

void Publisher::Stop() {
  if (!impl_ || !impl_->thread_.joinable()) return;
  impl_->RequestStop(std::chrono::steady_clock::now() + std::chrono::seconds(3));
  impl_->thread_.join();
}

bool Publisher::Stop(std::chrono::steady_clock::time_point deadline) {
  if (!impl_ || !impl_->thread_.joinable()) return true;
  impl_->RequestStop(deadline);
  if (!impl_->WaitDone(deadline)) return false;
  impl_->thread_.join();
  return true;
}

uint64_t Publisher::backlog_events() const {
  const uint64_t published = published_.load(std::memory_order_acquire);
  // Written, not only durable: in fsync durability a write has given its
  // admission back (FinishWrite) up to one fsync before its record is
  // durable, and would be counted nowhere in between; the bound overshot by
  // the writes waiting for an fsync (BacklogBoundIsExactInFsyncDurability).
  const uint64_t last = engine_->Stats().last_written_lsn;
  return last > published ? last - published : 0;
}

// Why this is exact: admitting_ is changed only by read-modify-writes, so
// of two concurrent writes the one that increments it second sees the first
// either still counted there or (having decremented, so committed) in the
// engine's last written LSN, read after the increment. A write may be counted twice
// for a moment (committed, not yet finished): that errs towards refusing.
bool Publisher::TryAdmitWrite(uint64_t n) {
  const uint64_t running = admitting_.fetch_add(n, std::memory_order_acq_rel);
  if (backlog_events() + running + n > max_backlog_) {
    admitting_.fetch_sub(n, std::memory_order_acq_rel);
    refused_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

PublisherStats Publisher::Stats() const {
  PublisherStats s;
  s.published_lsn = published_.load();
  s.backlog_events = backlog_events();
  s.backlog_bytes = s.backlog_events ? impl_->backlog_bytes_.load() : 0;
  s.events_total = impl_->events_total_.load();
  s.bytes_total = impl_->bytes_total_.load();
  s.delivery_errors = impl_->delivery_errors_.load();
  s.chunked_events_total = impl_->chunked_total_.load();
  s.refused_writes = refused_.load();
  s.backlog_full = s.backlog_events >= max_backlog_;
  std::tie(s.blocked_lsn, s.blocked_reason) = impl_->Blocked();
  return s;
}

}  // namespace sidetable::changestream
