// IssueToken on the wire: the wanted token as a map of the token text
// format's fields (docs/protocol.md, op 15), and the signed token back.
#include <array>

#include "protocol/wire.h"
#include "protocol/wire_codec.h"

namespace sidetable::wire {
namespace {

using codec::Invalid;

// The fields, in the token's order (docs/security.md).
constexpr std::array<std::string_view, kMaxTokenSpecFields> kFields = {
    "tn", "tp", "spk", "srk", "epk", "erk", "sp", "st", "se", "tenant", "caller"};
constexpr std::string_view kPolicyField = "si";

// The longest value each field may hold (the token's limits); a table name
// or prefix is at most 63 characters, allow some slack for the message.
size_t MaxLength(std::string_view key) {
  if (key == "spk" || key == "srk" || key == "epk" || key == "erk") return token::kMaxKeyBoundLength;
  if (key == "caller") return token::kMaxIdentityLength;
  if (key == "tenant" || key == "si") return token::kMaxLabelLength;
  return 255;
}

}  // namespace

Status ReadTokenSpec(msgpack::Reader& r, token::TokenSpec* out) {
  uint32_t n;
  if (!r.MapHeader(&n)) return Invalid("'spec' must be a map of token fields");
  if (n > kMaxTokenSpecFields + 1) {
    return Invalid("'spec' has at most " + std::to_string(kMaxTokenSpecFields + 1) + " fields, got " +
                   std::to_string(n));
  }
  *out = token::TokenSpec{};
  uint32_t seen = 0;  // one bit per field; bit 11 is "si"
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key, value;
    if (!r.Str(&key)) return Invalid("'spec' field names must be strings");
    uint32_t bit = 0;
    if (key == kPolicyField) {
      bit = 1u << kMaxTokenSpecFields;
    } else {
      for (size_t i = 0; i < kFields.size(); i++) {
        if (key == kFields[i]) bit = 1u << i;
      }
    }
    // Quoted at most 16 bytes: the name came from the client.
    if (bit == 0) return Invalid("'spec': unknown token field '" + std::string(key.substr(0, 16)) + "'");
    if (seen & bit) return Invalid("'spec': field '" + std::string(key) + "' given twice");
    seen |= bit;
    if (r.Peek() == msgpack::Kind::kNil) {
      r.Nil();
      continue;
    }
    if (!r.Str(&value)) return Invalid("'spec' field '" + std::string(key) + "' must be a string");
    if (value.size() > MaxLength(key)) {
      return Invalid("'spec' field '" + std::string(key) + "' is longer than " + std::to_string(MaxLength(key)) +
                     " bytes");
    }
    const std::string v(value);
    if (key == "tn" || key == "tp") {
      out->table = v;
      out->table_is_prefix = key == "tp";
    } else if (key == "spk") {
      out->start_pk = v;
    } else if (key == "srk") {
      out->start_rk = v;
    } else if (key == "epk") {
      out->end_pk = v;
    } else if (key == "erk") {
      out->end_rk = v;
    } else if (key == "sp") {
      auto p = token::ParsePermissions(v);
      if (!p.ok()) return Invalid("'spec' field 'sp': " + p.status().message());
      out->permissions = *p;
    } else if (key == "st" || key == "se") {
      auto t = token::ParseTime(v);
      if (!t.ok()) return Invalid("'spec' field '" + std::string(key) + "': " + t.status().message());
      (key == "st" ? out->start : out->expiry) = *t;
    } else if (key == "tenant") {
      out->tenant = v;
    } else if (key == "caller") {
      out->identity = v;
    } else {
      out->policy_id = v;
    }
  }
  if ((seen & 1u) && (seen & 2u)) return Invalid("'spec' has both 'tn' and 'tp'");
  if (!(seen & 3u)) return Invalid("'spec' needs 'tn' (a table) or 'tp' (a table prefix)");
  return Status::OK();
}

void WriteTokenSpec(msgpack::Writer& w, const token::TokenSpec& s) {
  uint32_t n = 3;  // table, tenant, caller
  n += s.start_pk.has_value() + s.start_rk.has_value() + s.end_pk.has_value() + s.end_rk.has_value();
  n += s.permissions.has_value() + s.start.has_value() + s.expiry.has_value() + !s.policy_id.empty();
  w.MapHeader(n);
  auto field = [&w](std::string_view key, std::string_view value) {
    w.Str(key);
    w.Str(value);
  };
  field(s.table_is_prefix ? "tp" : "tn", s.table);
  if (s.start_pk) field("spk", *s.start_pk);
  if (s.start_rk) field("srk", *s.start_rk);
  if (s.end_pk) field("epk", *s.end_pk);
  if (s.end_rk) field("erk", *s.end_rk);
  if (s.permissions) field("sp", token::PermissionString(*s.permissions));
  if (s.start) field("st", token::FormatTime(*s.start));
  if (s.expiry) field("se", token::FormatTime(*s.expiry));
  field("tenant", s.tenant);
  field("caller", s.identity);
  if (!s.policy_id.empty()) field("si", s.policy_id);
}

void EncodeIssuedToken(std::string_view token, std::string* out) {
  msgpack::Writer w(out);
  w.MapHeader(1);
  w.Str("token");
  w.Str(token);
}

Status DecodeIssuedToken(std::string_view body, std::string* token) {
  msgpack::Reader r(body);
  uint32_t n;
  if (!r.MapHeader(&n)) return Status(Code::kInternal, "malformed IssueToken reply: body is not a map");
  bool found = false;
  for (uint32_t k = 0; k < n; k++) {
    std::string_view key, value;
    if (!r.Str(&key)) return Status(Code::kInternal, "malformed IssueToken reply: field name");
    if (key == "token") {
      if (!r.Str(&value)) return Status(Code::kInternal, "malformed IssueToken reply: 'token' is not a string");
      token->assign(value);
      found = true;
    } else if (!r.Skip()) {
      return Status(Code::kInternal, "malformed IssueToken reply: field value");
    }
  }
  if (!found) return Status(Code::kInternal, "malformed IssueToken reply: no 'token'");
  return Status::OK();
}

}  // namespace sidetable::wire
