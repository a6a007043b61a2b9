#include "sidecar/cluster/records.h"

#include <simdjson.h>

#include <charconv>
#include <cstdio>

#include "protocol/curve_keys.h"

namespace sidetable::cluster {
namespace {

Status Bad(std::string_view what, std::string_view json) {
  return Status(Code::kInvalidInput, std::string(what) + ": " + std::string(json.substr(0, 200)));
}

// Parses `json` into an object; one parser per thread.
Status Parse(std::string_view json, simdjson::dom::object* out) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json.data(), json.size()).get(doc) != simdjson::SUCCESS) return Bad("not JSON", json);
  if (doc.get_object().get(*out) != simdjson::SUCCESS) return Bad("not a JSON object", json);
  return Status::OK();
}

Status GetString(const simdjson::dom::object& o, const char* key, std::string* out, std::string_view json) {
  std::string_view v;
  if (o[key].get_string().get(v) != simdjson::SUCCESS) return Bad(std::string("no string \"") + key + "\"", json);
  *out = std::string(v);
  return Status::OK();
}

}  // namespace

std::string JsonString(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string EncodeClaimEvent(const std::string& source, uint64_t epoch, int32_t shard,
                             const std::string& service) {
  return "{\"schema\":1,\"kind\":\"ShardClaimed\",\"source\":" + JsonString(source) +
         ",\"epoch\":" + std::to_string(epoch) + ",\"shard\":" + std::to_string(shard) +
         (service.empty() ? "" : ",\"service\":" + JsonString(service)) + "}";
}

std::string ClaimKey(int32_t shard) { return "__shard_claim/" + std::to_string(shard); }

Status DecodeClaim(std::string_view header, std::string_view json, ChangeRecord* out) {
  uint64_t epoch = 0;
  auto [end, ec] = std::from_chars(header.data(), header.data() + header.size(), epoch);
  if (header.empty() || ec != std::errc() || end != header.data() + header.size()) {
    return Bad("claim header st-claim is not an epoch", header);
  }
  simdjson::dom::object o;
  ST_RETURN_IF_ERROR(Parse(json, &o));
  uint64_t value_epoch = 0;
  int64_t shard = -1;
  std::string_view kind;
  if (o["kind"].get_string().get(kind) != simdjson::SUCCESS || kind != "ShardClaimed" ||
      o["epoch"].get_uint64().get(value_epoch) != simdjson::SUCCESS ||
      o["shard"].get_int64().get(shard) != simdjson::SUCCESS || shard < 0) {
    return Bad("not a ShardClaimed event", json);
  }
  if (value_epoch != epoch) return Bad("claim header and value disagree on the epoch", json);
  *out = ChangeRecord();
  out->kind = ChangeKind::kShardClaimed;
  out->epoch = epoch;
  out->shard = static_cast<int32_t>(shard);
  std::string_view source;
  if (o["source"].get_string().get(source) == simdjson::SUCCESS) out->caller = std::string(source);
  std::string_view service;
  if (o["service"].get_string().get(service) == simdjson::SUCCESS)
    out->service = std::string(service);
  return Status::OK();
}

std::string EncodeMember(const MemberRecord& r) {
  std::string out = "{\"endpoint\":" + JsonString(r.endpoint) + ",\"started\":" + std::to_string(r.started_ms);
  if (!r.service.empty()) out += ",\"service\":" + JsonString(r.service);
  if (!r.curve_public_key.empty()) out += ",\"curveKey\":" + JsonString(r.curve_public_key);
  if (!r.instance.empty()) out += ",\"instance\":" + JsonString(r.instance);
  return out + "}";
}

Status DecodeMember(std::string_view json, MemberRecord* out) {
  simdjson::dom::object o;
  ST_RETURN_IF_ERROR(Parse(json, &o));
  MemberRecord r;
  ST_RETURN_IF_ERROR(GetString(o, "endpoint", &r.endpoint, json));
  if (o["started"].get_int64().get(r.started_ms) != simdjson::SUCCESS) r.started_ms = 0;
  GetString(o, "service", &r.service, json).IgnoreError();  // absent before it
  simdjson::dom::element key;
  if (o["curveKey"].get(key) == simdjson::SUCCESS) {
    std::string_view z85;
    if (key.get_string().get(z85) != simdjson::SUCCESS || !curve::IsZ85Key(z85)) {
      return Bad("curveKey is not a Z85 public key", json);
    }
    r.curve_public_key = std::string(z85);
  }
  GetString(o, "instance", &r.instance, json).IgnoreError();  // absent: a sidecar before it
  *out = std::move(r);
  return Status::OK();
}

std::string EncodeOwner(const OwnerRecord& r) {
  std::string out = "{\"member\":" + JsonString(r.member) +
                    ",\"endpoint\":" + JsonString(r.endpoint) +
                    ",\"epoch\":" + std::to_string(r.epoch);
  if (r.claim_offset >= 0) out += ",\"claimOffset\":" + std::to_string(r.claim_offset);
  return out + "}";
}

Status DecodeOwner(std::string_view json, OwnerRecord* out) {
  simdjson::dom::object o;
  ST_RETURN_IF_ERROR(Parse(json, &o));
  ST_RETURN_IF_ERROR(GetString(o, "member", &out->member, json));
  ST_RETURN_IF_ERROR(GetString(o, "endpoint", &out->endpoint, json));
  if (o["epoch"].get_uint64().get(out->epoch) != simdjson::SUCCESS) return Bad("no epoch", json);
  if (o["claimOffset"].get_int64().get(out->claim_offset) != simdjson::SUCCESS)
    out->claim_offset = -1;
  return Status::OK();
}

std::string EncodeTable(const TableRecord& r) {
  return std::string("{\"created\":") + (r.created ? "true" : "false") + ",\"request\":" + JsonString(r.request) +
         ",\"caller\":" + JsonString(r.caller) + ",\"time\":" + std::to_string(r.time_ms) + "}";
}

Status DecodeTable(std::string_view json, TableRecord* out) {
  simdjson::dom::object o;
  ST_RETURN_IF_ERROR(Parse(json, &o));
  if (o["created"].get_bool().get(out->created) != simdjson::SUCCESS) return Bad("no created", json);
  ST_RETURN_IF_ERROR(GetString(o, "request", &out->request, json));
  GetString(o, "caller", &out->caller, json).IgnoreError();
  if (o["time"].get_int64().get(out->time_ms) != simdjson::SUCCESS) out->time_ms = 0;
  return Status::OK();
}

}  // namespace sidetable::cluster
