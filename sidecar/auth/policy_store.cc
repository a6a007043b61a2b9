#include "sidecar/auth/policy_store.h"

#include <spdlog/spdlog.h>

#include <mutex>
#include <string>
#include <vector>

#include "engine/table_name.h"
#include "protocol/wire.h"

namespace sidetable::sidecar::auth {
namespace {

constexpr std::string_view kPrefix = "auth/policies/";

}  // namespace

Result<std::unique_ptr<PolicyStore>> PolicyStore::Load(Engine* engine) {
  std::unique_ptr<PolicyStore> store(new PolicyStore(engine));
  auto settings = engine->ListSettings(kPrefix);
  if (!settings.ok()) return settings.status();
  std::vector<std::string> empty_lists;
  for (const auto& [key, value] : *settings) {
    std::vector<token::StoredPolicy> policies;
    Status s = wire::DecodePolicies(value, &policies);
    if (!s.ok()) return Status(Code::kInternal, "stored access policies of '" + key + "': " + s.message());
    if (policies.empty()) {
      empty_lists.push_back(key);
    } else {
      store->by_table_[key.substr(kPrefix.size())] = std::move(policies);
    }
  }
  // Set() no longer writes an empty list, but a directory upgraded from
  // before session 42 still holds one for every table it ever deleted, read
  // at every start: the growth that fix stopped, kept for good (found from
  // outside by session 43: 300 tables churned by an older build left 300
  // settings after any number of starts of the new one). They go at the
  // first start; one that stays (a full disk) is gone at a later one.
  if (!empty_lists.empty()) {
    if (Status s = engine->DeleteSettings(empty_lists); !s.ok()) {
      spdlog::warn("auth: could not remove {} empty stored-policy settings: {}", empty_lists.size(),
                   s.ToString());
    }
  }
  return store;
}

std::vector<token::StoredPolicy> PolicyStore::Get(std::string_view table) const {
  const std::string key = TableKey(table).str();
  std::shared_lock lock(mu_);
  auto it = by_table_.find(key);
  return it == by_table_.end() ? std::vector<token::StoredPolicy>{} : it->second;
}

Status PolicyStore::Set(std::string_view table, std::vector<token::StoredPolicy> policies) {
  ST_RETURN_IF_ERROR(token::ValidatePolicies(policies));
  const std::string key = TableKey(table).str();
  std::string encoded;
  wire::EncodePolicies(policies, &encoded);
  // Durable first, visible second, under one lock: a revoked policy is never
  // visible again once Set() returned, and a restart sees the same list.
  std::unique_lock lock(mu_);
  // An empty list is no setting at all: every DeleteTable removes a table's
  // policies, and before session 42 it left an empty list behind for every
  // table ever deleted, read again at every start.
  ST_RETURN_IF_ERROR(policies.empty() ? engine_->DeleteSettings({std::string(kPrefix) + key})
                                      : engine_->PutSetting(std::string(kPrefix) + key, encoded));
  if (policies.empty()) {
    by_table_.erase(key);
  } else {
    by_table_[key] = std::move(policies);
  }
  return Status::OK();
}

}  // namespace sidetable::sidecar::auth
