// SharedKey and SharedKeyLite, as the Table service checks them: the
// string-to-sign, HMAC-SHA256 under the account key, and the Authorization
// header's verification.
//
//   SharedKey      VERB \n Content-MD5 \n Content-Type \n Date \n resource
//   SharedKeyLite  Date \n resource
//   Date           x-ms-date when sent, else Date
//   resource       /<account><path>[?comp=<comp>]
//
// With path-style URLs the path itself starts with the account
// (/devstoreaccount1/Tables), and SDKs sign /devstoreaccount1/devstoreaccount1/Tables;
// both that and the path without its account are accepted, as Azurite does.
//
// The date is checked as the service checks it, so that a captured request
// cannot be replayed later: x-ms-date (else Date) must be there, be an RFC
// 1123 date ("Sun, 06 Nov 1994 08:49:37 GMT"; a one-digit day, as Java's
// formatter writes it, too) and lie within 15 minutes of the server's clock,
// past or future.
//
// Thread safety: pure functions.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/status.h"
#include "sidecar/rest/rest_config.h"

namespace sidetable::sidecar::rest {

// base64(HMAC-SHA256(key, message)).
std::string HmacSha256Base64(std::string_view key, std::string_view message);

std::string CanonicalResource(std::string_view account, std::string_view raw_path, std::string_view comp);
std::string SharedKeyStringToSign(std::string_view verb, std::string_view content_md5,
                                  std::string_view content_type, std::string_view date, std::string_view resource);
std::string SharedKeyLiteStringToSign(std::string_view date, std::string_view resource);

// What the signature covers, taken from the request.
struct SignedParts {
  std::string_view verb, content_md5, content_type, date, x_ms_date;
  std::string_view raw_path;   // still percent-encoded, with the account
  std::string_view comp;       // the ?comp= value ("" = none)
  std::string_view path_account;  // the account the path names
};

// How far a signed request's date may be from the server's clock.
inline constexpr int64_t kMaxDateSkewSeconds = 15 * 60;

// An RFC 1123 date ("Sun, 06 Nov 1994 08:49:37 GMT") in DateTime ticks;
// nullopt when it is not one (other zones than GMT included).
std::optional<int64_t> ParseHttpDate(std::string_view text);

// Verifies "SharedKey <account>:<sig>" or "SharedKeyLite <account>:<sig>"
// of a request received at `now_ticks` (DateTime ticks). AuthenticationFailed
// (403) for any other scheme, an unknown account, an account other than the
// path's, no date, a date that is not RFC 1123 or is more than
// kMaxDateSkewSeconds from now, or a signature that does not match.
Status VerifySharedKey(std::string_view authorization, const SignedParts& parts,
                       const std::vector<RestAccount>& accounts, int64_t now_ticks);

// The account of that name, or null.
const RestAccount* FindAccount(const std::vector<RestAccount>& accounts, std::string_view name);

}  // namespace sidetable::sidecar::rest
