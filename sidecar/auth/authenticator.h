// Authenticator: a request's token text in, the verified token out
// (docs/security.md, "Enforcement").
//
// A token is parsed, resolved against its table's stored access policy (if
// it names one) and verified under the configured keys (at most two, so a
// key rotates without downtime). The signature of a token string is checked
// once: a bounded cache remembers the strings that verified (emptied whole
// when full, so a flood of distinct tokens costs memory up to the bound and
// no more). The validity window and the stored policy are checked again on
// every request, so an expired or revoked token stops working at once,
// cached or not.
//
// Thread safety: Authenticate() from any thread.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "protocol/token.h"
#include "sidecar/auth/auth_config.h"
#include "sidecar/auth/policy_store.h"

namespace sidetable::sidecar::auth {

class Authenticator {
 public:
  // Loads the key files (token::LoadKeyFile: base64, owner-only mode).
  static Result<std::unique_ptr<Authenticator>> Create(const AuthConfig& config, const PolicyStore* policies);

  // The token in force (policy resolved), or AuthenticationFailed: no
  // token, a malformed one, an unknown key, a bad signature, outside its
  // validity window, a removed policy, an identity the change log cannot
  // record; InvalidInput when the token and its policy both set a field.
  Result<std::shared_ptr<const token::Token>> Authenticate(std::string_view text, token::TimePoint now);

  size_t cached() const;

  // Signs `spec` with the signing key: the first key listed in auth.keys
  // (list the new key first while rotating). For the IssueToken operation,
  // after its delegation check (token::CheckDelegation). InvalidInput for a
  // spec token::IssueToken refuses.
  Result<std::string> Sign(const token::TokenSpec& spec) const;
  const std::string& signing_key_id() const { return signing_key_id_; }

 private:
  Authenticator(const PolicyStore* policies, size_t capacity) : policies_(policies), capacity_(capacity) {}
  Result<std::shared_ptr<const token::Token>> Resolve(const std::shared_ptr<const token::Token>& parsed,
                                                      token::TimePoint now) const;

  token::Keyring keyring_;  // not changed after Create()
  std::string signing_key_id_, signing_key_;  // auth.keys[0]
  const PolicyStore* policies_;
  const size_t capacity_;
  mutable std::mutex mu_;
  // Token text → the parsed token, its signature verified (policy not resolved).
  std::unordered_map<std::string, std::shared_ptr<const token::Token>> verified_;
};

}  // namespace sidetable::sidecar::auth
