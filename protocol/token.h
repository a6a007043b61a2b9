// Signed access tokens: the service SAS of Azure Table storage, for sidetable
// (docs/security.md is normative for the text format and canonical string).
//
// A token says who may do what where, until when: a table (exact name) or a
// table-name prefix; optional PartitionKey/RowKey bounds (spk, srk, epk,
// erk: inclusive, compared as (PartitionKey, RowKey) pairs, which is the
// order rows are stored in); permissions; an optional start and an expiry; a
// tenant label; the caller identity the change log records; optionally a
// stored access policy (si) on the table; and the id of the key that signed
// it. It is HMAC-SHA256 signed (libsodium) over a canonical string, and
// travels as readable text: `v=1&kid=k1&tn=orders&...&sig=<base64url>`.
//
// The steps, all pure:
//   ParseToken     structure only: fields, limits, canonical form. Trusts nothing.
//   ResolvePolicy  for a token with `si`: fills start/expiry/permissions from
//                  the table's stored access policy, refuses a removed one.
//   Keyring::Verify  signature under a known key, then the validity window.
//   CheckPoint / CheckTable / ConfineQuery / MaySeeTable   scope checks.
// Refusals carry the service's codes: AuthenticationFailed (bad signature,
// unknown key, expired, not yet valid, revoked policy),
// AuthorizationPermissionMismatch (a permission the token lacks),
// AuthorizationFailure (a table or keys outside its scope); all 403.
//
// Thread safety: value types and pure functions, safe from any thread. A
// Keyring is safe to read from many threads; changing it (Add, Remove) needs
// the caller's exclusion.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"

namespace sidetable::token {

// Seconds since the Unix epoch, UTC; written "2026-12-01T20:32:41Z".
using TimePoint = std::chrono::sys_seconds;

// One bit each; a token holds a set (its `sp` letters, in this order).
enum class Permission : uint8_t {
  kRead = 1 << 0,       // r: Get and Query (the service's "query")
  kAdd = 1 << 1,        // a: Insert, and the insert half of the Upsert operations
  kUpdate = 1 << 2,     // u: Update, Merge, and the replace half of Upsert
  kDelete = 1 << 3,     // d: Delete
  kAdmin = 1 << 4,      // m: create and delete tables, set stored access policies (beyond the service)
  kChangeLog = 1 << 5,  // c: read the change log, replay, audit, verify (beyond the service)
};
using Permissions = uint8_t;  // a set of Permission bits
inline constexpr Permissions kAllPermissions = 0x3f;

// "raud", in the canonical order raudmc.
std::string PermissionString(Permissions p);
// Letters in any order, each at most once; InvalidInput otherwise.
Result<Permissions> ParsePermissions(std::string_view letters);

// "2026-12-01T20:32:41Z" only (UTC, seconds): one spelling per instant, so
// the canonical string is unique.
std::string FormatTime(TimePoint t);
Result<TimePoint> ParseTime(std::string_view text);

// What a token grants, as its issuer writes it.
struct TokenSpec {
  std::string table;             // exact name (case-insensitive), or the prefix
  bool table_is_prefix = false;  // an empty prefix is every table
  std::optional<std::string> start_pk, start_rk, end_pk, end_rk;  // srk needs spk, erk needs epk
  std::optional<Permissions> permissions;  // absent only with a policy that gives them
  std::optional<TimePoint> start;           // absent: valid from issue
  std::optional<TimePoint> expiry;          // absent only with a policy that gives it
  std::string tenant;    // [A-Za-z0-9._-], 1-64: a metrics label
  std::string identity;  // the caller recorded in the change log: UTF-8, 1-256 bytes
  std::string policy_id; // stored access policy (si); "" for none. Needs an exact table.
};

// A stored access policy on a table (Azure's SignedIdentifier): change or
// revoke every token issued under it at once. No key ranges (as Azure).
struct StoredPolicy {
  std::string id;  // 1-64 characters
  std::optional<TimePoint> start, expiry;
  std::optional<Permissions> permissions;
};
inline constexpr size_t kMaxPoliciesPerTable = 5;
inline constexpr size_t kMaxPolicyIdLength = 64;

// A parsed token. `spec` is what was signed; `policy` is the stored policy
// ResolvePolicy found for it (the effective fields below read both).
struct Token {
  int version = 1;
  std::string key_id;
  TokenSpec spec;
  std::string signature;  // 32 raw bytes
  std::optional<StoredPolicy> policy;
};

// The start, expiry and permissions in force: the token's own, or its
// resolved policy's. A token naming a policy that was not resolved has no
// permissions and no expiry, so it fails closed.
std::optional<TimePoint> EffectiveStart(const Token& t);
std::optional<TimePoint> EffectiveExpiry(const Token& t);
Permissions EffectivePermissions(const Token& t);

// Limits (InvalidInput beyond them).
inline constexpr size_t kMaxTokenLength = 8192;
inline constexpr size_t kMaxKeyBoundLength = 1024;  // Azure's key limit
inline constexpr size_t kMaxIdentityLength = 256;
inline constexpr size_t kMaxLabelLength = 64;       // tenant and key id
inline constexpr size_t kMinKeyBytes = 32;

// Structure only, no signature check: every field valid and within limits,
// keys in the canonical order, canonical percent-encoding, no duplicates or
// unknown keys. Any byte string gives a Token or InvalidInput.
Result<Token> ParseToken(std::string_view text);

// The token text without `&sig=...`: the canonical encoding of key_id and
// spec. The signature is over "sidetable-token\n" followed by this.
std::string CanonicalString(std::string_view key_id, const TokenSpec& spec);

// Checks `spec` the way ParseToken would and signs it: the full token text.
// InvalidInput for an invalid spec or key id, a key under kMinKeyBytes.
Result<std::string> IssueToken(const TokenSpec& spec, std::string_view key_id, std::string_view key);

// The signing keys a server accepts: at most two, by id, so a new key can be
// added, tokens reissued, and the old key removed without downtime.
class Keyring {
 public:
  static constexpr size_t kMaxKeys = 2;

