// RecordSource: where a replay reads committed changes from.
//
// Two sources, one contract: records come out in LSN order (the sidecar's
// commit order), each exactly once, within a range fixed when the source is
// opened, so a replay is bounded and repeatable.
//
//   change log  the sidecar's own log over the protocol (op 8 ReadChanges):
//               from an LSN to the newest LSN at open (or --to-lsn). Holds as
//               much history as the sidecar's changelog retention keeps.
//   Kafka       the sidecar's change topic (docs/change-events.md): every
//               partition from its beginning, an offset or a time, up to the
//               high watermarks seen at open (or --to-lsn). Partitions are
//               merged by LSN, and a record the publisher sent twice (after a
//               crash, before its watermark was saved) is passed on once.
//               A sidecar's LSNs have no gaps, so an LSN missing from the
//               merged stream is history the topic no longer holds (retention,
//               a replaced cluster): an error, never a silent skip (see
//               KafkaSourceOptions for what is checked).
//
// Position is what a checkpoint stores: resuming from it yields exactly the
// records that an uninterrupted run would have yielded after that point.
//
// Thread safety: a source is used by one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/change_record.h"
#include "engine/status.h"

namespace sidetable::client {
class Client;
}

namespace sidetable::replay {

struct Position {
  // The LSN of the newest record handed out so far (0: none yet).
  uint64_t last_lsn = 0;
  // Kafka only: per partition, the offset of the next message to read.
  std::map<int32_t, int64_t> next_offsets;
  // The end of the range fixed when the first run opened the source, so a
  // resumed run stops where the uninterrupted one would have: the last LSN
  // (change log) or, per partition, the end offset (Kafka). Empty/0: not
  // fixed yet.
  uint64_t end_lsn = 0;
  std::map<int32_t, int64_t> end_offsets;
  // Kafka only, scale-out: per partition, the fencing floor (the highest
  // ShardClaimed epoch read before next_offsets), so a resumed run fences as
  // the uninterrupted one would. Absent: 0.
  std::map<int32_t, uint64_t> floors;
  // Kafka only: the messages skipped because they do not decode, in every
  // run so far, and the LSNs above last_lsn that those messages named, so a
  // resumed run counts them and does not take them for missing history.
  uint64_t undecodable = 0;
  std::set<uint64_t> undecodable_lsns;
};

class RecordSource {
 public:
  virtual ~RecordSource() = default;
  // Appends up to `max` further records, in LSN order, to *out. Sets *end
  // once the range is exhausted (possibly together with the last records).
  // May return fewer than `max` without being at the end.
  virtual Status Next(size_t max, std::vector<ChangeRecord>* out, bool* end) = 0;
  // Hands back the records of a batch the caller has finished with, and
  // clears it: a source may decode later records into their storage (the
  // Kafka source does, which spares it most of its allocations; see
  // docs/performance.md, "Replay and the change log"). Calling
  // batch->clear() instead is always correct, only slower.
  virtual void Recycle(std::vector<ChangeRecord>* batch) { batch->clear(); }
  // Where a resumed run must continue: just after the records returned.
  virtual Position position() const = 0;
  // Records (change log) or messages (Kafka) still to read in the range,
  // for progress and ETA; nullopt when unknown.
  virtual std::optional<uint64_t> remaining() const = 0;
  // The oldest LSN the source could still deliver when opened: history
  // below it is gone (trimmed log, Kafka retention). 0 when unknown, or when
  // the start was chosen by Kafka offset or time.
  virtual uint64_t first_available_lsn() const = 0;
  // The LSN from which every record the source carries is known to be
  // there, for a fresh run: a record below it may be gone. A point-in-time
  // rebuild needs every record after its table's creation, and on a topic
  // of one table (no LSN check) this is the only way to know: retention
  // removes a partition's older messages on its own, so the creation can
  // be on one partition while another lost the changes after it.
  // kHistoryLossUnknown: a partition lost messages and holds no whole
  // record, so which LSNs it lost is unknown. 0 or 1: nothing known lost.
  static constexpr uint64_t kHistoryLossUnknown = UINT64_MAX;
  virtual uint64_t whole_from_lsn() const { return first_available_lsn(); }
  // The last LSN of the range (the stop point fixed at open); 0 when unknown.
  virtual uint64_t end_lsn() const = 0;
  // "change log of tcp://127.0.0.1:5555" / "kafka topic T at B" (messages).
  virtual std::string Describe() const = 0;
  // Scale-out (docs/scale-out.md): records skipped in this run because a
  // newer owner had claimed their shard (Kafka only; the change log holds
  // one sidecar's own records, never fenced).
  virtual uint64_t fenced() const { return 0; }
  // Kafka: messages skipped because they do not decode (each reported to
  // KafkaSourceOptions::on_undecodable), in this and the resumed runs.
  virtual uint64_t undecodable() const { return 0; }
  // Where the range fixed at open starts later than asked, one line each,
  // for the caller to tell its user (Kafka: a start offset a partition no
  // longer holds, raised to the oldest it does). Empty otherwise.
  virtual std::vector<std::string> start_notes() const { return {}; }
};

struct ChangeLogSourceOptions {
  // The first LSN to read; 0 = the oldest the log still holds. A from_lsn
  // below that fails with ResourceNotFound (history is gone, not skipped).
  uint64_t from_lsn = 0;
  // The last LSN to read; 0 = the sidecar's newest LSN when the source opens.
  uint64_t to_lsn = 0;
  uint32_t page_records = 1000;
  uint64_t page_bytes = 4 << 20;
  // Pages in the change log's own encoding (Client::ReadChanges); false:
  // MessagePack records, as before the option.
  bool raw_pages = true;
};

// `client` is not owned and must outlive the source. With `resume`, reading
// continues after resume->last_lsn (the options' from_lsn is ignored) up to
// resume->end_lsn when set.
Result<std::unique_ptr<RecordSource>> OpenChangeLogSource(client::Client* client,
                                                          const ChangeLogSourceOptions& options,
                                                          const Position* resume = nullptr);

struct KafkaSourceOptions {
  std::string bootstrap;  // host:port list
  std::string topic;      // sidetable.<sidecar-id>.changes
  enum class Start : uint8_t { kBeginning, kOffset, kTime };
  Start start = Start::kBeginning;
  // kOffset: the first offset read on every partition; on a partition that
  // no longer holds it (retention), its oldest offset (start_notes() says so).
  int64_t offset = 0;
  int64_t time_ms = 0;  // kTime: Unix milliseconds; the first message at or after it
  // kBeginning: the first LSN to pass on (records below it are dropped); 0 =
  // the oldest LSN from which the topic holds every record.
  uint64_t from_lsn = 0;
  // The last LSN to pass on; 0 = everything below the high watermarks seen
  // at open.
  uint64_t to_lsn = 0;
  // The topic holds every record of one sidecar (its change topic), so an
  // LSN missing from the merged stream is history gone: ResourceNotFound
  // naming it. Checked (docs/replay.md, "History Kafka no longer holds"):
  //   kBeginning  from from_lsn (or the default start) to the end; a
  //               partition whose older messages are gone (low watermark
  //               > 0) and whose first record held is above from_lsn fails
  //               at open
  //   kTime       from the first record passed on; a partition whose older
  //               messages are gone and whose first record held is not
  //               older than time_ms fails at open (they may have been newer)
  //   kOffset     nothing: the offsets skip records on purpose
  // Records of a scale-out service (any epoch > 0 or claim seen) are not
  // checked: owners' LSNs interleave with gaps. false: a topic of one table
  // (kafka.topic with {table}), whose LSNs have gaps by design: nothing is
  // checked, but a fresh run from the beginning still finds what retention
  // took (RecordSource::whole_from_lsn()).
  bool contiguous = true;
  // Extra librdkafka properties (security.protocol, sasl.*, ...).
  std::map<std::string, std::string> properties;
  // Bound on waiting for metadata, watermarks and each fetch.
  int timeout_ms = 15000;
  // Told of each message that does not decode ("partition P offset O: why"),
  // which is then skipped and counted: a message is no record (a worker
  // dead-letters it), but an audit must not hide it.
  std::function<void(const std::string&)> on_undecodable;
};

// With `resume`, every partition continues at resume->next_offsets (the
// options' start is ignored) up to resume->end_offsets when set, and records
// at or below resume->last_lsn are skipped.
Result<std::unique_ptr<RecordSource>> OpenKafkaSource(const KafkaSourceOptions& options,
                                                      const Position* resume = nullptr);

}  // namespace sidetable::replay
