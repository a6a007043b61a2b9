// Shared access signatures in the query string: the service SAS of a table
// (tn, spk/srk/epk/erk) and the account SAS (ss, srt), verified with the
// account key and turned into a sidetable token (protocol/token.h) that the
// Handler's authorisation enforces like a signed token on the ZeroMQ path:
//
//   service SAS   tn -> the exact table; sp r a u d -> r a u d;
//                 spk/srk/epk/erk -> the token's key range (srk without
//                 spk, or erk without epk, is refused as the service does)
//   account SAS   every table (prefix ""); with srt containing o (objects:
//                 entities) r -> r, a -> a, u p -> u, w -> a u, d -> d;
//                 with srt containing c (containers: tables) c w d give m
//                 (create and delete tables) and l lists tables; deleting
//                 a table also needs d (AccountSasDeletesTables) and
//                 creating one c or w (AccountSasCreatesTables), both
//                 checked by the gateway, as the service requires
//
// String-to-sign (HMAC-SHA256, base64, under the account key):
//   service  sp\nst\nse\n/table/<account>/<tn lower case>\nsi\nsip\nspr\nsv\nspk\nsrk\nepk\nerk
//   account  <account>\nsp\nss\nsrt\nst\nse\nsip\nspr\nsv\n[ses\n]  (ses from 2020-12-06)
// Not supported (403 AuthenticationFailed with the reason): si (stored
// access policies), sip. spr is not checked (the gateway serves http).
//
// Thread safety: pure functions.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"
#include "protocol/token.h"
#include "sidecar/rest/rest_config.h"

namespace sidetable::sidecar::rest {

// The query parameters (decoded), by name.
using QueryParams = std::map<std::string, std::string, std::less<>>;

bool HasSas(const QueryParams& q);

// Whether an account SAS may delete tables: the service's Delete Table needs
// d with srt c. The token an account SAS becomes has one letter, m, for
// creating and deleting tables (c and w give it, to create), so the gateway
// asks this before a table deletion.
bool AccountSasDeletesTables(const QueryParams& q);
// The same for Create Table, which needs c or w with srt c: d gives m too
// (to delete), and a SAS that may only delete must not create.
bool AccountSasCreatesTables(const QueryParams& q);

// `target` (a request's path and query string) with the value of each `sig`
// parameter replaced by REDACTED, for the request log: a SAS is a bearer
// credential until it expires, and logs reach more people than keys do.
std::string RedactSasSignature(std::string_view target);

std::string ServiceSasStringToSign(const QueryParams& q, std::string_view account);
std::string AccountSasStringToSign(const QueryParams& q, std::string_view account, bool with_ses);

// Verifies the SAS of a request on `account` at `now_ticks` (DateTime ticks)
// and returns the token it grants. AuthenticationFailed for a bad
// signature, an unknown account, a window not in force, an unsupported
// field; AuthorizationPermissionMismatch for an account SAS without the
// table service (ss without t).
// *list_tables: an account SAS that may list tables (srt c, sp l).
Result<token::Token> VerifySas(const QueryParams& q, std::string_view account,
                               const std::vector<RestAccount>& accounts, int64_t now_ticks,
                               bool* list_tables = nullptr);

}  // namespace sidetable::sidecar::rest
