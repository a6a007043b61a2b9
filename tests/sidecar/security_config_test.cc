// The `security:` section (sidecar/security_config.h) and the listener policy
// (sidecar/listener_policy.h): strict keys, key files refused naming the
// configuration file, the key and the key file, and which addresses need
// CURVE and tokens or an explicit `insecure: true`.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "sidecar/config.h"
#include "sidecar/listener_policy.h"
#include "testing/temp_dir.h"

namespace sidetable::sidecar {
namespace {

class SecurityConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    curve::KeyPair server = curve::GenerateKeyPair().value();
    client_ = curve::GenerateKeyPair().value();
    ASSERT_TRUE(curve::WriteKeyPair(dir_.Sub("server"), server).ok());
    std::ofstream(dir_.Sub("clients")) << client_.public_key << " app\n";
  }
  Status Load(const std::string& text, ServerConfig* c) {
    std::ofstream(config_) << text;
    return LoadConfigFile(config_, c);
  }
  std::string Curve(const std::string& extra = "") const {
    return "security:\n  curve_secret_key_file: " + dir_.Sub("server.key") +
           "\n  curve_clients_file: " + dir_.Sub("clients") + "\n" + extra;
  }
  testing::TempDir dir_;
  const std::string config_ = dir_.Sub("c.yaml");
  curve::KeyPair client_;
};

bool Has(const Status& s, const std::string& part) { return s.message().find(part) != std::string::npos; }

TEST_F(SecurityConfigTest, KeyFilesLoadWithTheConfig) {
  ServerConfig c;
  Status s = Load(Curve(), &c);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(c.security.curve());
  EXPECT_EQ(c.security.server_keys.public_key, curve::LoadPublicKeyFile(dir_.Sub("server.pub")).value());
  ASSERT_EQ(c.security.clients.size(), 1u);
  EXPECT_EQ(c.security.clients[0].public_key, client_.public_key);
  EXPECT_EQ(c.security.clients[0].label, "app");
  EXPECT_TRUE(ValidateConfig(c).ok());
}

TEST_F(SecurityConfigTest, BadKeyFilesNameTheConfigTheKeyAndTheFile) {
  ServerConfig c;
  const std::string missing = dir_.Sub("nope.key");
  Status s = Load("security:\n  curve_secret_key_file: " + missing + "\n  curve_clients_file: " + dir_.Sub("clients"), &c);
  EXPECT_TRUE(Has(s, config_ + ": security.curve_secret_key_file: cannot open key file " + missing)) << s.ToString();

  ::chmod(dir_.Sub("server.key").c_str(), 0640);
  s = Load(Curve(), &c);
  EXPECT_TRUE(Has(s, config_ + ": security.curve_secret_key_file: key file " + dir_.Sub("server.key")) &&
              Has(s, "group or others"))
      << s.ToString();
  ::chmod(dir_.Sub("server.key").c_str(), 0000);
  if (::geteuid() != 0) {  // root reads anything
    s = Load(Curve(), &c);
    EXPECT_TRUE(Has(s, "security.curve_secret_key_file: cannot open key file")) << s.ToString();
  }
  ::chmod(dir_.Sub("server.key").c_str(), 0600);

  std::ofstream(dir_.Sub("clients")) << "AAAA\n";
  s = Load(Curve(), &c);
  EXPECT_TRUE(Has(s, config_ + ": security.curve_clients_file: key file " + dir_.Sub("clients") +
                         ": line 1: not a Z85 key"))
      << s.ToString();

  s = Load("security:\n  curve_secret_key_file: " + dir_.Sub("server.key") + "\n", &c);
  EXPECT_TRUE(Has(s, "security.curve_secret_key_file: needs security.curve_clients_file")) << s.ToString();
  s = Load("security:\n  curve_clients_file: " + dir_.Sub("clients") + "\n", &c);
  EXPECT_TRUE(Has(s, "security.curve_clients_file: needs security.curve_secret_key_file")) << s.ToString();
  EXPECT_FALSE(c.security.curve()) << "a failed file leaves the configuration as it was";
}

TEST_F(SecurityConfigTest, UnknownKeysAndLooseBooleansAreRefused) {
  ServerConfig c;
  Status s = Load("security:\n  insecur: true\n", &c);
  EXPECT_TRUE(Has(s, config_ + ": security.insecur: unknown key")) << s.ToString();
  for (const char* v : {"yes", "on", "1", "True", "[true]"}) {
    s = Load(std::string("security:\n  insecure: ") + v + "\n", &c);
    EXPECT_TRUE(Has(s, config_ + ": security.insecure: must be true or false")) << v << ": " << s.ToString();
  }
  s = Load("security:\n  http_public: y\n", &c);
  EXPECT_TRUE(Has(s, "security.http_public: must be true or false")) << s.ToString();
  ASSERT_TRUE(Load("security:\n  insecure: true\n  http_public: false\n", &c).ok());
  EXPECT_TRUE(c.security.insecure);
  EXPECT_FALSE(c.security.http_public);
}

