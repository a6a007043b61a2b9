// The token text: permissions, times, percent-encoding, the canonical
// string and ParseToken (docs/security.md, "Token format").
//
// One token has one spelling: keys in a fixed order, each at most once,
// values percent-encoded one way. ParseToken refuses every other spelling,
// so the canonical string of a parsed token is exactly the text it came
// from, and two texts never verify under one signature.
#include <sodium.h>

#include <array>
#include <charconv>
#include <cstdio>

#include "engine/limits.h"
#include "engine/utf8.h"
#include "protocol/token.h"

namespace sidetable::token {
namespace {

constexpr std::string_view kLetters = "raudmc";  // bit i of Permissions

Status Invalid(std::string message) { return Status(Code::kInvalidInput, "token: " + std::move(message)); }

// Unreserved characters of RFC 3986, and ':' so that times stay readable.
bool KeptAsIs(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_' || c == '~' || c == ':';
}

void AppendEncoded(std::string* out, std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (unsigned char c : value) {
    if (KeptAsIs(c)) {
      out->push_back(static_cast<char>(c));
    } else {
      out->push_back('%');
      out->push_back(kHex[c >> 4]);
      out->push_back(kHex[c & 15]);
    }
  }
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;  // upper case only: the canonical spelling
  return -1;
}

// Strict decoding: only the bytes AppendEncoded writes, so decoding and
// encoding again gives back `raw` (the single spelling).
bool Decode(std::string_view raw, std::string* out) {
  out->clear();
  for (size_t i = 0; i < raw.size(); i++) {
    unsigned char c = raw[i];
    if (c != '%') {
      if (!KeptAsIs(c)) return false;
      out->push_back(static_cast<char>(c));
      continue;
    }
    if (i + 2 >= raw.size()) return false;
    int hi = HexValue(raw[i + 1]), lo = HexValue(raw[i + 2]);
    if (hi < 0 || lo < 0) return false;
    unsigned char b = static_cast<unsigned char>(hi * 16 + lo);
    if (KeptAsIs(b)) return false;  // "%41" for "A": a second spelling
    out->push_back(static_cast<char>(b));
    i += 2;
  }
  return true;
}

bool IsLabel(std::string_view s) {
  if (s.empty() || s.size() > kMaxLabelLength) return false;
  for (unsigned char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
              c == '.' || c == '_';
    if (!ok) return false;
  }
  return true;
}

bool IsText(std::string_view s, size_t max_bytes) {
  if (s.empty() || s.size() > max_bytes || !IsValidUtf8(s)) return false;
  for (unsigned char c : s) {
    if (c < 0x20 || c == 0x7f) return false;  // no control characters in a log line or label
  }
  return true;
}

bool IsTablePrefix(std::string_view s) {
  if (s.size() > Limits::kMaxTableName) return false;
  for (unsigned char c : s) {
    if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) return false;
  }
  return true;
}

// The fields in their one order. `sig` is last and not signed.
enum Field { kV, kKid, kTn, kTp, kSpk, kSrk, kEpk, kErk, kSp, kSt, kSe, kTenant, kCaller, kSi, kSig, kFields };
constexpr std::array<std::string_view, kFields> kNames = {"v",  "kid", "tn", "tp",     "spk",    "srk", "epk", "erk",
                                                          "sp", "st",  "se", "tenant", "caller", "si",  "sig"};

void AppendField(std::string* out, Field f, std::string_view value) {
  if (!out->empty()) out->push_back('&');
  out->append(kNames[f]);
  out->push_back('=');
  AppendEncoded(out, value);
}

// Whether the key range [lower, upper] holds no key at all.
bool EmptyRange(const TokenSpec& s) {
  if (!s.start_pk || !s.end_pk) return false;
  if (*s.start_pk != *s.end_pk) return *s.start_pk > *s.end_pk;
  return s.start_rk && s.end_rk && *s.start_rk > *s.end_rk;
}

Status ValidateSpec(const TokenSpec& s) {
  if (s.table_is_prefix) {
    if (!IsTablePrefix(s.table)) return Invalid("table prefix (tp) must be letters and digits, at most 63");
  } else {
    Status st = ValidateTableName(s.table);
    if (!st.ok()) return Invalid("table (tn): " + st.message());
  }
  for (const auto* bound : {&s.start_pk, &s.start_rk, &s.end_pk, &s.end_rk}) {
    if (*bound && ((*bound)->size() > kMaxKeyBoundLength || !IsValidUtf8(**bound))) {
      return Invalid("a key bound must be UTF-8 of at most 1024 bytes");
    }
  }
  if (s.start_rk && !s.start_pk) return Invalid("srk needs spk");
  if (s.end_rk && !s.end_pk) return Invalid("erk needs epk");
  if (EmptyRange(s)) return Invalid("key range is empty (start after end)");
  if (s.permissions && (*s.permissions == 0 || (*s.permissions & ~kAllPermissions) != 0)) {
    return Invalid("permissions (sp) must be letters of raudmc");
  }
  if (s.start && s.expiry && *s.start >= *s.expiry) return Invalid("start (st) must be before expiry (se)");
  if (!IsLabel(s.tenant)) return Invalid("tenant must be 1-64 of [A-Za-z0-9._-]");
  if (!IsText(s.identity, kMaxIdentityLength)) return Invalid("caller must be UTF-8, 1-256 bytes, no control characters");
  if (!s.policy_id.empty()) {
    if (!IsText(s.policy_id, kMaxPolicyIdLength)) return Invalid("policy id (si) must be UTF-8, 1-64 bytes");
    if (s.table_is_prefix) return Invalid("a stored policy (si) belongs to one table: use tn, not tp");
  } else {
    if (!s.permissions) return Invalid("permissions (sp) are required without a stored policy (si)");
    if (!s.expiry) return Invalid("expiry (se) is required without a stored policy (si)");
  }
  return Status::OK();
}

}  // namespace

