#include "sidecar/auth/authenticator.h"

#include "engine/limits.h"

namespace sidetable::sidecar::auth {
namespace {

Status Unauthenticated(std::string message) { return Status(Code::kAuthenticationFailed, std::move(message)); }

// Keyring::Verify's window check, for a token whose signature verified
// earlier: the window is re-read on every request.
Status CheckWindow(const token::Token& t, token::TimePoint now) {
  const auto start = token::EffectiveStart(t), expiry = token::EffectiveExpiry(t);
  if (!t.spec.policy_id.empty() && !t.policy) return Unauthenticated("token's stored access policy was not resolved");
  if (!expiry) return Unauthenticated("token has no expiry");
  if (now >= *expiry) return Unauthenticated("token expired at " + token::FormatTime(*expiry));
  if (start && now < *start) return Unauthenticated("token is not valid before " + token::FormatTime(*start));
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Authenticator>> Authenticator::Create(const AuthConfig& config,
                                                             const PolicyStore* policies) {
  std::unique_ptr<Authenticator> a(new Authenticator(policies, config.token_cache));
  for (const auto& k : config.keys) {
    auto key = token::LoadKeyFile(k.file);
    if (!key.ok()) return Status(Code::kInvalidInput, "auth.keys '" + k.id + "': " + key.status().message());
    if (a->signing_key_id_.empty()) {
      a->signing_key_id_ = k.id;
      a->signing_key_ = *key;
    }
    ST_RETURN_IF_ERROR(a->keyring_.Add(k.id, std::move(key).value()));
  }
  return a;
}

Result<std::shared_ptr<const token::Token>> Authenticator::Resolve(
    const std::shared_ptr<const token::Token>& parsed, token::TimePoint now) const {
  std::shared_ptr<const token::Token> t = parsed;
  if (!parsed->spec.policy_id.empty()) {
    // Read on every request: a policy changed or removed a moment ago
    // governs this request.
    auto resolved = token::ResolvePolicy(*parsed, policies_->Get(parsed->spec.table));
    if (!resolved.ok()) return resolved.status();
    t = std::make_shared<const token::Token>(std::move(resolved).value());
  }
  ST_RETURN_IF_ERROR(CheckWindow(*t, now));
  return t;
}

Result<std::shared_ptr<const token::Token>> Authenticator::Authenticate(std::string_view text,
                                                                        token::TimePoint now) {
  if (text.empty()) return Unauthenticated("this sidecar requires a signed access token on every request");
  {
    std::lock_guard lock(mu_);
    auto it = verified_.find(std::string(text));
    if (it != verified_.end()) {
      auto parsed = it->second;
      return Resolve(parsed, now);
    }
  }
  auto parsed = token::ParseToken(text);
  if (!parsed.ok()) return Unauthenticated("malformed token: " + parsed.status().message());
  // The identity is what the change log records as the caller.
  Status caller = ValidateCaller(parsed->spec.identity);
  if (!caller.ok()) return Unauthenticated("token identity: " + caller.message());
  auto shared = std::make_shared<const token::Token>(std::move(parsed).value());
  // Resolve the policy first (Verify needs the effective window), then the
  // signature before the window: an expired forgery is told its signature
  // is wrong, not when it expired.
  std::shared_ptr<const token::Token> resolved = shared;
  if (!shared->spec.policy_id.empty()) {
    auto r = token::ResolvePolicy(*shared, policies_->Get(shared->spec.table));
    if (!r.ok()) return r.status();
    resolved = std::make_shared<const token::Token>(std::move(r).value());
  }
  ST_RETURN_IF_ERROR(keyring_.Verify(*resolved, now));
  std::lock_guard lock(mu_);
  if (verified_.size() >= capacity_) verified_.clear();
  verified_.emplace(std::string(text), std::move(shared));
  return resolved;
}

Result<std::string> Authenticator::Sign(const token::TokenSpec& spec) const {
  if (signing_key_.empty()) return Status(Code::kInvalidInput, "no signing key configured (auth.keys)");
  return token::IssueToken(spec, signing_key_id_, signing_key_);
}

size_t Authenticator::cached() const {
  std::lock_guard lock(mu_);
  return verified_.size();
}

}  // namespace sidetable::sidecar::auth
