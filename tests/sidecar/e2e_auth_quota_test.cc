// Tenant quotas (auth.quotas) on a real sidecar: a tenant flooding past its
// quota is answered ServerBusy, and another tenant's latency stays within a
// bound (docs/security.md, "Tenants and quotas").
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>

#include "tests/sidecar/e2e_auth_fixture.h"

namespace sidetable::testing {
namespace {

class QuotaTest : public AuthSidecarTest {
 protected:
  std::string ExtraAuthConfig() override {
    return "  quotas:\n    tenants:\n      noisy: {requests_per_second: 200, max_inflight: 8}\n";
  }

  // p99 of `n` sequential Gets by `c`, in microseconds.
  static uint64_t GetP99(client::Client& c, int n, uint64_t* errors) {
    std::vector<uint64_t> us;
    for (int i = 0; i < n; i++) {
      const auto t0 = std::chrono::steady_clock::now();
      auto r = c.Get("orders", "q", "r");
      us.push_back(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0).count());
      if (!r.ok()) ++*errors;
    }
    std::sort(us.begin(), us.end());
    return us[us.size() * 99 / 100];
  }

  struct Flood {
    std::atomic<uint64_t> busy{0}, done{0}, other{0};
  };
  // Two connections of tenant 'noisy', 32 writes in flight each, while
  // `measure` runs; stopped and drained before returning.
  template <typename F>
  void WhileNoisyFloods(const std::string& token, Flood* f, F measure) {
    std::atomic<bool> stop{false};
    std::vector<std::thread> flood;
    for (int t = 0; t < 2; t++) {
      flood.emplace_back([&, t] {
        auto c = Connect(token);
        int inflight = 0;
        uint64_t seq = 0;
        while (!stop.load()) {
          while (inflight < 32) {
            inflight++;
            Batch b("orders");
            b.Add(Operation{OpKind::kInsertOrReplace,
                            Row("n" + std::to_string(t), std::to_string(seq++ % 500))});
            c->SendWrite(b, [&](Result<WriteResult> r) {
              inflight--;
              if (r.ok())
                f->done++;
              else if (r.status().code() == Code::kServerBusy)
                f->busy++;
              else
                f->other++;
            });
          }
          c->Poll(std::chrono::milliseconds(1));
        }
        c->Drain();
      });
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the flood is running
    measure();
    stop = true;
    for (auto& t : flood) t.join();
  }
};

// The bound (documented in docs/security.md): while another tenant floods,
// the quiet tenant's p99 stays under 3 x its p99 alone + 5 ms. A p99 of 500
// Gets on two shared cores moves with whatever else runs (it failed once
// under the whole suite beside two compilers, and passed alone): the bound
// must hold in one of three measurements, each of "alone" then "during".
// The quota itself is checked by the counts: without it (checked, session
// 45) 'noisy' got no ServerBusy and the per-tenant metrics stayed empty,
// while the quiet p99 rose from 0.17 to 2.0 ms, still inside this bound;
// the bound catches a quiet tenant starved behind the flood, not a missing
// quota.
TEST_F(QuotaTest, OneTenantFloodingDoesNotRaiseAnothersP99) {
  ASSERT_TRUE(admin_->CreateTable("orders").ok());
  ASSERT_TRUE(admin_->Insert("orders", Row("q", "r")).ok());
  auto quiet = Connect(Issue(Spec("orders", false, "r", "q", "quiet")));
  const std::string noisy_token = Issue(Spec("orders", false, "rau", "n", "noisy"));
  uint64_t quiet_errors = 0;
  GetP99(*quiet, 100, &quiet_errors);  // warm up
  Flood flood;
  bool within = false;
  std::string seen;
  for (int attempt = 1; attempt <= 3 && !within; attempt++) {
    const uint64_t alone = GetP99(*quiet, 500, &quiet_errors);
    uint64_t during = 0;
    WhileNoisyFloods(noisy_token, &flood, [&] { during = GetP99(*quiet, 500, &quiet_errors); });
    std::printf(
        "quiet tenant p99: %.2f ms alone, %.2f ms while 'noisy' floods (noisy so far: %llu done, "
        "%llu ServerBusy)\n",
        alone / 1e3, during / 1e3, static_cast<unsigned long long>(flood.done.load()),
        static_cast<unsigned long long>(flood.busy.load()));
    within = during <= 3 * alone + 5000;
    seen += " " + std::to_string(during) + " us vs " + std::to_string(alone) + " us alone;";
  }
  EXPECT_EQ(quiet_errors, 0u);
  EXPECT_EQ(flood.other.load(), 0u);
  EXPECT_GT(flood.busy.load(), 0u) << "the flood was never over its quota";
  EXPECT_TRUE(within) << "quiet p99 over 3 x alone + 5 ms in all three measurements:" << seen;

  // /metrics counts by tenant: the 503s went to noisy only.
  auto colon = server_->http().rfind(':');
  httplib::Client http(server_->http().substr(0, colon), std::stoi(server_->http().substr(colon + 1)));
  auto metrics = http.Get("/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_NE(metrics->body.find("sidetable_tenant_busy_total{tenant=\"noisy\"} "), std::string::npos);
  EXPECT_NE(metrics->body.find("sidetable_tenant_busy_total{tenant=\"quiet\"} 0"), std::string::npos) << metrics->body;
  EXPECT_NE(metrics->body.find("sidetable_tenant_requests_total{tenant=\"quiet\"} "), std::string::npos);
  EXPECT_NE(metrics->body.find("sidetable_server_busy_total{reason=\"tenant_quota\"}"), std::string::npos);

  // The warning names the tenant, and once the flood is over an idle tick
  // logs what it counted after its last warning (session 42: before, the
  // tenant was not named and the end of a burst was never logged).
  const std::string log = server_->Log();
  EXPECT_NE(log.find("answering ServerBusy (tenant_quota, tenant 'noisy';"), std::string::npos)
      << log;
  bool ended = false;
  for (int i = 0; i < 60 && !ended; i++) {  // at most 3 s
    ended = server_->Log().find("more times after the last warning") != std::string::npos;
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(ended) << server_->Log();
}

}  // namespace
}  // namespace sidetable::testing
