// The messages the cluster writes (docs/scale-out.md): the ShardClaimed
// claim on a change-topic partition, and the keyed records of the cluster
// topic (member/<id>, owner/<shard>, table/<name>/<request>).
//
// A claim is an ordinary change-topic message whose value is a change event
// of kind "ShardClaimed" (JSON, schema 1) and which carries the header
// `st-claim: <epoch>`. Readers recognise a claim by that header first, so a
// reader whose events::DecodeEvent does not know the kind yet still fences.
// The claim names its member's service ("service", after "shard" so that
// the JSON still starts as workers look for it), so that the cluster's
// readers can tell a claim of another service on their change topic (a
// misconfiguration, docs/scale-out.md) from their own; a claim without it
// (written before) is taken to be the reader's own service's.
//
// Pure: no Kafka types. Thread safety: stateless functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/change_record.h"
#include "engine/status.h"

namespace sidetable::cluster {

inline constexpr const char* kClaimHeader = "st-claim";

// The value of a claim message; its key is ClaimKey(shard).
// `service` "" leaves the field out (as claims before it were written).
std::string EncodeClaimEvent(const std::string& source, uint64_t epoch, int32_t shard,
                             const std::string& service = "");
std::string ClaimKey(int32_t shard);
// A claim from its `st-claim` header value and its JSON value: a record of
// kind kShardClaimed with epoch, shard, caller (the member) and service
// ("" when the claim names none). InvalidInput when malformed or
// when the header and the value disagree on the epoch.
Status DecodeClaim(std::string_view header, std::string_view json, ChangeRecord* out);

// Cluster topic records.

// A member's `member/<id>` record: where the other members reach it and,
// when its listeners require CURVE, the public key a forwarding member must
// expect of it (docs/security.md, "CURVE in a cluster"). The key is left out
// of the JSON when empty, so a member without CURVE writes what sidecars
// before the key wrote, and their records (no key) still decode.
// `service` (left out when empty; records before it have none): the
// member's cluster.service, so that a member of another service configured
// with this cluster topic is refused at start-up.
struct MemberRecord {
  std::string endpoint;
  std::string curve_public_key;  // Z85 (40 characters); "" = plain listeners
  int64_t started_ms = 0;
  // A random id per process start ("" in records of sidecars before it):
  // a member that reads a record of its own member id with another
  // instance knows another process announced that id (a duplicate
  // cluster.member_id, docs/scale-out.md "Failure cases").
  std::string instance;
  std::string service;
};
struct OwnerRecord {
  std::string member;
  std::string endpoint;
  uint64_t epoch = 0;
  // The offset of the owner's claim on the shard's partition (-1: a record
  // written before it had one): every member learns from it that the
  // partition held at least this many records (known_offsets.h).
  int64_t claim_offset = -1;
};
struct TableRecord {
  bool created = true;
  std::string request;  // the asking member's request id (matches the answer)
  std::string caller;
  int64_t time_ms = 0;
};

std::string EncodeMember(const MemberRecord& r);
// InvalidInput without an endpoint, or with a "curveKey" that is not a Z85
// key (a record that cannot be used is refused whole, not half-read).
Status DecodeMember(std::string_view json, MemberRecord* out);
std::string EncodeOwner(const OwnerRecord& r);
Status DecodeOwner(std::string_view json, OwnerRecord* out);
std::string EncodeTable(const TableRecord& r);
Status DecodeTable(std::string_view json, TableRecord* out);

// A JSON string literal (quotes included) for `s`.
std::string JsonString(std::string_view s);

}  // namespace sidetable::cluster