std::string PermissionString(Permissions p) {
  std::string out;
  for (size_t i = 0; i < kLetters.size(); i++) {
    if (p & (1u << i)) out.push_back(kLetters[i]);
  }
  return out;
}

Result<Permissions> ParsePermissions(std::string_view letters) {
  if (letters.empty()) return Invalid("no permissions");
  Permissions p = 0;
  for (char c : letters) {
    size_t i = kLetters.find(c);
    if (i == std::string_view::npos) return Invalid(std::string("unknown permission '") + c + "' (raudmc)");
    if (p & (1u << i)) return Invalid(std::string("permission '") + c + "' given twice");
    p |= static_cast<Permissions>(1u << i);
  }
  return p;
}

std::string FormatTime(TimePoint t) {
  auto days = std::chrono::floor<std::chrono::days>(t);
  std::chrono::year_month_day ymd(days);
  std::chrono::hh_mm_ss hms(t - days);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(ymd.year()),
                static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()),
                static_cast<int>(hms.hours().count()), static_cast<int>(hms.minutes().count()),
                static_cast<int>(hms.seconds().count()));
  return buf;
}

Result<TimePoint> ParseTime(std::string_view s) {
  // YYYY-MM-DDTHH:MM:SSZ
  auto number = [&](size_t pos, size_t len, int* out) {
    for (size_t i = pos; i < pos + len; i++) {
      if (s[i] < '0' || s[i] > '9') return false;
    }
    std::from_chars(s.data() + pos, s.data() + pos + len, *out);
    return true;
  };
  int y, mo, d, h, mi, sec;
  if (s.size() != 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
      s[19] != 'Z' || !number(0, 4, &y) || !number(5, 2, &mo) || !number(8, 2, &d) || !number(11, 2, &h) ||
      !number(14, 2, &mi) || !number(17, 2, &sec)) {
    return Invalid("time must be YYYY-MM-DDTHH:MM:SSZ (UTC): " + std::string(s.substr(0, 40)));
  }
  std::chrono::year_month_day ymd{std::chrono::year(y), std::chrono::month(mo), std::chrono::day(d)};
  if (y < 1970 || !ymd.ok() || h > 23 || mi > 59 || sec > 59) {
    return Invalid("no such time: " + std::string(s));
  }
  return TimePoint(std::chrono::sys_days(ymd)) + std::chrono::hours(h) + std::chrono::minutes(mi) +
         std::chrono::seconds(sec);
}

