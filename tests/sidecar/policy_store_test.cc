// The stored access policies' store (sidecar/auth/policy_store.h) on a real
// engine: what a table's removed policies leave behind.
#include "sidecar/auth/policy_store.h"

#include <gtest/gtest.h>

#include "protocol/wire.h"
#include "testing/temp_dir.h"

namespace sidetable::sidecar::auth {
namespace {

class PolicyStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen() {
    store_.reset();
    engine_.reset();
    EngineOptions o;
    o.durability = Durability::kOs;
    auto e = Engine::Open(o, dir_.Sub("db"));
    ASSERT_TRUE(e.ok()) << e.status().ToString();
    engine_ = std::move(e).value();
    auto s = PolicyStore::Load(engine_.get());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
  }
  size_t StoredSettings() {
    auto all = engine_->ListSettings("auth/policies/");
    EXPECT_TRUE(all.ok());
    return all.ok() ? all->size() : 0;
  }

  testing::TempDir dir_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<PolicyStore> store_;
};

TEST_F(PolicyStoreTest, PoliciesSurviveARestart) {
  ASSERT_TRUE(store_->Set("Orders", {token::StoredPolicy{"readers", {}, {}, {}}}).ok());
  Reopen();
  auto got = store_->Get("orders");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].id, "readers");
}

// Every DeleteTable removes the table's policies (an empty list). Until
// session 42 that stored an empty list under the table's name, policies or
// not: a setting per table ever deleted, listed again at every start
// (3,000 after 3,000 tables were created and deleted, found from outside).
TEST_F(PolicyStoreTest, RemovedPoliciesLeaveNoSettingBehind) {
  ASSERT_TRUE(store_->Set("Orders", {token::StoredPolicy{"readers", {}, {}, {}}}).ok());
  EXPECT_EQ(StoredSettings(), 1u);
  ASSERT_TRUE(store_->Set("Orders", {}).ok());
  for (int i = 0; i < 100; i++) ASSERT_TRUE(store_->Set("Scratch" + std::to_string(i), {}).ok());
  EXPECT_EQ(StoredSettings(), 0u);
  Reopen();
  EXPECT_TRUE(store_->Get("Orders").empty());
}

// A directory from before session 42 holds an empty list for every table it
// deleted; Set() writes none now, and Load removes those it finds (found
// from outside by session 43: they stayed after any number of starts).
TEST_F(PolicyStoreTest, EmptyListsAnOlderReleaseLeftAreRemovedAtLoad) {
  ASSERT_TRUE(store_->Set("Orders", {token::StoredPolicy{"readers", {}, {}, {}}}).ok());
  std::string empty;
  wire::EncodePolicies({}, &empty);
  for (int i = 0; i < 100; i++) {
    ASSERT_TRUE(engine_->PutSetting("auth/policies/scratch" + std::to_string(i), empty).ok());
  }
  EXPECT_EQ(StoredSettings(), 101u);
  Reopen();
  EXPECT_EQ(StoredSettings(), 1u);
  EXPECT_EQ(store_->Get("Orders").size(), 1u);
  EXPECT_TRUE(store_->Get("scratch0").empty());
}

}  // namespace
}  // namespace sidetable::sidecar::auth
