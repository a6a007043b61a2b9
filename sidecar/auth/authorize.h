// Authorisation: what a verified token allows each operation to touch
// (docs/security.md, "Enforcement"). Every check runs before the operation
// touches data, and a refusal changes nothing.
//
//   Ping                      any valid token
//   CreateTable,
//   GetTablePolicies          m on the table
//   DeleteTable,
//   SetTablePolicies          m on the table, and no key range (they reach
//                             every row of the table)
//   ListTables                lists only the tables the token covers
//   Write (an EGT)            per operation: Insert a; Update, Merge u;
//                             Delete d; InsertOrReplace, InsertOrMerge and
//                             fenced upserts a and u; fenced deletes d; the
//                             keys inside the range. One refusal refuses the
//                             whole EGT.
//   WriteMany                 the same, per EGT: a refused EGT gets its own
//                             403 result, the others commit
//   Get                       r, the keys inside the range
//   Query                     r; the scan is confined to the range
//   ReadChanges               c, on a token for every table (prefix "") with
//                             no key range: the change log holds every table
//   RequestArchive            d on each source row, a on each target row
//   AdvanceWatermarks         u and c on each entry's derived table (what a
//                             pattern worker's token holds), no key range
//   ReadWatermarks            r on the derived table; all: only those covered
//   ForgetWatermarks          m on the derived table, no key range
//   IssueToken                m, and the wanted token within this one's scope
//                             (token::CheckDelegation, run by the handler)
//   Backup                    r, c and m, on a token for every table (prefix
//                             "") with no key range: it copies every table
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "protocol/token.h"
#include "protocol/wire.h"

namespace sidetable::sidecar::auth {

// The checks of one request that need no data: everything above except the
// per-EGT checks of WriteMany, the query confinement and the listing
// filters, which the handler applies where it runs them.
Status Authorize(const token::Token& t, const wire::Request& r);

// One EGT: every operation's permission and keys (the failing operation's
// index in the status).
Status AuthorizeOperations(const token::Token& t, std::string_view table, const std::vector<Operation>& ops);

// A query's confinement: r on the table, and the scan bounds of the token's
// key range (nullopt: the whole table).
Result<std::optional<ScanBounds>> QueryConfinement(const token::Token& t, std::string_view table);

// The token's key range as scan bounds (start inclusive, end exclusive).
ScanBounds ToScanBounds(const token::KeyRange& range);

}  // namespace sidetable::sidecar::auth