std::string CanonicalString(std::string_view key_id, const TokenSpec& s) {
  std::string out;
  AppendField(&out, kV, "1");
  AppendField(&out, kKid, key_id);
  AppendField(&out, s.table_is_prefix ? kTp : kTn, s.table);
  if (s.start_pk) AppendField(&out, kSpk, *s.start_pk);
  if (s.start_rk) AppendField(&out, kSrk, *s.start_rk);
  if (s.end_pk) AppendField(&out, kEpk, *s.end_pk);
  if (s.end_rk) AppendField(&out, kErk, *s.end_rk);
  if (s.permissions) AppendField(&out, kSp, PermissionString(*s.permissions));
  if (s.start) AppendField(&out, kSt, FormatTime(*s.start));
  if (s.expiry) AppendField(&out, kSe, FormatTime(*s.expiry));
  AppendField(&out, kTenant, s.tenant);
  AppendField(&out, kCaller, s.identity);
  if (!s.policy_id.empty()) AppendField(&out, kSi, s.policy_id);
  return out;
}

Result<Token> ParseToken(std::string_view text) {
  if (text.size() > kMaxTokenLength) return Invalid("longer than 8192 bytes");
  Token t;
  TokenSpec& s = t.spec;
  bool seen[kFields] = {};
  int last = -1;
  std::string value;
  size_t pos = 0;
  int field = 0;
  while (pos <= text.size()) {
    field++;
    size_t end = text.find('&', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view pair = text.substr(pos, end - pos);
    pos = end + 1;
    size_t eq = pair.find('=');
    // What is not a token is never echoed: the refusal is logged, and the
    // text may be a secret sent by mistake (a key file given as the token
    // file would put the signing key in the log).
    if (eq == std::string_view::npos) {
      return Invalid("expected key=value pairs joined by '&': field " + std::to_string(field) +
                     " has no '='");
    }
    std::string_view key = pair.substr(0, eq);
    int f = 0;
    while (f < kFields && kNames[f] != key) f++;
    if (f == kFields) {
      return Invalid("unknown key in field " + std::to_string(field) +
                     " (the keys are v, kid, tn, tp, spk, srk, epk, erk, sp, st, se, tenant, "
                     "caller, si, sig)");
    }
    if (f <= last) return Invalid("key '" + std::string(key) + "' repeated or out of order");
    if (last == kSig) return Invalid("nothing may follow sig");
    last = f;
    seen[f] = true;
    if (!Decode(pair.substr(eq + 1), &value)) return Invalid("value of '" + std::string(key) + "' is not canonically percent-encoded");
    switch (f) {
      case kV:
        if (value != "1") return Invalid("version (v) must be 1");
        break;
      case kKid:
        if (!IsLabel(value)) return Invalid("key id (kid) must be 1-64 of [A-Za-z0-9._-]");
        t.key_id = value;
        break;
      case kTn:
      case kTp:
        s.table = value;
        s.table_is_prefix = f == kTp;
        break;
      case kSpk: s.start_pk = value; break;
      case kSrk: s.start_rk = value; break;
      case kEpk: s.end_pk = value; break;
      case kErk: s.end_rk = value; break;
      case kSp: {
        Result<Permissions> p = ParsePermissions(value);
        if (!p.ok()) return p.status();
        if (PermissionString(*p) != value) return Invalid("permissions (sp) must be in the order raudmc");
        s.permissions = *p;
        break;
      }
      case kSt:
      case kSe: {
        Result<TimePoint> tp = ParseTime(value);
        if (!tp.ok()) return tp.status();
        (f == kSt ? s.start : s.expiry) = *tp;
        break;
      }
      case kTenant: s.tenant = value; break;
      case kCaller: s.identity = value; break;
      case kSi: s.policy_id = value; break;
      case kSig: {
        unsigned char raw[crypto_auth_hmacsha256_BYTES];
        size_t len = 0;
        if (value.size() != 43 ||
            sodium_base642bin(raw, sizeof raw, value.data(), value.size(), nullptr, &len, nullptr,
                              sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0 ||
            len != sizeof raw) {
          return Invalid("signature (sig) must be 43 characters of base64url (32 bytes)");
        }
        char again[64];
        sodium_bin2base64(again, sizeof again, raw, len, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
        if (value != again) return Invalid("signature (sig) is not canonical base64url");
        t.signature.assign(reinterpret_cast<const char*>(raw), len);
        break;
      }
    }
  }
  for (Field required : {kV, kKid, kTenant, kCaller, kSig}) {
    if (!seen[required]) return Invalid("missing '" + std::string(kNames[required]) + "'");
  }
  if (!seen[kTn] && !seen[kTp]) return Invalid("missing table (tn) or table prefix (tp)");
  if (seen[kTn] && seen[kTp]) return Invalid("tn and tp are exclusive");
  ST_RETURN_IF_ERROR(ValidateSpec(s));
  return t;
}

}  // namespace sidetable::token
