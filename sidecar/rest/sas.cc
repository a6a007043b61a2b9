#include "sidecar/rest/sas.h"

#include <sodium.h>

#include <algorithm>

#include "engine/edm.h"
#include "sidecar/rest/path.h"
#include "sidecar/rest/shared_key.h"

namespace sidetable::sidecar::rest {
namespace {

Status SasFailed(std::string why) {
  return Status(Code::kAuthenticationFailed,
                "Server failed to authenticate the request. Make sure the value of the SAS is formed correctly "
                "including the signature. (" + why + ")");
}

std::string_view Get(const QueryParams& q, std::string_view key) {
  auto it = q.find(key);
  return it == q.end() ? std::string_view() : std::string_view(it->second);
}

Result<token::TimePoint> SasTime(std::string_view text, const char* name) {
  auto ticks = ParseDateTime(text);
  if (!ticks) return SasFailed(std::string(name) + " is not an ISO 8601 UTC time");
  return token::TimePoint(std::chrono::seconds((*ticks - kUnixEpochTicks) / kTicksPerSecond));
}

}  // namespace

bool HasSas(const QueryParams& q) { return q.count("sig") != 0; }

std::string RedactSasSignature(std::string_view target) {
  const size_t q = target.find('?');
  if (q == std::string_view::npos) return std::string(target);
  std::string out(target.substr(0, q + 1));
  std::string_view rest = target.substr(q + 1);
  while (true) {
    const size_t amp = rest.find('&');
    const std::string_view pair = rest.substr(0, amp);
    const size_t eq = pair.find('=');
    // Compared decoded, as the gateway reads the parameters (%73ig is sig).
    auto key = PercentDecode(pair.substr(0, eq), true);
    if (key.ok() && *key == "sig") {
      out.append(pair.substr(0, eq)).append("=REDACTED");
    } else {
      out.append(pair);
    }
    if (amp == std::string_view::npos) break;
    out.push_back('&');
    rest.remove_prefix(amp + 1);
  }
  return out;
}

bool AccountSasDeletesTables(const QueryParams& q) {
  return Get(q, "srt").find('c') != std::string_view::npos &&
         Get(q, "sp").find('d') != std::string_view::npos;
}

bool AccountSasCreatesTables(const QueryParams& q) {
  return Get(q, "srt").find('c') != std::string_view::npos &&
         Get(q, "sp").find_first_of("cw") != std::string_view::npos;
}

std::string ServiceSasStringToSign(const QueryParams& q, std::string_view account) {
  std::string table(Get(q, "tn"));
  std::transform(table.begin(), table.end(), table.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string s;
  for (std::string_view part : {Get(q, "sp"), Get(q, "st"), Get(q, "se")}) s.append(part).append("\n");
  s.append("/table/").append(account).append("/").append(table).append("\n");
  for (std::string_view part : {Get(q, "si"), Get(q, "sip"), Get(q, "spr"), Get(q, "sv"), Get(q, "spk"),
                                Get(q, "srk"), Get(q, "epk")}) {
    s.append(part).append("\n");
  }
  s.append(Get(q, "erk"));
  return s;
}

std::string AccountSasStringToSign(const QueryParams& q, std::string_view account, bool with_ses) {
  std::string s(account);
  s += "\n";
  for (std::string_view key : {"sp", "ss", "srt", "st", "se", "sip", "spr", "sv"}) s.append(Get(q, key)).append("\n");
  if (with_ses) s.append(Get(q, "ses")).append("\n");
  return s;
}

Result<token::Token> VerifySas(const QueryParams& q, std::string_view account,
                               const std::vector<RestAccount>& accounts, int64_t now_ticks, bool* list_tables) {
  if (list_tables != nullptr) *list_tables = false;
  const RestAccount* acct = FindAccount(accounts, account);
  if (acct == nullptr) return SasFailed("unknown account '" + std::string(account) + "'");
  const std::string_view sig = Get(q, "sig");
  const bool service = q.count("tn") != 0;
  if (!service && q.count("ss") == 0)
    return SasFailed("a SAS needs tn (a table SAS) or ss (an account SAS)");
  if (!Get(q, "si").empty())
    return SasFailed("stored access policies (si) are not supported by the REST gateway");
  if (!Get(q, "sip").empty())
    return SasFailed("IP ranges (sip) are not supported by the REST gateway");
  bool match = false;
  auto check = [&](const std::string& to_sign) {
    const std::string expected = HmacSha256Base64(acct->key, to_sign);
    if (expected.size() == sig.size() && sodium_memcmp(expected.data(), sig.data(), sig.size()) == 0) match = true;
  };
  if (service) {
    check(ServiceSasStringToSign(q, account));
  } else {
    check(AccountSasStringToSign(q, account, true));
    if (!match) check(AccountSasStringToSign(q, account, false));
  }
  if (!match) return SasFailed("the signature does not match");

  token::Token t;
  t.key_id = "sas";
  t.spec.tenant = std::string(account);  // quotas and per-tenant metrics per account
  t.spec.identity = std::string(account) + ":sas";
  if (Get(q, "se").empty()) return SasFailed("se (the expiry) is required");
  auto expiry = SasTime(Get(q, "se"), "se");
  if (!expiry.ok()) return expiry.status();
  t.spec.expiry = *expiry;
  const token::TimePoint now(std::chrono::seconds((now_ticks - kUnixEpochTicks) / kTicksPerSecond));
  if (now >= *expiry) return SasFailed("the SAS has expired");
  if (!Get(q, "st").empty()) {
    auto start = SasTime(Get(q, "st"), "st");
    if (!start.ok()) return start.status();
    // The service allows a few minutes of clock skew; so does this.
    if (now + std::chrono::minutes(5) < *start) return SasFailed("the SAS is not valid yet");
    t.spec.start = *start;
  }
  token::Permissions perms = 0;
  const std::string_view sp = Get(q, "sp");
  // Required by the service (a stored policy, si, could supply it; those
  // are refused above). Without it the SAS would authenticate and permit
  // nothing, which hides a client's mistake (the JavaScript SDK drops
  // permission names it does not know, and can send none).
  if (sp.empty()) return SasFailed("sp (the permissions) is required");
  if (service) {
    t.spec.table = std::string(Get(q, "tn"));
    for (char c : sp) {
      switch (c) {
        case 'r': perms |= static_cast<uint8_t>(token::Permission::kRead); break;
        case 'a': perms |= static_cast<uint8_t>(token::Permission::kAdd); break;
        case 'u': perms |= static_cast<uint8_t>(token::Permission::kUpdate); break;
        case 'd': perms |= static_cast<uint8_t>(token::Permission::kDelete); break;
        default:
          return SasFailed(std::string("unknown permission '") + c + "' in sp");
      }
    }
    // A RowKey bound is within a PartitionKey (the range runs from (spk,
    // srk) to (epk, erk)); alone it would bound nothing, and the SAS would
    // grant the whole table. The service refuses it, as the token codec does.
    if (q.count("srk") && !q.count("spk")) return SasFailed("srk (startrk) needs spk (startpk)");
    if (q.count("erk") && !q.count("epk")) return SasFailed("erk (endrk) needs epk (endpk)");
    if (q.count("spk")) t.spec.start_pk = std::string(Get(q, "spk"));
    if (q.count("srk")) t.spec.start_rk = std::string(Get(q, "srk"));
    if (q.count("epk")) t.spec.end_pk = std::string(Get(q, "epk"));
    if (q.count("erk")) t.spec.end_rk = std::string(Get(q, "erk"));
  } else {
    if (Get(q, "ss").find('t') == std::string_view::npos) {
      return Status(Code::kAuthorizationPermissionMismatch,
                    "This request is not authorized to perform this operation using this permission. (the account "
                    "SAS does not include the table service: ss needs t)");
    }
    t.spec.table_is_prefix = true;
    const bool container = Get(q, "srt").find('c') != std::string_view::npos;
    const bool objects = Get(q, "srt").find('o') != std::string_view::npos;
    for (char c : sp) {
      if (objects) {
        switch (c) {
          case 'r': perms |= static_cast<uint8_t>(token::Permission::kRead); break;
          case 'a': perms |= static_cast<uint8_t>(token::Permission::kAdd); break;
          case 'u': case 'p': perms |= static_cast<uint8_t>(token::Permission::kUpdate); break;
          case 'w':
            perms |= static_cast<uint8_t>(token::Permission::kAdd) | static_cast<uint8_t>(token::Permission::kUpdate);
            break;
          case 'd': perms |= static_cast<uint8_t>(token::Permission::kDelete); break;
          default: break;  // l, c, x, t, f, i: not for entities
        }
      }
      if (container && (c == 'c' || c == 'w' || c == 'd')) perms |= static_cast<uint8_t>(token::Permission::kAdmin);
      if (container && c == 'l' && list_tables != nullptr) *list_tables = true;
    }
  }
  t.spec.permissions = perms;
  return t;
}

}  // namespace sidetable::sidecar::rest
