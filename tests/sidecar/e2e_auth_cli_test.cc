// sidetable-cli against a sidecar with auth.mode: tokens: a command whose
// token is valid is served without a single refusal on the sidecar's side.
#include <httplib.h>
#include <sys/stat.h>

#include <fstream>

#include "testing/child_process.h"
#include "testing/text.h"
#include "tests/sidecar/e2e_auth_fixture.h"

namespace sidetable::testing {
namespace {

class CliAuthTest : public AuthSidecarTest {
 protected:
  // Runs sidetable-cli with `args` after --endpoint; its stdout and stderr
  // go to *output. Returns the exit code (-1: still running after 30 s).
  int Cli(const std::vector<std::string>& args, std::string* output) {
    std::vector<std::string> argv = {SIDETABLE_CLI, "--endpoint", server_->endpoint(), "--retries",
                                     "0"};
    argv.insert(argv.end(), args.begin(), args.end());
    const std::string log = dir_.Sub("cli" + std::to_string(runs_++) + ".log");
    pid_t pid = SpawnLogged(argv, log, /*append=*/false);
    const int code = SignalAndWait(&pid, 0, 30);
    *output = ReadWholeFile(log);
    return code;
  }

  // sidetable_errors_total{code="AuthenticationFailed"} on /metrics (0 when
  // the series is not there yet).
  long AuthenticationFailures() {
    const std::string& http = server_->http();
    const auto colon = http.rfind(':');
    httplib::Client client(http.substr(0, colon), std::stoi(http.substr(colon + 1)));
    auto res = client.Get("/metrics");
    EXPECT_TRUE(res);
    if (!res) return -1;
    const std::string series = "sidetable_errors_total{code=\"AuthenticationFailed\"} ";
    const auto at = res->body.find(series);
    return at == std::string::npos ? 0 : std::stol(res->body.substr(at + series.size()));
  }

  int runs_ = 0;
};

// Session 44: the CLI's first contact, a short Ping that says at once when
// no sidecar is there, went without the command's token. A sidecar with
// tokens refused it, so every command, however valid its token, logged
// "Ping refused: AuthenticationFailed" and counted
// sidetable_errors_total{code="AuthenticationFailed"}: the series an operator
// alerts on for credential problems rose with every script run.
TEST_F(CliAuthTest, ACommandWithAValidTokenIsRefusedNothing) {
  const std::string token = Issue(Spec("", true, "raudmc", "ops-admin", "ops"));
  const std::string token_file = dir_.Sub("ops.token");
  std::ofstream(token_file) << token << "\n";
  ::chmod(token_file.c_str(), 0600);

  std::string out;
  ASSERT_EQ(Cli({"--token", token, "create-table", "Orders"}, &out), 0) << out;
  ASSERT_EQ(Cli({"--token-file", token_file, "list-tables"}, &out), 0) << out;
  EXPECT_EQ(out, "Orders\n");
  ASSERT_EQ(Cli({"--token-file", token_file, "ping"}, &out), 0) << out;
  EXPECT_EQ(AuthenticationFailures(), 0);
  EXPECT_FALSE(Contains(server_->Log(), "refused")) << server_->Log();

  // A token the sidecar cannot verify is still refused, and counted.
  const std::string foreign = Issue(Spec("", true, "r"), "k3", kKey3);
  EXPECT_EQ(Cli({"--token", foreign, "list-tables"}, &out), 1) << out;
  EXPECT_TRUE(Contains(out, "AuthenticationFailed (403): token signed with unknown key id 'k3'"))
      << out;
  EXPECT_GT(AuthenticationFailures(), 0);
}

}  // namespace
}  // namespace sidetable::testing
