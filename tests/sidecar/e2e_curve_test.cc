// ZeroMQ CURVE and the listener policy through the real binaries
// (docs/security.md, "Transport"): an allowed client key works; an unknown
// key, a plain client and a client expecting another server key are refused
// at the handshake while the sidecar keeps serving; the allow-list reloads
// when its file changes; `sidetable-cli curve keygen` and the CLI's key
// flags; non-loopback listeners and HTTP refused without CURVE and tokens,
// accepted with `security.insecure: true` / `http_public: true` (bound on
// 0.0.0.0, talked to over 127.0.0.1 only). Every wait is bounded.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <thread>

#include "client/client.h"
#include "client/curve.h"
#include "testing/child_process.h"
#include "testing/sidecar_process.h"
#include "testing/temp_dir.h"
#include "testing/text.h"

namespace sidetable {
namespace {

using client::Client;
using client::ClientOptions;
using client::CurveClientKeys;
namespace ck = client::curve_keys;

ck::KeyPair NewPair() { return ck::GenerateKeyPair().value(); }

class CurveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_keys_ = NewPair();
    allowed_ = NewPair();
    stranger_ = NewPair();
    ASSERT_TRUE(ck::WriteKeyPair(dir_.Sub("server"), server_keys_).ok());
    WriteClients(allowed_.public_key + " app\n");
    std::ofstream(dir_.Sub("sidetable.yaml"))
        << "security:\n  curve_secret_key_file: " << dir_.Sub("server.key")
        << "\n  curve_clients_file: " << dir_.Sub("clients") << "\n";
    sidecar_ = std::make_unique<testing::SidecarProcess>(
        SIDETABLE_BIN, dir_.Sub("data"), std::vector<std::string>{"--config", dir_.Sub("sidetable.yaml")});
    ASSERT_TRUE(sidecar_->Start()) << sidecar_->Log();
  }

  void WriteClients(const std::string& text) {
    // Written aside and renamed: the sidecar never reads half a file.
    std::ofstream(dir_.Sub("clients.tmp")) << text;
    std::rename(dir_.Sub("clients.tmp").c_str(), dir_.Sub("clients").c_str());
  }

  std::unique_ptr<Client> Connect(const CurveClientKeys& keys, int timeout_ms = 3000, int attempts = 3) {
    ClientOptions o;
    o.endpoint = sidecar_->endpoint();
    o.timeout = std::chrono::milliseconds(timeout_ms);
    o.max_attempts = attempts;
    o.curve = keys;
    return Client::Connect(o).value();
  }
  CurveClientKeys KeysOf(const ck::KeyPair& own) const {
    return CurveClientKeys{server_keys_.public_key, own.public_key, own.secret_key};
  }
  // A Ping that must go unanswered, quickly: the refused handshake. With
  // retries: a retry after the refusal has no connection to queue on, and
  // used to block the client for ever.
  // `why`: what the client's error must say of the cause (its connection's
  // events), "" to skip.
  void ExpectRefused(const CurveClientKeys& keys, const char* what, const std::string& why = "") {
    const auto start = std::chrono::steady_clock::now();
    auto c = Connect(keys, /*timeout_ms=*/300, /*attempts=*/3);
    Result<client::ServerInfo> info = c->Ping();
    EXPECT_EQ(info.status().code(), Code::kNoReply) << what << ": " << info.status().ToString();
    EXPECT_TRUE(testing::Contains(info.status().message(), why))
        << what << ": " << info.status().ToString();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(3)) << what;
  }

  testing::TempDir dir_;
  ck::KeyPair server_keys_, allowed_, stranger_;
  std::unique_ptr<testing::SidecarProcess> sidecar_;
};

