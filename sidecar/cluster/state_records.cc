#include "sidecar/cluster/state_records.h"

#include <simdjson.h>

#include <charconv>

#include "events/event.h"
#include "sidecar/cluster/records.h"

namespace sidetable::cluster {
namespace {

Status BadStateRecord(std::string_view what, std::string_view text) {
  return Status(Code::kInvalidInput, "state topic: " + std::string(what) + ": " + std::string(text.substr(0, 200)));
}

template <typename T>
bool ParseNumber(std::string_view s, T* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

std::map<std::string, std::string> StateTopicConfigs() {
  return {{"cleanup.policy", "compact"}, {"max.message.bytes", std::to_string(kStateMaxMessageBytes)}};
}

std::string StatePrefix(const StateWriterId& w) {
  return std::to_string(w.epoch) + "." + std::to_string(w.incarnation) + "/";
}

std::string StateBeginKey(const StateWriterId& w) { return StatePrefix(w) + "begin"; }

std::string StateEntityKey(const StateWriterId& w, std::string_view table, std::string_view pk, std::string_view rk) {
  std::string key = StatePrefix(w);
  key.append(table).append("/").append(std::to_string(pk.size())).append(":");
  key.append(pk).append(rk);
  return key;
}

Status DecodeStateKey(std::string_view key, StateKey* out) {
  const size_t dot = key.find('.');
  const size_t slash = key.find('/');
  if (dot == std::string_view::npos || slash == std::string_view::npos || dot > slash) {
    return BadStateRecord("not a state key", key);
  }
  *out = StateKey();
  if (!ParseNumber(key.substr(0, dot), &out->writer.epoch) ||
      !ParseNumber(key.substr(dot + 1, slash - dot - 1), &out->writer.incarnation)) {
    return BadStateRecord("a state key without a writer prefix", key);
  }
  std::string_view rest = key.substr(slash + 1);
  if (rest == "begin") {
    out->begin = true;
    return Status::OK();
  }
  const size_t table_end = rest.find('/');
  if (table_end == std::string_view::npos || table_end == 0)
    return BadStateRecord("a state key without a table", key);
  out->table = std::string(rest.substr(0, table_end));
  rest = rest.substr(table_end + 1);
  const size_t colon = rest.find(':');
  size_t pk_size = 0;
  if (colon == std::string_view::npos || !ParseNumber(rest.substr(0, colon), &pk_size) ||
      pk_size > rest.size() - colon - 1) {
    return BadStateRecord("a state key without a PartitionKey length", key);
  }
  out->partition_key = std::string(rest.substr(colon + 1, pk_size));
  out->row_key = std::string(rest.substr(colon + 1 + pk_size));
  return Status::OK();
}

Status StateRecordToChange(const StateKey& key, const char* value, size_t size, uint64_t tombstone_version,
                           ChangeRecord* out) {
  if (key.begin) return BadStateRecord("a begin record holds no entity", key.table);
  if (value == nullptr) {
    if (tombstone_version == 0) return BadStateRecord("a tombstone without its version", key.table);
    *out = ChangeRecord();
    out->kind = ChangeKind::kEntities;
    out->table = key.table;
    out->partition_key = key.partition_key;
    ChangeOp op;
    op.row_key = key.row_key;
    op.kind = OpKind::kDelete;
    op.version = tombstone_version;
    out->ops.push_back(std::move(op));
    return Status::OK();
  }
  events::Event event;
  ST_RETURN_IF_ERROR(events::DecodeEvent(std::string_view(value, size), &event));
  ChangeRecord& r = event.record;
  if (r.kind != ChangeKind::kEntities || r.ops.size() != 1 || !r.ops[0].after || r.table != key.table ||
      r.partition_key != key.partition_key || r.ops[0].row_key != key.row_key) {
    return BadStateRecord("the value is not the key's entity",
                          key.table + "/" + key.partition_key + "/" + key.row_key);
  }
  // A request id outcome belongs to the whole EGT, never to one entity.
  r.client_request_id.clear();
  *out = std::move(r);
  return Status::OK();
}

std::string StateMarkKey(int32_t shard) { return "state/" + std::to_string(shard); }

std::string EncodeStateMark(const StateMark& m) {
  return "{\"epoch\":" + std::to_string(m.writer.epoch) + ",\"incarnation\":" +
         std::to_string(m.writer.incarnation) + ",\"from\":" + std::to_string(m.from) +
         ",\"offset\":" + std::to_string(m.offset) + ",\"floor\":" + std::to_string(m.floor) +
         ",\"replayFrom\":" + std::to_string(m.replay_from) + ",\"replayFloor\":" + std::to_string(m.replay_floor) +
         ",\"member\":" + JsonString(m.member) + "}";
}

Status DecodeStateMark(std::string_view json, StateMark* out) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::object o;
  if (parser.parse(json.data(), json.size()).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(o) != simdjson::SUCCESS) {
    return BadStateRecord("a mark that is not a JSON object", json);
  }
  StateMark m;
  uint64_t incarnation = 0;
  std::string_view member;
  if (o["epoch"].get_uint64().get(m.writer.epoch) != simdjson::SUCCESS ||
      o["incarnation"].get_uint64().get(incarnation) != simdjson::SUCCESS || incarnation > UINT32_MAX ||
      o["from"].get_int64().get(m.from) != simdjson::SUCCESS || m.from < 0 ||
      o["offset"].get_int64().get(m.offset) != simdjson::SUCCESS || m.offset < -1 ||
      o["floor"].get_uint64().get(m.floor) != simdjson::SUCCESS) {
    return BadStateRecord("a malformed mark", json);
  }
  m.writer.incarnation = static_cast<uint32_t>(incarnation);
  // Optional (absent: nothing to replay before the mark).
  if (o["replayFrom"].get_int64().get(m.replay_from) != simdjson::SUCCESS) m.replay_from = m.offset + 1;
  if (o["replayFloor"].get_uint64().get(m.replay_floor) != simdjson::SUCCESS) m.replay_floor = m.floor;
  if (m.replay_from < 0 || m.replay_from > m.offset + 1)
    return BadStateRecord("a mark replaying from after it", json);
  if (o["member"].get_string().get(member) == simdjson::SUCCESS) m.member = std::string(member);
  *out = std::move(m);
  return Status::OK();
}

}  // namespace sidetable::cluster
