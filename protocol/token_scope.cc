// What a verified token allows: stored access policies, the table scope,
// permissions and the key range.
#include <set>

#include "engine/table_name.h"
#include "engine/utf8.h"
#include "protocol/token.h"

namespace sidetable::token {
namespace {

Status Unauthorized(std::string message) { return Status(Code::kAuthorizationFailure, std::move(message)); }

// Prefixes compare case-insensitively, like table names (engine/table_name.h).
bool StartsWithFolded(std::string_view table, std::string_view prefix) {
  return table.size() >= prefix.size() && TableNameEquals(table.substr(0, prefix.size()), prefix);
}

// Keys compare in storage order, Azure's ordinal UTF-16 order
// (engine/utf8.h), the order a query's confinement scans in. std::string's
// own comparison is UTF-8 byte order, which puts U+E000..U+FFFF before the
// supplementary planes: before session 38 point checks used it, so a token
// could write keys its own queries showed outside its range, and a query
// returned rows a Get refused.
//
// Composite (PartitionKey, RowKey) order; a bound without a RowKey takes the
// whole partition on its side.
bool AtOrAfter(std::string_view pk, std::string_view rk, const KeyBound& lower) {
  if (const int c = CompareOrdinal(pk, lower.pk); c != 0) return c > 0;
  return !lower.rk || CompareOrdinal(rk, *lower.rk) >= 0;
}

bool AtOrBefore(std::string_view pk, std::string_view rk, const KeyBound& upper) {
  if (const int c = CompareOrdinal(pk, upper.pk); c != 0) return c < 0;
  return !upper.rk || CompareOrdinal(rk, *upper.rk) <= 0;
}

}  // namespace

std::optional<TimePoint> EffectiveStart(const Token& t) {
  if (t.spec.start) return t.spec.start;
  return t.policy ? t.policy->start : std::nullopt;
}

std::optional<TimePoint> EffectiveExpiry(const Token& t) {
  if (t.spec.expiry) return t.spec.expiry;
  return t.policy ? t.policy->expiry : std::nullopt;
}

Permissions EffectivePermissions(const Token& t) {
  if (t.spec.permissions) return *t.spec.permissions;
  return t.policy && t.policy->permissions ? *t.policy->permissions : 0;
}

Status ValidatePolicies(std::span<const StoredPolicy> policies) {
  if (policies.size() > kMaxPoliciesPerTable) {
    return Status(Code::kInvalidInput, "a table has at most 5 stored access policies");
  }
  std::set<std::string_view> ids;
  for (const StoredPolicy& p : policies) {
    if (p.id.empty() || p.id.size() > kMaxPolicyIdLength) {
      return Status(Code::kInvalidInput, "stored access policy id must be 1-64 characters");
    }
    if (!ids.insert(p.id).second) return Status(Code::kInvalidInput, "stored access policy '" + p.id + "' given twice");
    if (p.start && p.expiry && *p.start >= *p.expiry) {
      return Status(Code::kInvalidInput, "stored access policy '" + p.id + "': start must be before expiry");
    }
    if (p.permissions && (*p.permissions == 0 || (*p.permissions & ~kAllPermissions))) {
      return Status(Code::kInvalidInput, "stored access policy '" + p.id + "': permissions must be letters of raudmc");
    }
  }
  return Status::OK();
}

Result<Token> ResolvePolicy(const Token& token, std::span<const StoredPolicy> table_policies) {
  if (token.spec.policy_id.empty()) return token;
  const StoredPolicy* found = nullptr;
  for (const StoredPolicy& p : table_policies) {
    if (p.id == token.spec.policy_id) found = &p;
  }
  const std::string& id = token.spec.policy_id;
  if (!found) {
    return Status(Code::kAuthenticationFailed, "stored access policy '" + id + "' does not exist on table " +
                                                   token.spec.table + " (tokens issued under a removed policy are revoked)");
  }
  // As the service: each field comes from the token or the policy, never both.
  const TokenSpec& s = token.spec;
  if ((s.start && found->start) || (s.expiry && found->expiry) || (s.permissions && found->permissions)) {
    return Status(Code::kInvalidInput, "token and stored access policy '" + id +
                                           "' both set start, expiry or permissions");
  }
  Token out = token;
  out.policy = *found;
  if (!EffectiveExpiry(out)) {
    return Status(Code::kAuthenticationFailed, "neither the token nor stored access policy '" + id + "' gives an expiry");
  }
  if (EffectivePermissions(out) == 0) {
    return Status(Code::kAuthenticationFailed,
                  "neither the token nor stored access policy '" + id + "' gives permissions");
  }
  return out;
}

bool CoversTable(const Token& t, std::string_view table) {
  return t.spec.table_is_prefix ? StartsWithFolded(table, t.spec.table) : TableNameEquals(table, t.spec.table);
}

bool KeyRange::Contains(std::string_view pk, std::string_view rk) const {
  return (!lower || AtOrAfter(pk, rk, *lower)) && (!upper || AtOrBefore(pk, rk, *upper));
}

KeyRange TokenKeyRange(const Token& t) {
  KeyRange r;
  if (t.spec.start_pk) r.lower = KeyBound{*t.spec.start_pk, t.spec.start_rk};
  if (t.spec.end_pk) r.upper = KeyBound{*t.spec.end_pk, t.spec.end_rk};
  return r;
}

Status CheckTable(const Token& t, Permission p, std::string_view table) {
  if (!CoversTable(t, table)) {
    return Unauthorized("token does not cover table " + std::string(table.substr(0, 63)));
  }
  if (!(EffectivePermissions(t) & static_cast<Permissions>(p))) {
    return Status(Code::kAuthorizationPermissionMismatch,
                  "token lacks permission '" + PermissionString(static_cast<Permissions>(p)) + "' (it has '" +
                      PermissionString(EffectivePermissions(t)) + "')");
  }
  return Status::OK();
}

Status CheckPoint(const Token& t, Permission p, std::string_view table, std::string_view pk, std::string_view rk) {
  ST_RETURN_IF_ERROR(CheckTable(t, p, table));
  // The keys are not quoted: the caller knows them, a log line need not.
  if (!TokenKeyRange(t).Contains(pk, rk)) return Unauthorized("keys are outside the token's key range");
  return Status::OK();
}

Result<KeyRange> ConfineQuery(const Token& t, std::string_view table) {
  ST_RETURN_IF_ERROR(CheckTable(t, Permission::kRead, table));
  return TokenKeyRange(t);
}

bool MaySeeTable(const Token& t, std::string_view table) {
  return EffectivePermissions(t) != 0 && CoversTable(t, table);
}

namespace {

// Lower bounds: (pk, no RowKey) is the partition's first row, (pk, "").
bool LowerWithin(const std::optional<KeyBound>& wanted, const std::optional<KeyBound>& issuer) {
  if (!issuer) return true;
  if (!wanted) return false;  // open where the issuer's is closed
  if (const int c = CompareOrdinal(wanted->pk, issuer->pk); c != 0) return c > 0;
  return CompareOrdinal(wanted->rk.value_or(""), issuer->rk.value_or("")) >= 0;
}

// Upper bounds: (pk, no RowKey) is after every row of the partition.
bool UpperWithin(const std::optional<KeyBound>& wanted, const std::optional<KeyBound>& issuer) {
  if (!issuer) return true;
  if (!wanted) return false;
  if (const int c = CompareOrdinal(wanted->pk, issuer->pk); c != 0) return c < 0;
  if (!issuer->rk) return true;
  return wanted->rk && CompareOrdinal(*wanted->rk, *issuer->rk) <= 0;
}

}  // namespace

Status CheckDelegation(const Token& issuer, const TokenSpec& wanted,
                       std::span<const StoredPolicy> wanted_table_policies) {
  const Permissions held = EffectivePermissions(issuer);
  if (!(held & static_cast<Permissions>(Permission::kAdmin))) {
    return Status(Code::kAuthorizationPermissionMismatch,
                  "issuing a token needs permission 'm' (the token has '" + PermissionString(held) + "')");
  }
  if (!issuer.spec.tenant.empty() && wanted.tenant != issuer.spec.tenant) {
    return Unauthorized("a token may be issued only for the issuer's own tenant");
  }
  const TokenSpec& own = issuer.spec;
  const bool table_ok = wanted.table_is_prefix
                            ? own.table_is_prefix && StartsWithFolded(wanted.table, own.table)
                            : CoversTable(issuer, wanted.table);
  if (!table_ok) {
    return Unauthorized(std::string("the requested table ") + (wanted.table_is_prefix ? "prefix " : "") +
                        "is outside the issuer's table scope");
  }
  Token w;
  w.spec = wanted;
  const KeyRange mine = TokenKeyRange(issuer), theirs = TokenKeyRange(w);
  if (!LowerWithin(theirs.lower, mine.lower) || !UpperWithin(theirs.upper, mine.upper)) {
    return Unauthorized("the requested key range is outside the issuer's key range");
  }
  if (!wanted.policy_id.empty()) {
    auto resolved = ResolvePolicy(w, wanted_table_policies);
    if (!resolved.ok()) {
      // Not a credential failure here: the request names a policy that is not there.
      return Status(Code::kInvalidInput, resolved.status().message());
    }
    w = std::move(resolved).value();
  }
  const Permissions want = EffectivePermissions(w);
  if (want & ~held) {
    return Status(Code::kAuthorizationPermissionMismatch,
                  "the requested permissions '" + PermissionString(want) + "' exceed the issuer's '" +
                      PermissionString(held) + "'");
  }
  if (!wanted.expiry) {
    return Status(Code::kInvalidInput, "an issued token needs its own expiry (se)");
  }
  const std::optional<TimePoint> limit = EffectiveExpiry(issuer);
  if (!limit || *wanted.expiry > *limit) {
    return Unauthorized("the requested expiry " + FormatTime(*wanted.expiry) + " is after the issuer's " +
                        (limit ? FormatTime(*limit) : std::string("(none)")));
  }
  return Status::OK();
}

}  // namespace sidetable::token
