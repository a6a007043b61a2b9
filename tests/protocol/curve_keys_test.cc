// CURVE key files (protocol/curve_keys.h): Z85 against ZeroMQ's own
// encoder and RFC 32's vector, key pairs against libzmq's derivation, and
// every refusal of a bad file naming the file.
#include "protocol/curve_keys.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <zmq.h>

#include <fstream>

#include "testing/temp_dir.h"

namespace sidetable::curve {
namespace {

bool Contains(const Status& s, const std::string& part) { return s.message().find(part) != std::string::npos; }

void Write(const std::string& path, const std::string& text, mode_t mode) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), mode);
}

TEST(CurveKeys, Z85MatchesTheRfcVectorAndLibzmq) {
  const std::string hello("\x86\x4F\xD2\x6F\xB5\x59\xF7\x5B", 8);
  EXPECT_EQ(Z85Encode(hello), "HelloWorld");
  EXPECT_EQ(Z85Decode("HelloWorld").value(), hello);
  char pub[41], sec[41];
  ASSERT_EQ(zmq_curve_keypair(pub, sec), 0);
  Result<std::string> bytes = Z85Decode(sec);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(Z85Encode(*bytes), sec);
  // Our derivation is libzmq's.
  EXPECT_EQ(PublicKeyOf(sec).value(), pub);
  EXPECT_FALSE(Z85Decode("HelloWorl").ok()) << "not a multiple of 5";
  EXPECT_FALSE(Z85Decode("Hello\"orld").ok()) << "not a Z85 character";
  EXPECT_FALSE(Z85Decode("#####").ok()) << "a group above 2^32";
  EXPECT_FALSE(IsZ85Key("HelloWorld"));
  EXPECT_TRUE(IsZ85Key(pub));
}

TEST(CurveKeys, GeneratedPairsWorkInLibzmqAndDiffer) {
  Result<KeyPair> a = GenerateKeyPair(), b = GenerateKeyPair();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE(a->secret_key, b->secret_key);
  char pub[41];
  ASSERT_EQ(zmq_curve_public(pub, a->secret_key.c_str()), 0);
  EXPECT_EQ(a->public_key, pub);
}

TEST(CurveKeys, WrittenPairsReadBackWithTheirModesAndAreNeverOverwritten) {
  testing::TempDir dir;
  KeyPair pair = GenerateKeyPair().value();
  ASSERT_TRUE(WriteKeyPair(dir.Sub("alice"), pair).ok());
  struct stat st;
  ASSERT_EQ(::stat(dir.Sub("alice.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_EQ(::stat(dir.Sub("alice.pub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  Result<KeyPair> back = LoadSecretKeyFile(dir.Sub("alice.key"));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->secret_key, pair.secret_key);
  EXPECT_EQ(back->public_key, pair.public_key);
  EXPECT_EQ(LoadPublicKeyFile(dir.Sub("alice.pub")).value(), pair.public_key);
  Status again = WriteKeyPair(dir.Sub("alice"), GenerateKeyPair().value());
  EXPECT_TRUE(Contains(again, "already exists")) << again.ToString();
  EXPECT_EQ(LoadSecretKeyFile(dir.Sub("alice.key"))->secret_key, pair.secret_key);
}

TEST(CurveKeys, BadFilesAreRefusedNamingTheFile) {
  testing::TempDir dir;
  KeyPair pair = GenerateKeyPair().value();
  const std::string missing = dir.Sub("missing.key");
  EXPECT_TRUE(Contains(LoadSecretKeyFile(missing).status(), "cannot open key file " + missing));

  const std::string open = dir.Sub("open.key");
  Write(open, pair.secret_key + "\n", 0644);
  Status s = LoadSecretKeyFile(open).status();
  EXPECT_TRUE(Contains(s, open) && Contains(s, "group or others")) << s.ToString();
  ::chmod(open.c_str(), 0620);
  EXPECT_TRUE(Contains(LoadSecretKeyFile(open).status(), "group or others"));
  ::chmod(open.c_str(), 0600);
  EXPECT_TRUE(LoadSecretKeyFile(open).ok());

  const std::string bad = dir.Sub("bad.key");
  Write(bad, "# comment\n" + pair.secret_key.substr(0, 39) + "\"\n", 0600);
  s = LoadSecretKeyFile(bad).status();
  EXPECT_TRUE(Contains(s, bad) && Contains(s, "line 2: not a Z85 key")) << s.ToString();
  EXPECT_FALSE(Contains(s, pair.secret_key.substr(0, 39))) << "a secret is never echoed";

  const std::string two = dir.Sub("two.key");
  Write(two, pair.secret_key + "\n" + pair.secret_key + "\n", 0600);
  EXPECT_TRUE(Contains(LoadSecretKeyFile(two).status(), "holds 2 keys"));
  const std::string empty = dir.Sub("empty.pub");
  Write(empty, "# nothing\n\n", 0644);
  EXPECT_TRUE(Contains(LoadPublicKeyFile(empty).status(), "holds 0 keys"));
  EXPECT_TRUE(Contains(LoadSecretKeyFile(dir.path()).status(), "not a regular file"));
}

TEST(CurveKeys, AllowListsTakeLabelsCommentsAndConcatenatedPubFiles) {
  testing::TempDir dir;
  KeyPair a = GenerateKeyPair().value(), b = GenerateKeyPair().value();
  const std::string list = dir.Sub("clients");
  Write(list, "# allowed\n\n" + a.public_key + "   app-1\r\n  " + b.public_key + "\n", 0644);
  Result<std::vector<AllowedKey>> keys = LoadAllowList(list);
  ASSERT_TRUE(keys.ok()) << keys.status().ToString();
  ASSERT_EQ(keys->size(), 2u);
  EXPECT_EQ((*keys)[0].public_key, a.public_key);
  EXPECT_EQ((*keys)[0].label, "app-1");
  EXPECT_EQ((*keys)[1].label, "");
  Write(list, a.public_key + "\nnot-a-key\n", 0644);
  EXPECT_TRUE(Contains(LoadAllowList(list).status(), "line 2: not a Z85 key"));
  Write(list, "", 0644);
  EXPECT_TRUE(LoadAllowList(list).ok() && LoadAllowList(list)->empty()) << "an empty list refuses everyone";
}

}  // namespace
}  // namespace sidetable::curve
