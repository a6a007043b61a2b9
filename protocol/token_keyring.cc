// Signing and verifying tokens (HMAC-SHA256, libsodium), the keyring, and
// key files.
#include <sodium.h>

#include <algorithm>
#include <mutex>

#include "protocol/token.h"

#include "protocol/key_file.h"

namespace sidetable::token {
namespace {

// Domain separation: a sidetable token's MAC can never be mistaken for an
// HMAC the same key computes for anything else.
constexpr std::string_view kSigningPrefix = "sidetable-token\n";

void InitSodium() {
  // sodium_init is idempotent and thread-safe; -1 means no usable entropy
  // source, which HMAC does not need.
  static std::once_flag once;
  std::call_once(once, [] {
    if (sodium_init() < 0) return;
  });
}

std::string Mac(std::string_view key, std::string_view canonical) {
  InitSodium();
  // The streaming form takes a key of any length (HMAC hashes a long one),
  // so keys longer than 32 bytes give the standard HMAC that Python's hmac
  // module computes too.
  crypto_auth_hmacsha256_state state;
  crypto_auth_hmacsha256_init(&state, reinterpret_cast<const unsigned char*>(key.data()), key.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(kSigningPrefix.data()),
                                kSigningPrefix.size());
  crypto_auth_hmacsha256_update(&state, reinterpret_cast<const unsigned char*>(canonical.data()),
                                canonical.size());
  unsigned char out[crypto_auth_hmacsha256_BYTES];
  crypto_auth_hmacsha256_final(&state, out);
  sodium_memzero(&state, sizeof state);
  return std::string(reinterpret_cast<const char*>(out), sizeof out);
}

Status Unauthenticated(std::string message) { return Status(Code::kAuthenticationFailed, std::move(message)); }

}  // namespace

Result<std::string> IssueToken(const TokenSpec& spec, std::string_view key_id, std::string_view key) {
  if (key.size() < kMinKeyBytes) return Status(Code::kInvalidInput, "token: a signing key needs at least 32 bytes");
  std::string text = CanonicalString(key_id, spec);
  std::string mac = Mac(key, text);
  char sig[64];
  sodium_bin2base64(sig, sizeof sig, reinterpret_cast<const unsigned char*>(mac.data()), mac.size(),
                    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
  text += "&sig=";
  text += sig;
  // The one validator: what ParseToken refuses is never issued.
  Result<Token> parsed = ParseToken(text);
  if (!parsed.ok()) return parsed.status();
  return text;
}

Status Keyring::Add(std::string key_id, std::string key) {
  if (keys_.size() >= kMaxKeys) {
    return Status(Code::kInvalidInput, "keyring holds two keys at most: remove the old one first");
  }
  if (key_id.empty() || key_id.size() > kMaxLabelLength ||
      !std::all_of(key_id.begin(), key_id.end(), [](unsigned char c) {
        return std::isalnum(c) || c == '-' || c == '.' || c == '_';
      })) {
    return Status(Code::kInvalidInput, "key id must be 1-64 of [A-Za-z0-9._-]");
  }
  for (const Key& k : keys_) {
    if (k.id == key_id) return Status(Code::kInvalidInput, "key id '" + key_id + "' is already in the keyring");
  }
  if (key.size() < kMinKeyBytes) return Status(Code::kInvalidInput, "a signing key needs at least 32 bytes");
  keys_.push_back({std::move(key_id), std::move(key)});
  return Status::OK();
}

bool Keyring::Remove(std::string_view key_id) {
  auto it = std::find_if(keys_.begin(), keys_.end(), [&](const Key& k) { return k.id == key_id; });
  if (it == keys_.end()) return false;
  sodium_memzero(it->bytes.data(), it->bytes.size());
  keys_.erase(it);
  return true;
}

Status Keyring::Verify(const Token& token, TimePoint now) const {
  auto it = std::find_if(keys_.begin(), keys_.end(), [&](const Key& k) { return k.id == token.key_id; });
  // The same answer a client gets for a bad signature would hide a rotation
  // mistake from the operator; the key id is not a secret.
  if (it == keys_.end()) return Unauthenticated("token signed with unknown key id '" + token.key_id + "'");
  std::string mac = Mac(it->bytes, CanonicalString(token.key_id, token.spec));
  if (token.signature.size() != mac.size() ||
      sodium_memcmp(token.signature.data(), mac.data(), mac.size()) != 0) {
    return Unauthenticated("token signature does not match");
  }
  if (!token.spec.policy_id.empty() && !token.policy) {
    return Unauthenticated("token names stored access policy '" + token.spec.policy_id +
                           "', which was not resolved against the table's policies");
  }
  std::optional<TimePoint> start = EffectiveStart(token), expiry = EffectiveExpiry(token);
  if (!expiry) return Unauthenticated("token has no expiry");
  if (now >= *expiry) return Unauthenticated("token expired at " + FormatTime(*expiry));
  if (start && now < *start) return Unauthenticated("token is not valid before " + FormatTime(*start));
  return Status::OK();
}

Result<std::string> DecodeKey(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  bool url = text.find_first_of("-_") != std::string_view::npos;
  std::string raw(text.size(), '\0');
  size_t len = 0;
  // The padded variants accept unpadded input too only in newer libsodium;
  // strip '=' and decode with the no-padding variant in both alphabets.
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  int variant = url ? sodium_base64_VARIANT_URLSAFE_NO_PADDING : sodium_base64_VARIANT_ORIGINAL_NO_PADDING;
  if (text.empty() || sodium_base642bin(reinterpret_cast<unsigned char*>(raw.data()), raw.size(), text.data(),
                                        text.size(), nullptr, &len, nullptr, variant) != 0) {
    return Status(Code::kInvalidInput, "key must be base64 (e.g. head -c 32 /dev/urandom | base64)");
  }
  raw.resize(len);
  if (raw.size() < kMinKeyBytes) {
    return Status(Code::kInvalidInput,
                  "key is " + std::to_string(raw.size()) + " bytes; at least 32 are needed");
  }
  return raw;
}

Result<std::string> LoadKeyFile(const std::string& path) {
  Result<std::string> read = keyfile::Read(path, /*owner_only=*/true, 4096);
  if (!read.ok()) return read.status();
  std::string text = std::move(read).value();
  Result<std::string> key = DecodeKey(text);
  sodium_memzero(text.data(), text.size());
  if (!key.ok()) return Status(Code::kInvalidInput, "key file " + path + ": " + key.status().message());
  return key;
}

}  // namespace sidetable::token
