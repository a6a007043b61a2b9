// Stored access policies on the wire (SetTablePolicies' `policies` field,
// GetTablePolicies' reply): [{"id", "start"?, "expiry"?, "sp"?}], times as
// the tokens write them ("2026-12-01T20:32:41Z"), permissions as letters.
// The sidecar stores a table's policies in this encoding too.
#include "protocol/wire.h"
#include "protocol/wire_codec.h"

namespace sidetable::wire {
namespace {

using codec::Invalid;

Status ReadTime(msgpack::Reader& r, std::string_view key, std::optional<token::TimePoint>* out) {
  std::string_view s;
  if (!r.Str(&s)) return Invalid("policy '" + std::string(key) + "' must be a string");
  auto t = token::ParseTime(s);
  if (!t.ok()) return Invalid("policy '" + std::string(key) + "': " + t.status().message());
  *out = *t;
  return Status::OK();
}

Status ReadPolicy(msgpack::Reader& r, token::StoredPolicy* p) {
  uint32_t n;
  if (!r.MapHeader(&n)) return Invalid("a policy must be a map");
  bool has_id = false;
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key, s;
    if (!r.Str(&key)) return Invalid("policy field names must be strings");
    if (r.Peek() == msgpack::Kind::kNil) {
      r.Nil();
      continue;
    }
    if (key == "id") {
      if (!r.Str(&s)) return Invalid("policy 'id' must be a string");
      p->id.assign(s);
      has_id = true;
    } else if (key == "start") {
      ST_RETURN_IF_ERROR(ReadTime(r, key, &p->start));
    } else if (key == "expiry") {
      ST_RETURN_IF_ERROR(ReadTime(r, key, &p->expiry));
    } else if (key == "sp") {
      if (!r.Str(&s)) return Invalid("policy 'sp' must be a string of permission letters");
      auto perms = token::ParsePermissions(s);
      if (!perms.ok()) return Invalid("policy 'sp': " + perms.status().message());
      p->permissions = *perms;
    } else if (!r.Skip()) {
      return Invalid("malformed policy field");
    }
  }
  if (!has_id) return Invalid("a policy needs an 'id'");
  return Status::OK();
}

}  // namespace

Status ReadPolicies(msgpack::Reader& r, std::vector<token::StoredPolicy>* out) {
  uint32_t n;
  if (!r.ArrayHeader(&n)) return Invalid("'policies' must be an array");
  // Checked before anything is allocated: the count is untrusted.
  if (n > token::kMaxPoliciesPerTable) {
    return Invalid("a table has at most 5 stored access policies, got " + std::to_string(n));
  }
  out->assign(n, token::StoredPolicy{});
  for (uint32_t i = 0; i < n; i++) ST_RETURN_IF_ERROR(ReadPolicy(r, &(*out)[i]));
  return token::ValidatePolicies(*out);
}

void WritePolicies(msgpack::Writer& w, const std::vector<token::StoredPolicy>& policies) {
  w.ArrayHeader(static_cast<uint32_t>(policies.size()));
  for (const auto& p : policies) {
    w.MapHeader(1 + p.start.has_value() + p.expiry.has_value() + p.permissions.has_value());
    w.Str("id");
    w.Str(p.id);
    if (p.start) {
      w.Str("start");
      w.Str(token::FormatTime(*p.start));
    }
    if (p.expiry) {
      w.Str("expiry");
      w.Str(token::FormatTime(*p.expiry));
    }
    if (p.permissions) {
      w.Str("sp");
      w.Str(token::PermissionString(*p.permissions));
    }
  }
}

void EncodePolicies(const std::vector<token::StoredPolicy>& policies, std::string* out) {
  msgpack::Writer w(out);
  w.MapHeader(1);
  w.Str("policies");
  WritePolicies(w, policies);
}

Status DecodePolicies(std::string_view body, std::vector<token::StoredPolicy>* policies) {
  msgpack::Reader r(body);
  uint32_t n;
  if (!r.MapHeader(&n)) return Status(Code::kInternal, "malformed policies: body is not a map");
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key;
    if (!r.Str(&key)) return Status(Code::kInternal, "malformed policies: field name");
    if (key == "policies") {
      Status s = ReadPolicies(r, policies);
      if (!s.ok()) return Status(Code::kInternal, "malformed policies: " + s.message());
    } else if (!r.Skip()) {
      return Status(Code::kInternal, "malformed policies: field value");
    }
  }
  return Status::OK();
}

}  // namespace sidetable::wire
