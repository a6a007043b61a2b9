// The Kafka source: the sidecar's change topic, partitions merged by LSN.
//
// One sidecar produces the topic in commit order, so every partition is
// LSN-ascending (apart from resent suffixes, dropped per partition). The
// global LSN order is then a k-way merge on the partitions' head records:
// the smallest head goes out next, which needs a head from every partition
// not yet at its end offset (kafka_partition.h). The range is fixed at open:
// the high watermarks then.
//
// Those LSNs have no gaps either, so the merge also proves the topic still
// holds the range whole: an LSN missing between two records, or before the
// first one asked for, is history gone (retention, a replaced cluster), and
// the source fails naming it instead of skipping it (source.h says which
// starts are checked; docs/replay.md).
#include <algorithm>
#include <limits>
#include <utility>

#include "tools/replay/kafka_consumer.h"
#include "tools/replay/kafka_partition.h"
#include "tools/replay/source.h"

namespace sidetable::replay {
namespace {

using kafka::Clock;
using kafka::ConsumerContext;
using kafka::PartitionReader;

class KafkaSource final : public RecordSource {
 public:
  KafkaSource(const KafkaSourceOptions& options, rd_kafka_t* rk, uint64_t last_lsn)
      : options_(options),
        last_lsn_(last_lsn),
        checking_(options.contiguous && options.start != KafkaSourceOptions::Start::kOffset) {
    ctx_.rk = rk;
    ctx_.topic = options.topic;
    ctx_.timeout_ms = std::max(options.timeout_ms, 1);
    ctx_.on_undecodable = options.on_undecodable;
  }
  ~KafkaSource() override {
    readers_.clear();  // messages and queues go before the handle
    // Nothing to commit and no group to leave: skip consumer_close().
    if (ctx_.rk) rd_kafka_destroy_flags(ctx_.rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
  }

  // Fixes the range and assigns every partition that has something in it.
  Status Open(const Position* resume, Clock::time_point deadline);

  Status Next(size_t max, std::vector<ChangeRecord>* out, bool* end) override {
    *end = false;
    if (!pending_.ok()) return std::exchange(pending_, Status::OK());
    for (size_t n = 0; n < max && !finished_;) {
      // Linear over the partitions: a dozen or so; a heap would not pay.
      PartitionReader* next = nullptr;
      for (auto& r : readers_) {
        if (Status s = r->Fill(); !s.ok()) {
          s = Status(s.code(), Describe() + ": " + s.message());
          if (n == 0) return s;
          // The records already in *out are delivered (the position is past
          // them); the error comes with the next call.
          pending_ = std::move(s);
          return Status::OK();
        }
        if (!r->exhausted() && (next == nullptr || kafka::StampedOrder(r->head()) < kafka::StampedOrder(next->head()))) {
          next = r.get();
        }
      }
      if (next == nullptr) {
        finished_ = true;
        break;
      }
      const uint64_t lsn = next->head().lsn;
      // Outside a cluster one sidecar's LSNs order every partition. In one
      // (epoch > 0) each shard has its own owners' LSNs: no event is on two
      // partitions, and LSNs of different shards do not compare.
      if (next->head().epoch == 0 && lsn <= last_lsn_) {  // the same event on two partitions: passed on once
        next->DropHead();
        continue;
      }
      if (Status gap = CheckNoGap(*next); !gap.ok()) {
        if (n == 0) return gap;
        pending_ = std::move(gap);
        return Status::OK();
      }
      if (options_.to_lsn != 0 && lsn > options_.to_lsn) {
        finished_ = true;
        break;
      }
      const bool clustered = next->head().epoch != 0;
      out->push_back(next->TakeHead());
      if (!clustered) {
        last_lsn_ = lsn;
        anchored_ = true;
      }
      n++;
      // LSNs have no gaps: nothing can come between this one and the bound.
      if (lsn == options_.to_lsn) finished_ = true;
    }
    *end = finished_;
    return Status::OK();
  }

  void Recycle(std::vector<ChangeRecord>* batch) override {
    for (ChangeRecord& r : *batch) ctx_.Recycle(std::move(r));
    batch->clear();
  }

  Position position() const override {
    Position p;
    p.last_lsn = last_lsn_;
    for (const auto& r : readers_) {
      p.next_offsets[r->partition()] = r->position();
      p.end_offsets[r->partition()] = r->end();
      if (r->floor() > 0) p.floors[r->partition()] = r->floor();
    }
    p.undecodable = undecodable();
    for (auto it = ctx_.undecodable_lsns.upper_bound(last_lsn_); it != ctx_.undecodable_lsns.end();
         ++it) {
      p.undecodable_lsns.insert(*it);
    }
    return p;
  }
  uint64_t undecodable() const override { return undecodable_before_ + ctx_.undecodable; }
  std::vector<std::string> start_notes() const override { return start_notes_; }
  uint64_t fenced() const override {
    uint64_t n = 0;
    for (const auto& r : readers_) n += r->fenced();
    return n;
  }

  std::optional<uint64_t> remaining() const override {
    if (finished_) return 0;
    uint64_t left = 0;
    for (const auto& r : readers_) {
      left += static_cast<uint64_t>(std::max<int64_t>(r->end() - r->position(), 0));
    }
    return left;
  }
  // Known from the partitions' first records when the source starts from
  // the beginning (see Open); 0 otherwise.
  uint64_t first_available_lsn() const override { return first_available_; }
  uint64_t whole_from_lsn() const override { return std::max(whole_from_, first_available_); }
  uint64_t end_lsn() const override { return options_.to_lsn; }
  std::string Describe() const override {
    return "kafka topic " + options_.topic + " at " + options_.bootstrap;
  }

 private:
  // Where partition `p` starts, within [low, high].
  Result<int64_t> StartOffset(int32_t p, const kafka::Watermarks& w, const Position* resume,
                              const std::vector<int64_t>& by_time) const;
  // Where the LSN check starts (fresh runs): reads every partition's first
  // record, and fails when a partition's lost messages may have held
  // records of the range asked for.
  Status FixStart(const std::vector<int64_t>& lows);
  // A topic of one table (no LSN check), fresh run from the beginning:
  // where the partitions that lost older messages start (whole_from_).
  Status NoteLoss(const std::vector<int64_t>& lows);
  // The head the merge is about to pass on must be the next LSN.
  Status CheckNoGap(const PartitionReader& next) const;

  const KafkaSourceOptions options_;
  ConsumerContext ctx_;
  std::vector<std::unique_ptr<PartitionReader>> readers_;
  uint64_t last_lsn_;
  // LSN check: on, and whether last_lsn_ + 1 is the LSN due next (false:
  // the first record passed on starts the check).
  const bool checking_;
  bool anchored_ = false;
  uint64_t first_available_ = 0;
  uint64_t whole_from_ = 0;          // see whole_from_lsn(); set by NoteLoss only
  uint64_t undecodable_before_ = 0;  // counted by the runs before a resume
  bool finished_ = false;
  Status pending_;  // an error met after records were already handed out
  std::vector<std::string> start_notes_;
};

Result<int64_t> KafkaSource::StartOffset(int32_t p, const kafka::Watermarks& w,
                                         const Position* resume,
                                         const std::vector<int64_t>& by_time) const {
  int64_t start = w.low;
  if (resume != nullptr) {
    // A partition missing from the checkpoint was added since: all of it.
    auto it = resume->next_offsets.find(p);
    if (it != resume->next_offsets.end()) start = it->second;
    if (start < w.low) {
      return Status(Code::kResourceNotFound,
                    "partition " + std::to_string(p) + " no longer holds offset " +
                        std::to_string(start) + " (it starts at " + std::to_string(w.low) +
                        "): the rest of that run is gone");
    }
  } else if (options_.start == KafkaSourceOptions::Start::kOffset) {
    start = options_.offset;
  } else if (options_.start == KafkaSourceOptions::Start::kTime && by_time[p] >= 0) {
    start = by_time[p];
  }
  return std::clamp(start, w.low, w.high);
}

Status KafkaSource::Open(const Position* resume, Clock::time_point deadline) {
  ctx_.prefetch_bytes = kafka::ConfigNumber(ctx_.rk, "queued.max.messages.kbytes") * 1024;
  ctx_.prefetch_messages = kafka::ConfigNumber(ctx_.rk, "queued.min.messages");
  auto partitions = kafka::PartitionCount(ctx_.rk, options_.topic, deadline);
  if (!partitions.ok()) return partitions.status();
  std::vector<int64_t> by_time;
  if (options_.start == KafkaSourceOptions::Start::kTime && resume == nullptr) {
    by_time =
        kafka::OffsetsForTime(ctx_.rk, options_.topic, *partitions, options_.time_ms, deadline);
  }
  // The time filter runs on every record, not only where the lookup by time
  // failed: with librdkafka's mock (which answers -1 for every time, so each
  // partition starts at its low watermark) and with a real broker (which
  // starts at the first message *produced* at or after the time, a little
  // after its commit) the output is the same: records committed at or after
  // time_ms. It also applies on resume, for partitions not read before the
  // checkpoint.
  const int64_t min_ticks = options_.start == KafkaSourceOptions::Start::kTime
                                ? kUnixEpochTicks + options_.time_ms * (kTicksPerSecond / 1000)
                                : std::numeric_limits<int64_t>::min();
  auto watermarks = kafka::QueryAllWatermarks(ctx_.rk, options_.topic, *partitions, deadline);
  if (!watermarks.ok()) return watermarks.status();
  rd_kafka_topic_partition_list_t* assign = rd_kafka_topic_partition_list_new(*partitions);
  std::vector<int64_t> lows;  // per reader: its partition's low watermark
  Status s;
  for (int32_t p = 0; p < *partitions && s.ok(); p++) {
    kafka::Watermarks w = (*watermarks)[static_cast<size_t>(p)];
    if (resume != nullptr && !resume->end_offsets.empty()) {
      // The range the first run fixed: a resumed run stops where it would
      // have (a partition added since was not part of it).
      auto it = resume->end_offsets.find(p);
      w.high = it == resume->end_offsets.end() ? w.low : std::min(w.high, it->second);
      w.low = std::min(w.low, w.high);
    }
    auto start = StartOffset(p, w, resume, by_time);
    if (!start.ok()) {
      s = start.status();
      break;
    }
    if (resume == nullptr && options_.start == KafkaSourceOptions::Start::kOffset &&
        options_.offset < w.low) {
      start_notes_.push_back("partition " + std::to_string(p) + " no longer holds offsets before " +
                             std::to_string(w.low) +
                             " (retention): read from there, not from offset " +
                             std::to_string(options_.offset));
    }
    uint64_t floor = 0;
    if (resume != nullptr) {
      auto fl = resume->floors.find(p);
      if (fl != resume->floors.end()) floor = fl->second;
    }
    readers_.push_back(
        std::make_unique<PartitionReader>(&ctx_, p, *start, w.high, last_lsn_, min_ticks, floor));
    lows.push_back(w.low);
    if (*start < w.high && (s = readers_.back()->Attach()).ok()) {
      rd_kafka_topic_partition_list_add(assign, options_.topic.c_str(), p)->offset = *start;
    }
  }
  if (s.ok() && assign->cnt > 0) {
    if (rd_kafka_resp_err_t e = rd_kafka_assign(ctx_.rk, assign); e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      s = Status(Code::kInternal, std::string("assign: ") + rd_kafka_err2str(e));
    }
  }
  rd_kafka_topic_partition_list_destroy(assign);
  if (resume != nullptr) {
    undecodable_before_ = resume->undecodable;
    ctx_.undecodable_lsns = resume->undecodable_lsns;
  }
  if (!s.ok()) return s;
  if (!checking_) {
    const bool fresh_from_start =
        resume == nullptr && options_.start == KafkaSourceOptions::Start::kBeginning;
    return fresh_from_start && !options_.contiguous ? NoteLoss(lows) : s;
  }
  if (resume != nullptr) {
    // The first run fixed the start; everything up to last_lsn is done.
    if (options_.start == KafkaSourceOptions::Start::kBeginning && options_.from_lsn > 0) {
      last_lsn_ = std::max(last_lsn_, options_.from_lsn - 1);
      anchored_ = true;
    }
    anchored_ = anchored_ || last_lsn_ > 0;
    return Status::OK();
  }
  return FixStart(lows);
}

std::string LsnRange(uint64_t from, uint64_t to) {
  return from == to ? "LSN " + std::to_string(from)
                    : "LSNs " + std::to_string(from) + " to " + std::to_string(to);
}

Status KafkaSource::FixStart(const std::vector<int64_t>& lows) {
  for (auto& r : readers_) ST_RETURN_IF_ERROR(r->Fill());
  if (ctx_.clustered) return Status::OK();
  // A partition that lost its older messages (low watermark > 0) holds its
  // share of the LSNs only from its first record on: which LSNs the lost
  // ones had is unknown. So the topic holds every LSN only from the highest
  // such first record.
  uint64_t whole_from = 0, first = 0;
  const PartitionReader* limiting = nullptr;
  int64_t limiting_low = 0;
  const bool time_start = options_.start == KafkaSourceOptions::Start::kTime;
  for (size_t i = 0; i < readers_.size(); i++) {
    const PartitionReader& r = *readers_[i];
    const bool lost_older = r.start() == lows[i] && lows[i] > 0;
    if (time_start && lost_older && r.start() < r.end() && !r.skipped_older()) {
      // What it still holds starts with no record older than the time asked
      // for (or with no whole record at all), so the lost messages may not
      // have been older either.
      const std::string held = r.exhausted() ? std::string("it holds no whole record")
                                             : "the first record it holds (LSN " +
                                                   std::to_string(r.head().lsn) +
                                                   ") is not older than --kafka-time";
      return Status(Code::kResourceNotFound,
                    "partition " + std::to_string(r.partition()) +
                        " no longer holds its messages before offset " + std::to_string(lows[i]) +
                        " (retention), and " + held +
                        ": records committed since then may be among the lost ones");
    }
    if (r.exhausted() || r.head().epoch != 0) continue;
    const uint64_t lsn = r.head().lsn;
    if (first == 0 || lsn < first) first = lsn;
    if (!lost_older) continue;
    if (!time_start && lsn > whole_from) {
      whole_from = lsn;
      limiting = &r;
      limiting_low = lows[i];
    }
  }
  if (options_.start != KafkaSourceOptions::Start::kBeginning) return Status::OK();
  if (options_.from_lsn > 0) {
    if (whole_from > options_.from_lsn) {
      return Status(
          Code::kResourceNotFound,
          "the topic no longer holds every record from LSN " + std::to_string(options_.from_lsn) +
              ": partition " + std::to_string(limiting->partition()) +
              "'s messages before offset " + std::to_string(limiting_low) +
              " are gone (retention), and the first it holds is LSN " + std::to_string(whole_from) +
              "; the topic holds every LSN from " + std::to_string(whole_from) +
              " on (the sidecar's change log may hold older ones)");
    }
    last_lsn_ = options_.from_lsn - 1;
    anchored_ = true;
    first_available_ = std::max(whole_from, first);
    return Status::OK();
  }
  // No start asked for: the oldest from which the topic is whole, as the
  // change log starts at the oldest LSN it holds.
  if (whole_from > 0) {
    last_lsn_ = whole_from - 1;
    anchored_ = true;
  }
  first_available_ = std::max(whole_from, first);
  return Status::OK();
}

Status KafkaSource::NoteLoss(const std::vector<int64_t>& lows) {
  for (auto& r : readers_) ST_RETURN_IF_ERROR(r->Fill());
  if (ctx_.clustered) return Status::OK();  // owners' LSNs do not compare
  // As in FixStart: a partition whose older messages are gone holds this
  // table's records only from its first one on. Not an error here (a
  // replay of the rest is still wanted), but rebuild refuses a state whose
  // table was created before that (point_in_time.h).
  for (size_t i = 0; i < readers_.size(); i++) {
    const PartitionReader& r = *readers_[i];
    if (lows[i] == 0 || r.start() != lows[i]) continue;
    if (r.exhausted()) {
      // Nothing whole left (all of it gone, or only the tail of a chunked
      // event): what it lost ends nobody knows where.
      whole_from_ = kHistoryLossUnknown;
    } else if (r.head().epoch == 0) {
      whole_from_ = std::max(whole_from_, r.head().lsn);
    }
  }
  if (whole_from_ != kHistoryLossUnknown) first_available_ = whole_from_;
  return Status::OK();
}

Status KafkaSource::CheckNoGap(const PartitionReader& next) const {
  const ChangeRecord& r = next.head();
  if (!checking_ || !anchored_ || ctx_.clustered || r.epoch != 0 || r.lsn == last_lsn_ + 1)
    return Status::OK();
  uint64_t due = last_lsn_ + 1;
  // Records that are on the topic but do not decode were reported and
  // counted already (kafka_partition.cc): not history gone.
  while (due < r.lsn && ctx_.undecodable_lsns.count(due)) due++;
  if (due == r.lsn) return Status::OK();
  if (options_.to_lsn != 0 && due > options_.to_lsn) return Status::OK();
  const uint64_t missing_to =
      options_.to_lsn != 0 ? std::min(r.lsn - 1, options_.to_lsn) : r.lsn - 1;
  return Status(
      Code::kResourceNotFound,
      Describe() + ": " + LsnRange(due, missing_to) + (due == missing_to ? " is" : " are") +
          " not on the topic any more (retention, or a replaced Kafka cluster): the next record "
          "it holds is LSN " +
          std::to_string(r.lsn) + " (partition " + std::to_string(next.partition()) + " offset " +
          std::to_string(next.head_offset()) + "); the sidecar's change log may still hold them");
}

}  // namespace

Result<std::unique_ptr<RecordSource>> OpenKafkaSource(const KafkaSourceOptions& options,
                                                      const Position* resume) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(std::max(options.timeout_ms, 1));
  auto rk = kafka::NewConsumer(options.bootstrap, options.properties);
  if (!rk.ok()) return rk.status();
  auto source = std::make_unique<KafkaSource>(options, *rk, resume ? resume->last_lsn : 0);
  if (Status s = source->Open(resume, deadline); !s.ok()) {
    return Status(s.code(), source->Describe() + ": " + s.message());
  }
  return std::unique_ptr<RecordSource>(std::move(source));
}

}  // namespace sidetable::replay