TEST_F(CurveTest, AnAllowedKeyWorksAndEveryOtherClientIsRefusedWhileServingGoesOn) {
  auto good = Connect(KeysOf(allowed_));
  ASSERT_TRUE(good->Ping().ok());
  ASSERT_TRUE(good->CreateTable("Secrets").ok());
  Entity e;
  e.partition_key = "p";
  e.row_key = "r";
  e.Set("V", Value::Int32(7));
  ASSERT_TRUE(good->Insert("Secrets", e).ok());

  ExpectRefused(KeysOf(stranger_), "a key not on the allow-list",
                "the sidecar refused this client's CURVE key at the handshake");
  // Closed in the handshake or refused with a protocol error, by timing:
  // both say the sidecar requires CURVE.
  ExpectRefused(CurveClientKeys{}, "a plain (NULL mechanism) client", "require");
  ExpectRefused(CurveClientKeys{stranger_.public_key, allowed_.public_key, allowed_.secret_key},
                "an allowed key expecting another server key", "server key");

  // The sidecar is still up and serving the allowed client, on the same and on a new connection.
  Result<Entity> got = good->Get("Secrets", "p", "r");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_NE(got->Find("V"), nullptr);
  EXPECT_EQ(got->Find("V")->as_int32(), 7);
  EXPECT_TRUE(Connect(KeysOf(allowed_))->Ping().ok());
  EXPECT_TRUE(testing::Contains(sidecar_->Log(), "refused a CURVE handshake")) << sidecar_->Log();
  // Counted in /metrics (the plain client fails before the allow-list is asked).
  const std::string& http = sidecar_->http();
  httplib::Client metrics(http.substr(0, http.rfind(':')), std::stoi(http.substr(http.rfind(':') + 1)));
  auto page = metrics.Get("/metrics");
  ASSERT_TRUE(page);
  auto counter = [&](const std::string& result) -> long {
    const std::string name = "sidetable_curve_handshakes_total{result=\"" + result + "\"} ";
    const size_t at = page->body.find(name);
    return at == std::string::npos ? -1 : std::atol(page->body.c_str() + at + name.size());
  };
  // The stranger at least once (ZeroMQ reconnects and asks again); the
  // plain client and the wrong server key fail before the allow-list.
  EXPECT_GE(counter("refused"), 1) << page->body;
  EXPECT_GE(counter("allowed"), 2) << page->body;
  EXPECT_TRUE(testing::Contains(sidecar_->Log(), stranger_.public_key)) << "the refused key is logged";
  EXPECT_TRUE(testing::Contains(sidecar_->Log(), "CURVE on every listener: server public key " +
                                                     server_keys_.public_key));
}

// Refused handshakes are warned about once a second at most; the end of a
// burst is logged once it is a second old, not only with the next burst
// (before session 43 the refusals after a burst's first warning were never
// logged until another refusal came).
TEST_F(CurveTest, TheEndOfABurstOfRefusedHandshakesIsLogged) {
  // Four strangers at once: their refusals fall within one second, so at
  // most one of them is warned about when it happens.
  std::vector<std::thread> strangers;
  for (int i = 0; i < 4; i++) {
    strangers.emplace_back([this] {
      auto c = Connect(KeysOf(stranger_), /*timeout_ms=*/300, /*attempts=*/1);
      (void)c->Ping();
    });
  }
  for (auto& t : strangers) t.join();
  bool logged = false;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
       !logged && std::chrono::steady_clock::now() < until;) {
    logged = testing::Contains(sidecar_->Log(), "more handshakes after the last warning");
    if (!logged) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(logged) << sidecar_->Log();
}

