#include "sidecar/auth/authorize.h"

namespace sidetable::sidecar::auth {
namespace {

using token::Permission;

Status Denied(std::string message) { return Status(Code::kAuthorizationFailure, std::move(message)); }

Status NeedPermission(const token::Token& t, Permission p, std::string_view what) {
  if (token::EffectivePermissions(t) & static_cast<token::Permissions>(p)) return Status::OK();
  return Status(Code::kAuthorizationPermissionMismatch,
                "the token does not allow " + std::string(what) + " (permission '" +
                    token::PermissionString(static_cast<token::Permissions>(p)) + "')");
}

// The permissions an operation kind needs (one or two).
std::vector<Permission> Needs(OpKind kind) {
  switch (kind) {
    case OpKind::kInsert: return {Permission::kAdd};
    case OpKind::kUpdate: case OpKind::kMerge: return {Permission::kUpdate};
    case OpKind::kDelete: case OpKind::kFencedDelete: return {Permission::kDelete};
    case OpKind::kInsertOrReplace: case OpKind::kInsertOrMerge: case OpKind::kFencedUpsert:
      return {Permission::kAdd, Permission::kUpdate};
  }
  return {Permission::kAdmin};  // unknown kinds need the most
}

// Deleting a table, or replacing the stored policies every token on it is
// resolved against, reaches every row of the table. A token confined to a
// key range (a tenant of a shared table, whose app tier holds m to issue its
// users' tokens) must not reach the other tenants' rows that way.
Status NeedWholeTable(const token::Token& t, std::string_view what) {
  if (token::TokenKeyRange(t).unbounded()) return Status::OK();
  return Denied(
      std::string(what) +
      " needs a token without a key range: the table holds rows outside the token's range");
}

// A token that reaches every row of every table.
bool Unconfined(const token::Token& t) {
  return t.spec.table_is_prefix && t.spec.table.empty() && token::TokenKeyRange(t).unbounded();
}

}  // namespace

Status AuthorizeOperations(const token::Token& t, std::string_view table, const std::vector<Operation>& ops) {
  for (size_t i = 0; i < ops.size(); i++) {
    const Entity& e = ops[i].entity;
    for (Permission p : Needs(ops[i].kind)) {
      Status s = token::CheckPoint(t, p, table, e.partition_key, e.row_key);
      if (!s.ok()) return s.WithOpIndex(static_cast<int>(i));
    }
  }
  return Status::OK();
}

Status Authorize(const token::Token& t, const wire::Request& r) {
  using wire::Op;
  switch (r.op) {
    case Op::kPing:
    case Op::kListTables:
    case Op::kWriteMany:
    case Op::kQuery:
      return Status::OK();  // filtered or confined where they run (handler)
    case Op::kIssueToken:
      return Status::OK();  // token::CheckDelegation in the handler: it needs the stored policies
    case Op::kCreateTable:
    case Op::kGetTablePolicies:
      return token::CheckTable(t, Permission::kAdmin, r.table);
    case Op::kDeleteTable:
      ST_RETURN_IF_ERROR(token::CheckTable(t, Permission::kAdmin, r.table));
      return NeedWholeTable(t, "deleting a table");
    case Op::kSetTablePolicies:
      ST_RETURN_IF_ERROR(token::CheckTable(t, Permission::kAdmin, r.table));
      return NeedWholeTable(t, "setting a table's stored access policies");
    case Op::kWrite:
      return AuthorizeOperations(t, r.table, r.ops);
    case Op::kGet:
      return token::CheckPoint(t, Permission::kRead, r.table, r.pk, r.rk);
    case Op::kReadChanges:
      if (!Unconfined(t)) {
        return Denied("reading the change log needs a token for every table (an empty table prefix) "
                      "and no key range: the log holds every table's changes");
      }
      return NeedPermission(t, Permission::kChangeLog, "reading the change log");
    case Op::kRequestArchive:
      for (const auto& rk : r.rks) {
        ST_RETURN_IF_ERROR(token::CheckPoint(t, Permission::kDelete, r.table, r.pk, rk));
        ST_RETURN_IF_ERROR(token::CheckPoint(t, Permission::kAdd, r.target, r.pk, rk));
      }
      return Status::OK();
    case Op::kAdvanceWatermarks:
      for (const auto& w : r.watermarks) {
        ST_RETURN_IF_ERROR(token::CheckTable(t, Permission::kUpdate, w.derived));
        ST_RETURN_IF_ERROR(token::CheckTable(t, Permission::kChangeLog, w.derived));
      }
      // A watermark says every row of the derived table covers its source up
      // to an LSN: every reader's read-your-writes session trusts it.
      if (!r.watermarks.empty()) return NeedWholeTable(t, "advancing a derived table's watermarks");
      return Status::OK();
    case Op::kBackup:
      // A backup holds every row and the change log of every table, and
      // writes files on the sidecar's host.
      if (!Unconfined(t)) {
        return Denied(
            "a backup needs a token for every table (an empty table prefix) and no key range: "
            "it copies every table");
      }
      ST_RETURN_IF_ERROR(NeedPermission(t, Permission::kRead, "a backup"));
      ST_RETURN_IF_ERROR(NeedPermission(t, Permission::kChangeLog, "a backup"));
      return NeedPermission(t, Permission::kAdmin, "a backup");
    case Op::kReadWatermarks:
      if (r.derived.empty()) return Status::OK();  // filtered by the handler
      return token::CheckTable(t, Permission::kRead, r.derived);
    case Op::kForgetWatermarks:
      // Session reads of the table stop waiting for its worker, and the
      // embedded Kafka's republish stops counting it: the table's owner's.
      ST_RETURN_IF_ERROR(token::CheckTable(t, Permission::kAdmin, r.derived));
      return NeedWholeTable(t, "forgetting a derived table's watermarks");
  }
  return Denied("operation not covered by the authorisation rules");
}

ScanBounds ToScanBounds(const token::KeyRange& range) {
  ScanBounds b;
  if (range.lower) b.start = {range.lower->pk, range.lower->rk.value_or("")};
  if (range.upper) {
    // Inclusive upper bound → exclusive end. Keys never contain U+0000, so
    // (pk, rk + U+0000) is the first key after (pk, rk), and (pk + U+0001, "")
    // the first after every row of partition pk (as the planner does).
    if (range.upper->rk) {
      b.end = {range.upper->pk, *range.upper->rk + std::string(1, '\0')};
    } else {
      b.end = {range.upper->pk + '\x01', ""};
    }
  }
  return b;
}

Result<std::optional<ScanBounds>> QueryConfinement(const token::Token& t, std::string_view table) {
  auto range = token::ConfineQuery(t, table);
  if (!range.ok()) return range.status();
  if (range->unbounded()) return std::optional<ScanBounds>();
  return std::optional<ScanBounds>(ToScanBounds(*range));
}

}  // namespace sidetable::sidecar::auth