  // InvalidInput: a third key, a duplicate or malformed id, a short key.
  Status Add(std::string key_id, std::string key);
  // False when no key has that id.
  bool Remove(std::string_view key_id);
  size_t size() const { return keys_.size(); }

  // AuthenticationFailed when the key id is unknown, the signature does not
  // match, the token names a stored policy that was not resolved, it has no
  // expiry, it expired (now >= expiry) or is not yet valid (now < start).
  Status Verify(const Token& token, TimePoint now) const;

 private:
  struct Key {
    std::string id;
    std::string bytes;
  };
  std::vector<Key> keys_;
};

// A key as written in a key file: base64 (standard or URL-safe, padding
// optional, surrounding whitespace ignored) of at least kMinKeyBytes bytes.
Result<std::string> DecodeKey(std::string_view text);
// Reads and decodes a key file; refuses (InvalidInput) a file that its group
// or others may read or write, as ssh does with private keys.
Result<std::string> LoadKeyFile(const std::string& path);

// Stored access policies of one table: at most kMaxPoliciesPerTable, unique
// ids of 1-64 characters, start before expiry. InvalidInput otherwise (the
// service's 400).
Status ValidatePolicies(std::span<const StoredPolicy> policies);

// For a token with `si`: the token with `policy` set from the policies of
// its table (spec.table). Without `si`, the token unchanged.
//   AuthenticationFailed  the policy does not exist (removed or renamed: the
//                         tokens issued under it are revoked), or the token
//                         and the policy together give no expiry or no
//                         permissions;
//   InvalidInput          the token and the policy both set one of start,
//                         expiry, permissions (the service's 400).
Result<Token> ResolvePolicy(const Token& token, std::span<const StoredPolicy> table_policies);

// Whether `table` is the token's table or starts with its prefix
// (case-insensitive, as table names are).
bool CoversTable(const Token& t, std::string_view table);

// A bound of a key range: a (PartitionKey, RowKey) pair in storage order. No
// RowKey means the whole partition: from its first row in a lower bound, to
// its last row in an upper bound.
struct KeyBound {
  std::string pk;
  std::optional<std::string> rk;
};
// Both bounds inclusive; nullopt is unbounded.
struct KeyRange {
  std::optional<KeyBound> lower, upper;
  bool Contains(std::string_view pk, std::string_view rk) const;
  bool unbounded() const { return !lower && !upper; }
};

// The token's key range (unbounded without spk/epk).
KeyRange TokenKeyRange(const Token& t);

// Checks in this order: the table is covered (else AuthorizationFailure),
// the permission is held (else AuthorizationPermissionMismatch).
Status CheckTable(const Token& t, Permission p, std::string_view table);
// CheckTable, then the keys are inside the token's range (else
// AuthorizationFailure). An EGT calls it for every operation and is refused
// whole on the first failure.
Status CheckPoint(const Token& t, Permission p, std::string_view table, std::string_view pk,
                  std::string_view rk);
// For a query on `table` (needs kRead): the bounds every scan must be
// intersected with, so rows outside are never examined and no continuation
// leads outside. Errors as CheckTable.
Result<KeyRange> ConfineQuery(const Token& t, std::string_view table);
// Table listing: whether `table` may be shown (covered, any permission).
bool MaySeeTable(const Token& t, std::string_view table);

// Delegation (the IssueToken operation, docs/security.md "Issuing tokens"):
// whether `issuer`, a verified token with its policy resolved, may have the
// sidecar sign `wanted`. Checks, in this order:
//   m             the issuer holds the admin permission
//                 (else AuthorizationPermissionMismatch);
//   tenant        equal to the issuer's when the issuer's is non-empty;
//   table         an exact table the issuer covers, or a prefix that starts
//                 with the issuer's prefix (case-insensitive); never a prefix
//                 under an exact-table issuer;
//   key range     each side inside the issuer's: a side may be open only
//                 where the issuer's is open; bounds compare as
//                 (PartitionKey, RowKey) pairs (a lower bound without RowKey
//                 is the partition's first row, an upper one its last);
//   policy        `si` names a policy in `wanted_table_policies` (the stored
//                 policies of wanted.table), else InvalidInput; resolved
//                 against it for the next two checks;
//   permissions   the wanted token's effective permissions (its own or its
//                 policy's) are a subset of the issuer's effective ones
//                 (else AuthorizationPermissionMismatch);
//   expiry        the wanted token carries its own `se` (a policy's expiry
//                 could be moved later), not after the issuer's effective
//                 expiry; `st` is optional.
// Out of scope is AuthorizationFailure. Structure (field syntax, limits) is
// IssueToken's to check. Pure: no clock, no keys.
Status CheckDelegation(const Token& issuer, const TokenSpec& wanted,
                       std::span<const StoredPolicy> wanted_table_policies);

}  // namespace sidetable::token
