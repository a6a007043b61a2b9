// The records of the state topic (docs/scale-out.md, "Bounded restore: the
// state topic"): a compacted projection of the change topic, one record per
// live entity, written by the owner of each shard, and the mark on the
// cluster topic that says how far a projection reaches.
//
// Every key of the state topic starts with its writer's prefix
// "<epoch>.<incarnation>/": one owner's claim epoch, and a counter of the
// writers that owner started for the shard under that epoch. A restore
// applies only the records of the prefix its mark names, so a replaced
// owner that keeps writing for a while (it does not know yet) cannot
// overwrite the new owner's records: compaction keeps the newest record per
// key, and the keys differ.
//
//   <prefix>begin                  the writer's first record (its offset is
//                                  the mark's `from`)
//   <prefix><table>/<n>:<pk><rk>   an entity: n = the PartitionKey's length
//                                  in bytes; the value is a change event of
//                                  one op (events/event.h) with the after
//                                  image; a delete is a tombstone (no value)
//                                  with header st-v: <version>
//
// Pure: no Kafka types. Thread safety: stateless functions.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "engine/change_record.h"
#include "engine/status.h"

namespace sidetable::cluster {

inline constexpr const char* kStateVersionHeader = "st-v";
// An entity is at most 1 MiB stored; as a JSON event (binary in base64) it
// can pass Kafka's default 1 MB message limit. The state topic and its
// producer allow this much.
inline constexpr int kStateMaxMessageBytes = 8 * 1024 * 1024;

// The settings the state topic is created with (compacted, large enough
// messages); the deploy examples' topic creation must agree
// (tests/deploy_common).
std::map<std::string, std::string> StateTopicConfigs();

struct StateWriterId {
  uint64_t epoch = 0;
  uint32_t incarnation = 0;
  bool operator==(const StateWriterId& o) const { return epoch == o.epoch && incarnation == o.incarnation; }
  bool operator<(const StateWriterId& o) const {
    return epoch != o.epoch ? epoch < o.epoch : incarnation < o.incarnation;
  }
};

std::string StatePrefix(const StateWriterId& w);
std::string StateBeginKey(const StateWriterId& w);
std::string StateEntityKey(const StateWriterId& w, std::string_view table, std::string_view pk, std::string_view rk);

struct StateKey {
  StateWriterId writer;
  bool begin = false;  // the writer's begin record (no entity)
  std::string table, partition_key, row_key;
};
// InvalidInput for a key that is not a state key.
Status DecodeStateKey(std::string_view key, StateKey* out);

// The record ApplyReplicated takes for a state record: the event's
// one-op record for a value; for a tombstone, a delete of the key's entity
// with `version` (so an older row goes and a newer one stays).
Status StateRecordToChange(const StateKey& key, const char* value, size_t size, uint64_t tombstone_version,
                           ChangeRecord* out);

// The mark: cluster topic key "state/<shard>". Everything the change topic
// admitted for the shard up to `offset` (inclusive) is in the state topic's
// partition from offset `from` on, under `writer`'s prefix; `floor` is the
// highest claim epoch read up to `offset`. offset -1: the projection of an
// empty partition.
//
// The projection holds rows, not request-id outcomes (those belong to a
// whole EGT): a reader replays the change topic from `replay_from`, the
// first record committed within the retry window (retries.window_seconds)
// when the mark was written, or offset + 1 when there is none, with the
// fencing floor `replay_floor` there. Replaying records the projection
// already holds changes no row (versions only move forward) and restores
// their outcomes, so a client's retry after a hand-over is answered once.
struct StateMark {
  StateWriterId writer;
  int64_t from = -1;
  int64_t offset = -1;
  uint64_t floor = 0;
  int64_t replay_from = 0;  // <= offset + 1
  uint64_t replay_floor = 0;
  std::string member;
  bool valid() const { return from >= 0; }
  // Where a reader of the change topic resumes after loading the
  // projection, and the fencing floor there.
  int64_t resume_offset() const { return replay_from < offset + 1 ? replay_from : offset + 1; }
  uint64_t resume_floor() const { return replay_from <= offset ? replay_floor : floor; }
};
std::string StateMarkKey(int32_t shard);
std::string EncodeStateMark(const StateMark& m);
Status DecodeStateMark(std::string_view json, StateMark* out);

}  // namespace sidetable::cluster