TEST_F(CurveTest, TheAllowListIsReadAgainWhenItsFileChanges) {
  ExpectRefused(KeysOf(stranger_), "before it is allowed");
  WriteClients(allowed_.public_key + " app\n" + stranger_.public_key + " newcomer\n");
  // Checked every second: a bounded wait (5 s) for the new list.
  auto until = [](const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline) {
      if (done()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  };
  const bool allowed = until([&] { return Connect(KeysOf(stranger_), 300, 1)->Ping().ok(); });
  EXPECT_TRUE(allowed) << sidecar_->Log();
  EXPECT_TRUE(testing::Contains(sidecar_->Log(), "2 client keys allowed")) << sidecar_->Log();

  // A list that does not read keeps the previous one in force.
  WriteClients("garbage\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_TRUE(Connect(KeysOf(stranger_))->Ping().ok());
  EXPECT_TRUE(testing::Contains(sidecar_->Log(), "does not read")) << sidecar_->Log();

  WriteClients(allowed_.public_key + "\n");
  const bool refused =
      until([&] { return Connect(KeysOf(stranger_), 300, 1)->Ping().status().code() == Code::kNoReply; });
  EXPECT_TRUE(refused) << "a removed key is refused on its next connection";
  EXPECT_TRUE(Connect(KeysOf(allowed_))->Ping().ok());
}

struct CliRun {
  int exit_code = -1;
  std::string output;
};

CliRun RunCli(const testing::TempDir& dir, std::vector<std::string> args) {
  static int n = 0;
  const std::string log = dir.Sub("cli" + std::to_string(n++) + ".log");
  args.insert(args.begin(), SIDETABLE_CLI);
  pid_t pid = testing::SpawnLogged(args, log, /*append=*/false);
  CliRun r;
  r.exit_code = testing::SignalAndWait(&pid, 0, 30);
  r.output = testing::ReadWholeFile(log);
  return r;
}

TEST_F(CurveTest, TheCliMakesKeyPairsAndConnectsWithThem) {
  CliRun keygen = RunCli(dir_, {"curve", "keygen", "--out", dir_.Sub("cli")});
  ASSERT_EQ(keygen.exit_code, 0) << keygen.output;
  struct stat st;
  ASSERT_EQ(::stat(dir_.Sub("cli.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  const std::string pub = ck::LoadPublicKeyFile(dir_.Sub("cli.pub")).value();
  EXPECT_TRUE(testing::Contains(keygen.output, pub)) << "prints the public key";
  CliRun again = RunCli(dir_, {"curve", "keygen", "--out", dir_.Sub("cli")});
  EXPECT_EQ(again.exit_code, 2);
  EXPECT_TRUE(testing::Contains(again.output, "already exists")) << again.output;

  const std::vector<std::string> curve = {"--endpoint", sidecar_->endpoint(), "--timeout-ms", "500", "--retries",
                                          "0", "--curve-server-key", dir_.Sub("server.pub"), "--curve-key",
                                          dir_.Sub("cli.key")};
  auto with = [&](std::vector<std::string> tail) {
    std::vector<std::string> args = curve;
    args.insert(args.end(), tail.begin(), tail.end());
    return args;
  };
  CliRun refused = RunCli(dir_, with({"ping"}));
  EXPECT_EQ(refused.exit_code, 3) << "not yet allowed: " << refused.output;
  WriteClients(allowed_.public_key + "\n" + pub + " cli\n");
  CliRun ping;
  for (int i = 0; i < 10 && ping.exit_code != 0; i++) ping = RunCli(dir_, with({"ping"}));
  EXPECT_EQ(ping.exit_code, 0) << ping.output;

  CliRun plain = RunCli(dir_, {"--endpoint", sidecar_->endpoint(), "--timeout-ms", "500", "--retries", "0", "ping"});
  EXPECT_EQ(plain.exit_code, 3) << plain.output;
  ::chmod(dir_.Sub("cli.key").c_str(), 0644);
  CliRun open = RunCli(dir_, with({"ping"}));
  EXPECT_EQ(open.exit_code, 2) << open.output;
  EXPECT_TRUE(testing::Contains(open.output, "--curve-key") && testing::Contains(open.output, "group or others"))
      << open.output;
}

// ---- the listener policy, through the binary ---------------------------------

struct Started {
  pid_t pid = -1;
  std::string log;
  std::vector<std::string> zmq;
  std::string http;
  ~Started() { testing::SignalAndWait(&pid, SIGKILL, 10); }
};

// Starts the sidecar; when it exits first, *exit_code is its code.
void StartSidecar(const testing::TempDir& dir, const std::string& name, std::vector<std::string> args,
                  Started* s, int* exit_code) {
  const std::string ready = dir.Sub(name + ".ready");
  s->log = dir.Sub(name + ".log");
  args.insert(args.begin(), {SIDETABLE_BIN, "--data", dir.Sub(name), "--ready-file", ready, "--log-level", "info"});
  s->pid = testing::SpawnLogged(args, s->log, false);
  *exit_code = -1;
  for (int i = 0; i < 2000; i++) {  // 20 s at most
    std::ifstream in(ready);
    std::string kind, value;
    s->zmq.clear();
    bool done = false;
    while (in >> kind >> value) {
      if (kind == "zmq") s->zmq.push_back(value);
      if (kind == "http") s->http = value;
      done |= kind == "pid";
    }
    if (done) return;
    int status;
    if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
      s->pid = -1;
      *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << name << ": neither ready nor exited within 20 s";
}

std::string LocalEndpoint(const std::string& bound) {
  // tcp://0.0.0.0:PORT -> tcp://127.0.0.1:PORT: this test talks over loopback only.
  return "tcp://127.0.0.1:" + bound.substr(bound.rfind(':') + 1);
}

TEST(ListenerPolicy, NonLoopbackListenersAreRefusedWithoutCurveAndTokens) {
  testing::TempDir dir;
  Started s;
  int code = 0;
  StartSidecar(dir, "a", {"--listen", "tcp://0.0.0.0:0", "--http", "", "--kafka", "none"}, &s, &code);
  EXPECT_EQ(code, 2);
  const std::string out = testing::ReadWholeFile(s.log);
  EXPECT_TRUE(testing::Contains(out, "sidecar.listen: 'tcp://0.0.0.0:0' is not a loopback address")) << out;
  EXPECT_TRUE(testing::Contains(out, "security.insecure: true")) << out;

  Started h;
  StartSidecar(dir, "b", {"--http", "0.0.0.0:0", "--listen", "tcp://127.0.0.1:*"}, &h, &code);
  EXPECT_EQ(code, 2);
  const std::string hout = testing::ReadWholeFile(h.log);
  EXPECT_TRUE(testing::Contains(hout, "sidecar.http: '0.0.0.0:0' is not a loopback address")) << hout;

  // A CURVE key file readable by others stops the start, naming file and key.
  ck::KeyPair server = NewPair();
  ASSERT_TRUE(ck::WriteKeyPair(dir.Sub("server"), server).ok());
  ::chmod(dir.Sub("server.key").c_str(), 0644);
  std::ofstream(dir.Sub("clients")) << "";
  std::ofstream(dir.Sub("c.yaml")) << "security:\n  curve_secret_key_file: " << dir.Sub("server.key")
                                   << "\n  curve_clients_file: " << dir.Sub("clients") << "\n";
  Started k;
  StartSidecar(dir, "c", {"--config", dir.Sub("c.yaml"), "--http", ""}, &k, &code);
  EXPECT_EQ(code, 2);
  const std::string kout = testing::ReadWholeFile(k.log);
  EXPECT_TRUE(testing::Contains(kout, dir.Sub("c.yaml") + ": security.curve_secret_key_file: key file " +
                                          dir.Sub("server.key")))
      << kout;
}

TEST(ListenerPolicy, InsecureTrueOpensTheListenersAndTheReadyFileSaysWhereTheyAre) {
  testing::TempDir dir;
  std::ofstream(dir.Sub("open.yaml")) << "security:\n  insecure: true\n";
  Started s;
  int code = 0;
  StartSidecar(dir, "open",
               {"--config", dir.Sub("open.yaml"), "--listen", "tcp://0.0.0.0:0", "--http", "0.0.0.0:0", "--kafka",
                "embedded"},
               &s, &code);
  ASSERT_EQ(code, -1) << testing::ReadWholeFile(s.log);
  ASSERT_EQ(s.zmq.size(), 1u);
  EXPECT_TRUE(s.zmq[0].starts_with("tcp://0.0.0.0:")) << s.zmq[0];
  EXPECT_TRUE(s.http.starts_with("0.0.0.0:")) << "the address bound, not 127.0.0.1: " << s.http;
  ClientOptions o;
  o.endpoint = LocalEndpoint(s.zmq[0]);
  o.timeout = std::chrono::milliseconds(3000);
  EXPECT_TRUE(Client::Connect(o).value()->Ping().ok());
  httplib::Client http("127.0.0.1", std::stoi(s.http.substr(s.http.rfind(':') + 1)));
  auto health = http.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  const std::string log = testing::ReadWholeFile(s.log);
  EXPECT_TRUE(testing::Contains(log, "kafka.bootstrap: embedded is for development only")) << log;

  // http_public alone opens HTTP, not the ZeroMQ listener.
  std::ofstream(dir.Sub("http.yaml")) << "security:\n  http_public: true\n";
  Started p;
  StartSidecar(dir, "http", {"--config", dir.Sub("http.yaml"), "--listen", "tcp://127.0.0.1:*", "--http",
                             "0.0.0.0:0", "--kafka", "none"},
               &p, &code);
  ASSERT_EQ(code, -1) << testing::ReadWholeFile(p.log);
  EXPECT_TRUE(p.http.starts_with("0.0.0.0:")) << p.http;
  Started q;
  StartSidecar(dir, "httpz", {"--config", dir.Sub("http.yaml"), "--listen", "tcp://0.0.0.0:0", "--http", "",
                              "--kafka", "none"},
               &q, &code);
  EXPECT_EQ(code, 2) << testing::ReadWholeFile(q.log);
}

}  // namespace
}  // namespace sidetable
