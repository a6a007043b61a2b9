#include "sidecar/rest/shared_key.h"

#include <sodium.h>

#include <algorithm>
#include <array>
#include <cstdlib>

#include "engine/edm.h"
#include "events/base64.h"

namespace sidetable::sidecar::rest {
namespace {

Status SharedKeyFailed(std::string why) {
  return Status(Code::kAuthenticationFailed,
                "Server failed to authenticate the request. Make sure the value of Authorization header is formed "
                "correctly including the signature. (" + why + ")");
}

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Why the request's date does not authenticate it; "" when it does.
std::string DateProblem(std::string_view date, int64_t now_ticks) {
  if (date.empty())
    return "the request has neither x-ms-date nor Date: a signed request must carry its date";
  const auto ticks = ParseHttpDate(date);
  if (!ticks) {
    return "the request date '" + std::string(date.substr(0, 64)) +
           "' is not in RFC 1123 format (e.g. 'Sun, 06 Nov 1994 08:49:37 GMT')";
  }
  const int64_t skew = (*ticks - now_ticks) / kTicksPerSecond;
  if (std::llabs(skew) > kMaxDateSkewSeconds) {
    return "the request date '" + std::string(date) + "' is " + std::to_string(std::llabs(skew)) +
           " s " + (skew < 0 ? "before" : "after") + " the server's time; at most " +
           std::to_string(kMaxDateSkewSeconds / 60) + " minutes either way are accepted";
  }
  return "";
}

}  // namespace

std::optional<int64_t> ParseHttpDate(std::string_view t) {
  // Ddd, D[D] Mmm YYYY HH:MM:SS GMT
  static constexpr std::array<std::string_view, 7> kDays = {"Mon", "Tue", "Wed", "Thu",
                                                            "Fri", "Sat", "Sun"};
  static constexpr std::array<std::string_view, 12> kMonths = {
      "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  if (t.size() < 5 || t[3] != ',' || t[4] != ' ' ||
      std::find(kDays.begin(), kDays.end(), t.substr(0, 3)) == kDays.end()) {
    return std::nullopt;
  }
  t.remove_prefix(5);
  const size_t space = t.find(' ');
  if (space == std::string_view::npos || space > 2 || !AllDigits(t.substr(0, space)))
    return std::nullopt;
  const std::string day = (space == 1 ? "0" : "") + std::string(t.substr(0, space));
  t.remove_prefix(space + 1);
  // Mmm YYYY HH:MM:SS GMT
  if (t.size() != 21 || t[3] != ' ' || t[8] != ' ' || t[11] != ':' || t[14] != ':' ||
      t[17] != ' ' || t.substr(18) != "GMT" || !AllDigits(t.substr(4, 4)) ||
      !AllDigits(t.substr(9, 2)) || !AllDigits(t.substr(12, 2)) || !AllDigits(t.substr(15, 2))) {
    return std::nullopt;
  }
  const auto month = std::find(kMonths.begin(), kMonths.end(), t.substr(0, 3));
  if (month == kMonths.end()) return std::nullopt;
  char iso[32];
  std::snprintf(iso, sizeof iso, "%.4s-%02d-%sT%.8sZ", t.data() + 4,
                static_cast<int>(month - kMonths.begin()) + 1, day.c_str(), t.data() + 9);
  return ParseDateTime(iso);  // checks the ranges (month days, hours)
}

std::string HmacSha256Base64(std::string_view key, std::string_view message) {
  crypto_auth_hmacsha256_state state;
  unsigned char mac[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(key.data()), key.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(message.data()), message.size());
  crypto_auth_hmacsha256_final(&state, mac);
  return json::Base64Encode(std::string_view(reinterpret_cast<const char*>(mac), sizeof mac));
}

std::string CanonicalResource(std::string_view account, std::string_view raw_path, std::string_view comp) {
  std::string out = "/";
  out.append(account);
  out.append(raw_path);
  if (!comp.empty()) {
    out += "?comp=";
    out.append(comp);
  }
  return out;
}

std::string SharedKeyStringToSign(std::string_view verb, std::string_view content_md5,
                                  std::string_view content_type, std::string_view date, std::string_view resource) {
  std::string s;
  s.reserve(verb.size() + content_md5.size() + content_type.size() + date.size() + resource.size() + 4);
  s.append(verb).append("\n").append(content_md5).append("\n").append(content_type).append("\n");
  s.append(date).append("\n").append(resource);
  return s;
}

std::string SharedKeyLiteStringToSign(std::string_view date, std::string_view resource) {
  return std::string(date) + "\n" + std::string(resource);
}

const RestAccount* FindAccount(const std::vector<RestAccount>& accounts, std::string_view name) {
  for (const auto& a : accounts) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

Status VerifySharedKey(std::string_view authorization, const SignedParts& parts,
                       const std::vector<RestAccount>& accounts, int64_t now_ticks) {
  const size_t space = authorization.find(' ');
  if (space == std::string_view::npos)
    return SharedKeyFailed("the Authorization header must be 'SharedKey account:signature'");
  const std::string_view scheme = authorization.substr(0, space);
  const bool lite = scheme == "SharedKeyLite";
  if (!lite && scheme != "SharedKey") {
    return SharedKeyFailed("unsupported authorization scheme '" + std::string(scheme) +
                           "' (SharedKey, SharedKeyLite or a SAS)");
  }
  const std::string_view cred = authorization.substr(space + 1);
  const size_t colon = cred.find(':');
  if (colon == std::string_view::npos)
    return SharedKeyFailed("the credential must be account:signature");
  const std::string_view account = cred.substr(0, colon);
  const std::string_view sig = cred.substr(colon + 1);
  const RestAccount* acct = FindAccount(accounts, account);
  if (acct == nullptr) return SharedKeyFailed("unknown account '" + std::string(account) + "'");
  if (account != parts.path_account)
    return SharedKeyFailed("the signing account is not the account of the URL");
  const std::string_view date = parts.x_ms_date.empty() ? parts.date : parts.x_ms_date;
  // Before the signature: a stale or undated request is refused whatever
  // it is signed with (a replay), and its HMAC is not computed.
  if (std::string why = DateProblem(date, now_ticks); !why.empty()) return SharedKeyFailed(why);
  // The path with the account (what SDKs sign for path-style URLs), then
  // without it (as for an account's own host name).
  std::string_view without = parts.raw_path;
  const std::string prefix = "/" + std::string(account);
  if (without.substr(0, prefix.size()) == prefix) without.remove_prefix(prefix.size());
  if (without.empty()) without = "/";
  for (std::string_view path : {parts.raw_path, without}) {
    const std::string resource = CanonicalResource(account, path, parts.comp);
    const std::string expected =
        HmacSha256Base64(acct->key, lite ? SharedKeyLiteStringToSign(date, resource)
                                         : SharedKeyStringToSign(parts.verb, parts.content_md5,
                                                                 parts.content_type, date, resource));
    if (expected.size() == sig.size() && sodium_memcmp(expected.data(), sig.data(), sig.size()) == 0) {
      return Status::OK();
    }
  }
  return SharedKeyFailed("the signature does not match");
}

}  // namespace sidetable::sidecar::rest
