// PolicyStore: the stored access policies of every table (at most five per
// table, docs/security.md), kept durably in the engine's settings (the meta
// column family, under "auth/policies/<table>") and in memory, where token
// verification reads them on every request that names one.
//
// Changing or removing a policy revokes the tokens issued under it at once:
// Set() makes the new list visible as soon as it is durable, and every
// later request resolves its token against it (authenticator.h).
//
// Thread safety: Get() from any thread; Set() from any thread (serialised
// inside, so the stored and the visible lists never disagree).
#pragma once

#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.h"
#include "protocol/token.h"

namespace sidetable::sidecar::auth {

class PolicyStore {
 public:
  // Reads every table's policies from the engine.
  static Result<std::unique_ptr<PolicyStore>> Load(Engine* engine);

  std::vector<token::StoredPolicy> Get(std::string_view table) const;
  // Replaces the table's policies (an empty list removes them all).
  // InvalidInput for a list token::ValidatePolicies refuses.
  Status Set(std::string_view table, std::vector<token::StoredPolicy> policies);

 private:
  explicit PolicyStore(Engine* engine) : engine_(engine) {}
  Engine* engine_;
  mutable std::shared_mutex mu_;
  std::map<std::string, std::vector<token::StoredPolicy>> by_table_;  // by TableKey
};

}  // namespace sidetable::sidecar::auth