TEST(ListenerPolicy, LoopbackIsTheLocalMachineOnly) {
  for (const char* ep : {"tcp://127.0.0.1:5555", "tcp://127.0.0.1:*", "tcp://127.1.2.3:0", "tcp://localhost:5555",
                         "tcp://[::1]:5555", "tcp://lo:5555", "ipc:///tmp/x.sock", "inproc://x"}) {
    EXPECT_TRUE(IsLoopbackEndpoint(ep)) << ep;
  }
  for (const char* ep : {"tcp://0.0.0.0:5555", "tcp://*:5555", "tcp://10.0.0.7:5555", "tcp://eth0:5555",
                         "tcp://[::]:5555", "tcp://db.example.com:5555", "tcp://128.0.0.1:1"}) {
    EXPECT_FALSE(IsLoopbackEndpoint(ep)) << ep;
  }
  EXPECT_TRUE(IsLoopbackHostPort("127.0.0.1:0"));
  EXPECT_TRUE(IsLoopbackHostPort("localhost:9464"));
  EXPECT_FALSE(IsLoopbackHostPort("0.0.0.0:9464"));
  EXPECT_FALSE(IsLoopbackHostPort(":9464"));
}

TEST_F(SecurityConfigTest, NonLoopbackListenersNeedCurveAndTokensOrInsecure) {
  ServerConfig c;
  c.listen = {"tcp://127.0.0.1:5555", "tcp://0.0.0.0:5555"};
  Status s = ValidateConfig(c);
  EXPECT_TRUE(Has(s, "sidecar.listen: 'tcp://0.0.0.0:5555' is not a loopback address")) << s.ToString();
  EXPECT_TRUE(Has(s, "missing: CURVE (security.curve_secret_key_file) and tokens (auth.mode: tokens)")) << s.ToString();
  EXPECT_TRUE(Has(s, "security.insecure: true")) << s.ToString();

  c.listen = {"tcp://*:5555"};
  EXPECT_TRUE(Has(ValidateConfig(c), "'tcp://*:5555' is not a loopback address"));

  // CURVE alone is not enough while tokens are off.
  ASSERT_TRUE(Load(Curve(), &c).ok());
  c.listen = {"tcp://0.0.0.0:5555"};
  s = ValidateConfig(c);
  EXPECT_TRUE(Has(s, "missing: tokens (auth.mode: tokens)")) << s.ToString();
  EXPECT_FALSE(TokensRequired(c));
  // CURVE and tokens together open it.
  c.auth.tokens = true;
  EXPECT_TRUE(TokensRequired(c));
  EXPECT_TRUE(CheckListenerPolicy(c).ok()) << CheckListenerPolicy(c).ToString();

  ServerConfig open;
  ASSERT_TRUE(Load("sidecar:\n  listen: tcp://0.0.0.0:5555\nsecurity:\n  insecure: true\n", &open).ok());
  EXPECT_TRUE(ValidateConfig(open).ok()) << ValidateConfig(open).ToString();
}

TEST_F(SecurityConfigTest, HttpStaysOnLoopbackUnlessPublicOrInsecure) {
  ServerConfig c;
  c.http = "0.0.0.0:9464";
  Status s = ValidateConfig(c);
  EXPECT_TRUE(Has(s, "sidecar.http: '0.0.0.0:9464' is not a loopback address")) << s.ToString();
  EXPECT_TRUE(Has(s, "security.http_public: true")) << s.ToString();
  c.security.http_public = true;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.security.http_public = false;
  c.security.insecure = true;
  EXPECT_TRUE(ValidateConfig(c).ok());
  c.security.insecure = false;
  c.http = "";
  EXPECT_TRUE(ValidateConfig(c).ok()) << "off is fine";
}

TEST(ListenerPolicy, EmbeddedKafkaWithAPublicListenerIsWarnedAbout) {
  ServerConfig c;
  c.kafka.bootstrap = "embedded";
  EXPECT_EQ(EmbeddedKafkaWarning(c), "");
  c.listen = {"tcp://127.0.0.1:5555", "tcp://0.0.0.0:5555"};
  const std::string w = EmbeddedKafkaWarning(c);
  EXPECT_NE(w.find("development only"), std::string::npos) << w;
  EXPECT_NE(w.find("tcp://0.0.0.0:5555"), std::string::npos) << w;
  c.kafka.bootstrap = "kafka-1:9092";
  EXPECT_EQ(EmbeddedKafkaWarning(c), "");
}

}  // namespace
}  // namespace sidetable::sidecar
